// Real storage servers for the object-storage tests, started on free ports and stopped by the tests:
// - s3rver's S3 server (npm `@20minutes/s3rver`, run by s3rver-main.cjs) with a random key pair: it checks the
//   SigV4 signature of every signed request against that key's secret (wrong secret: SignatureDoesNotMatch).
// - Azurite's blob service (npm `azurite`), which checks SharedKey signatures of its well-known account.
// - A TCP proxy put between the server under test and the store: stopping it is a storage outage, a delay on it
//   a slow store.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { BlobServiceClient, ContainerSASPermissions, generateBlobSASQueryParameters, StorageSharedKeyCredential } from '@azure/storage-blob';
import { freePort, ROOT } from './server.js';

// The AWS SDK's once-per-process note that its 2027 releases will need Node 22: noise here, as in the server.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

/** Resolves once something accepts TCP connections on the port. */
async function waitForPort(port: number, proc: ChildProcess, what: string, output: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${what} exited during start-up:\n${output()}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect(port, '127.0.0.1', () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port} in time:\n${output()}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function stopChild(proc: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    proc.kill('SIGTERM');
  });
}

// ---------------------------------------------------------------------------------------------------------------
// TCP proxy

export interface TcpProxy {
  port: number;
  /** `http://127.0.0.1:PORT` */
  url: string;
  /** Stops listening and cuts every connection: the store is gone. */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  /** Holds every chunk the store sends for `ms` before passing it on (0: none). */
  setDelay(ms: number): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const port = await freePort();
  let delay = 0;
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const listen = () =>
    new Promise<void>((resolve, reject) => {
      server = net.createServer((client) => {
        const upstream = net.connect(targetPort, '127.0.0.1');
        sockets.add(client).add(upstream);
        const drop = () => {
          client.destroy();
          upstream.destroy();
          sockets.delete(client);
          sockets.delete(upstream);
        };
        client.on('error', drop).on('close', drop);
        // The store closing its end is passed on after the data it sent before, delayed alike.
        upstream.on('error', drop).on('close', () => (delay > 0 ? setTimeout(drop, delay) : drop()));
        client.on('data', (chunk) => upstream.write(chunk));
        // Equal delays keep the chunks in order: timers of one duration fire first-in, first-out.
        upstream.on('data', (chunk) => {
          if (delay > 0) setTimeout(() => client.writable && client.write(chunk), delay);
          else client.write(chunk);
        });
      });
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      sockets.clear();
      if (!server) return resolve();
      server.close(() => resolve());
      server = undefined;
    });
  await listen();
  return { port, url: `http://127.0.0.1:${port}`, stop, start: listen, setDelay: (ms) => (delay = ms), close: stop };
}

// ---------------------------------------------------------------------------------------------------------------
// s3rver (S3)

export interface S3Server {
  port: number;
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** A client signed with the valid key. */
  s3: S3Client;
  put(bucket: string, key: string, body: Uint8Array): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts s3rver with `buckets` made and a key pair of its own, drawn afresh for each server. A bucket given as
 * `public:NAME` serves unsigned reads only (s3rver-main.cjs); `put` names it without the prefix. The buckets are
 * made at start-up, not with CreateBucket: s3rver checks a bucket request's signature against the path without
 * the trailing slash the AWS SDK signs (`PUT /bucket/`), so an SDK CreateBucket is refused. Object requests, the
 * only ones the server under test makes, are signed over the same path by both.
 */
export async function startS3Server(buckets: string[]): Promise<S3Server> {
  const main = path.join(ROOT, 'test/helpers/s3rver-main.cjs');
  if (!existsSync(path.join(ROOT, 'node_modules/@20minutes/s3rver/package.json'))) throw new Error('s3rver is not installed (npm devDependency @20minutes/s3rver): run npm install');
  const port = await freePort();
  const directory = mkdtempSync(path.join(os.tmpdir(), 'tsts-s3rver-'));
  const accessKeyId = `TSTS${randomBytes(8).toString('hex').toUpperCase()}`;
  const secretAccessKey = randomBytes(30).toString('base64');
  let out = '';
  const proc = spawn(process.execPath, [main, directory, String(port), accessKeyId, secretAccessKey, ...buckets], { stdio: ['ignore', 'pipe', 'pipe'] });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const endpoint = `http://127.0.0.1:${port}`;
  const stop = async () => {
    await stopChild(proc);
    rmSync(directory, { recursive: true, force: true });
  };
  try {
    await waitForPort(port, proc, 's3rver', () => out);
  } catch (err) {
    await stop();
    throw err;
  }
  const s3 = new S3Client({ endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId, secretAccessKey } });
  return {
    port,
    endpoint,
    accessKeyId,
    secretAccessKey,
    s3,
    async put(bucket, key, body) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: body }));
    },
    async stop() {
      s3.destroy();
      await stop();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Azurite (Azure Blob)

/** Azurite's well-known development account (published in Microsoft's docs; not a secret). */
export const AZURITE_ACCOUNT = 'devstoreaccount1';
export const AZURITE_KEY = 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==';

export interface AzuriteServer {
  port: number;
  /** A connection string for the blob service at `blobEndpoint` (default: Azurite itself). */
  connectionString(blobEndpoint?: string, key?: string): string;
  put(container: string, blob: string, body: Uint8Array): Promise<void>;
  /** A SAS token that may only read the container, for an hour. */
  readOnlySas(container: string): string;
  /** Lets anyone read the container's blobs without credentials. */
  makePublic(container: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startAzurite(): Promise<AzuriteServer> {
  const port = await freePort();
  const location = mkdtempSync(path.join(os.tmpdir(), 'tsts-azurite-'));
  let out = '';
  const bin = path.join(ROOT, 'node_modules/azurite/dist/src/blob/main.js');
  if (!existsSync(bin)) throw new Error('azurite is not installed (npm devDependency): run npm install');
  const proc = spawn(process.execPath, [bin, '--blobHost', '127.0.0.1', '--blobPort', String(port), '--location', location, '--silent', '--skipApiVersionCheck', '--disableProductStyleUrl', '--disableTelemetry'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const own = `http://127.0.0.1:${port}/${AZURITE_ACCOUNT}`;
  const connectionString = (blobEndpoint = own, key = AZURITE_KEY) => `DefaultEndpointsProtocol=http;AccountName=${AZURITE_ACCOUNT};AccountKey=${key};BlobEndpoint=${blobEndpoint};`;
  try {
    await waitForPort(port, proc, 'azurite', () => out);
  } catch (err) {
    await stopChild(proc);
    rmSync(location, { recursive: true, force: true });
    throw err;
  }
  const service = BlobServiceClient.fromConnectionString(connectionString());
  const made = new Set<string>();
  return {
    port,
    connectionString,
    async put(container, blob, body) {
      const c = service.getContainerClient(container);
      if (!made.has(container)) {
        await c.createIfNotExists();
        made.add(container);
      }
      await c.getBlockBlobClient(blob).uploadData(body);
    },
    readOnlySas(container) {
      const credential = new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY);
      return generateBlobSASQueryParameters({ containerName: container, permissions: ContainerSASPermissions.parse('r'), expiresOn: new Date(Date.now() + 3600_000) }, credential).toString();
    },
    async makePublic(container) {
      await service.getContainerClient(container).setAccessPolicy('blob');
    },
    async stop() {
      await stopChild(proc);
      rmSync(location, { recursive: true, force: true });
    },
  };
}

export const readFixture = (file: string) => new Uint8Array(readFileSync(file));
