// `tileserver-ts key new [--name NAME]`: a new random API key and the `[[auth.keys]]` entry holding its hash
// (docs/access.md). The key is printed once, to hand to its user; the configuration keeps only the hash.
import { hashKey, newKey } from '../auth/keys.js';

const USAGE = `Usage:
  tileserver-ts key new [--name NAME]   print a new API key and the [[auth.keys]] entry with its SHA-256
  tileserver-ts key hash                read a key on stdin, print its SHA-256 (for a key made elsewhere)
`;

/** Runs the `key` command; answers the exit code. */
export async function runKeyCommand(argv: readonly string[], out: (s: string) => void = (s) => process.stdout.write(s), err: (s: string) => void = (s) => process.stderr.write(s)): Promise<number> {
  const [verb, ...rest] = argv;
  if (verb === undefined || verb === '--help' || verb === '-h') {
    out(USAGE);
    return verb === undefined ? 2 : 0;
  }
  if (verb === 'new') {
    let name = 'client';
    for (let i = 0; i < rest.length; i++) {
      if (rest[i] === '--name' && rest[i + 1] !== undefined) name = rest[++i];
      else if (rest[i].startsWith('--name=')) name = rest[i].slice(7);
      else {
        err(`tileserver-ts key new: unknown argument "${rest[i]}" (see tileserver-ts key --help)\n`);
        return 2;
      }
    }
    if (!/^[A-Za-z0-9_.:@-]{1,64}$/.test(name)) {
      err('tileserver-ts key new: --name takes 1 to 64 letters, digits, "_", ".", ":", "@" or "-"\n');
      return 2;
    }
    const { key, hash } = newKey();
    out(`key: ${key}\n\n# Give the key above to its user; keep only this entry (the key's SHA-256) in the configuration:\n[[auth.keys]]\nname = "${name}"\nhash = "${hash}"\nsources = ["*"]\nstyles = ["*"]\n`);
    return 0;
  }
  if (verb === 'hash') {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    const key = Buffer.concat(chunks).toString('utf8').trim();
    if (!key) {
      err('tileserver-ts key hash: no key on stdin\n');
      return 2;
    }
    out(`${hashKey(key)}\n`);
    return 0;
  }
  err(`tileserver-ts key: unknown command "${verb}" (see tileserver-ts key --help)\n`);
  return 2;
}
