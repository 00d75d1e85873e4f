// az:// sources against Azurite's blob service (Microsoft's emulator, which checks SharedKey signatures), with
// the provider proofs of helpers/storage-proofs.ts. The connection string comes from the environment
// (AZURE_STORAGE_CONNECTION_STRING) for the server under test; the wrong-credentials case names a wrong account
// key in the source itself.
import { AZURITE_ACCOUNT, startAzurite } from './helpers/object-storage.js';
import { storageProofs } from './helpers/storage-proofs.js';

storageProofs(async () => {
  const azurite = await startAzurite();
  const wrongKey = Buffer.from('not the account key at all, but base64 all the same').toString('base64');
  let proxied = '';
  return {
    scheme: 'az',
    bucket: 'tiles',
    port: azurite.port,
    put: (key, body) => azurite.put('tiles', key, body),
    keys: (endpoint) => {
      proxied = azurite.connectionString(`${endpoint}/${AZURITE_ACCOUNT}`);
      return '';
    },
    wrongKeys: (endpoint) => `endpoint = "${endpoint}/${AZURITE_ACCOUNT}"\naccount = "${AZURITE_ACCOUNT}"\naccount_key = "${wrongKey}"`,
    get env() {
      return { AZURE_STORAGE_CONNECTION_STRING: proxied };
    },
    deniedReason: /AuthorizationFailure|AuthenticationFailed|Server failed to authenticate.*HTTP 403/,
    missingReason: /BlobNotFound.*HTTP 404/,
    stop: () => azurite.stop(),
  };
});
