// Cache of made images: in memory per process (LRU by bytes), and for raster style tiles also on disk under
// `[cache] dir`/render (terrain tiles under `[cache] dir`/terrain, disk only), shared by every worker process. Keys start with the style id and a hash of what
// the pixels depend on (shared-cache/identity.ts), so an edited style, data file or image setting never serves
// old pixels. The fleet's shared cache (shared-cache/client.ts) is asked after these two.
// The disk cache is bounded: when the bytes written since the last sweep pass a tenth of the budget, the
// oldest files are removed until the directory is under 90% of it.
import { mkdir, open, readdir, readFile, rename, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { LRUCache } from 'lru-cache';

export interface CachedImage {
  body: Uint8Array;
  etag: string;
  contentType: string;
  /** When the work that made the bytes began (ms), before it read any data: an expiry at or after it makes it stale. */
  madeAt: number;
}

const ENTRY_OVERHEAD = 128;

export class RenderCache {
  private readonly memory: LRUCache<string, CachedImage> | undefined;
  private readonly diskBudget: number;
  private writtenSinceSweep = 0;
  private sweeping: Promise<void> | undefined;

  constructor(
    memoryMb: number,
    private readonly dir: string | undefined,
    diskMb: number,
    private readonly onError: (err: Error) => void = () => {},
  ) {
    const maxSize = Math.floor(memoryMb * 1024 * 1024);
    if (maxSize > 0) {
      this.memory = new LRUCache<string, CachedImage>({
        maxSize,
        sizeCalculation: (v, k) => v.body.byteLength + k.length + ENTRY_OVERHEAD,
        maxEntrySize: Math.max(1, Math.floor(maxSize / 8)),
      });
    }
    this.diskBudget = dir ? Math.floor(diskMb * 1024 * 1024) : 0;
  }

  getMemory(key: string): CachedImage | undefined {
    return this.memory?.get(key);
  }

  setMemory(key: string, value: CachedImage): void {
    this.memory?.set(key, value);
  }

  /** Drops the memory cache (a reload drops cached tiles; the disk cache is keyed by content and stays). */
  clearMemory(): void {
    this.memory?.clear();
  }

  get diskEnabled(): boolean {
    return this.diskBudget > 0;
  }

  private file(key: string): string {
    // Keys are made of ids, hashes and numbers; anything else is replaced so a key can never leave the directory.
    const safe = key.split('/').map((p) => p.replace(/[^A-Za-z0-9_.@-]/g, '_').replace(/^\.+/, '_'));
    return path.join(this.dir!, ...safe);
  }

  async getDisk(key: string): Promise<Buffer | undefined> {
    if (!this.diskEnabled) return undefined;
    try {
      return await readFile(this.file(key));
    } catch {
      return undefined;
    }
  }

  /**
   * A file and the time its bytes were made: its modification time, which setDisk sets to that time (an expiry
   * compares it with its own, src/expire/; a restart keeps it).
   */
  async getDiskEntry(key: string): Promise<{ body: Buffer; madeAt: number } | undefined> {
    if (!this.diskEnabled) return undefined;
    let handle;
    try {
      handle = await open(this.file(key), 'r');
      const st = await handle.stat();
      return { body: await handle.readFile(), madeAt: st.mtimeMs };
    } catch {
      return undefined;
    } finally {
      await handle?.close();
    }
  }

  /**
   * Writes atomically (temp file and rename), so another process never reads half a file. `madeAt` (ms) becomes
   * the file's modification time: when the work that made the bytes began, not when they were written.
   */
  async setDisk(key: string, body: Uint8Array, madeAt?: number): Promise<void> {
    if (!this.diskEnabled) return;
    const file = this.file(key);
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFile(tmp, body);
      if (madeAt !== undefined) await utimes(tmp, new Date(madeAt), new Date(madeAt));
      await rename(tmp, file);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      this.onError(err as Error);
      return;
    }
    this.writtenSinceSweep += body.byteLength;
    if (this.writtenSinceSweep > this.diskBudget / 10 && !this.sweeping) {
      this.writtenSinceSweep = 0;
      this.sweeping = this.sweep()
        .catch((err: Error) => this.onError(err))
        .finally(() => (this.sweeping = undefined));
    }
  }

  private lockFile(key: string): string {
    return path.join(this.dir!, 'locks', createHash('sha256').update(key).digest('hex').slice(0, 32));
  }

  /**
   * Claims the render of `key` among the processes sharing the disk cache (a lock file created exclusively).
   * Returns the release, or undefined while another process holds a claim younger than `staleMs` (an older
   * claim belongs to a process that died: it is taken over). Without a disk cache every claim succeeds.
   */
  async claim(key: string, staleMs: number): Promise<(() => Promise<void>) | undefined> {
    if (!this.diskEnabled) return async () => {};
    const file = this.lockFile(key);
    await mkdir(path.dirname(file), { recursive: true }).catch(() => {});
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await writeFile(file, String(process.pid), { flag: 'wx' });
        return () => unlink(file).catch(() => {});
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') return async () => {};
        const age = await stat(file).then((st) => Date.now() - st.mtimeMs, () => 0);
        if (age < staleMs) return undefined;
        await unlink(file).catch(() => {});
      }
    }
    return undefined;
  }

  /** Waits until the claim on `key` is released (or `timeoutMs` passes). */
  async awaitRelease(key: string, timeoutMs: number): Promise<void> {
    const file = this.lockFile(key);
    const deadline = Date.now() + timeoutMs;
    for (let wait = 10; Date.now() < deadline; wait = Math.min(100, wait * 2)) {
      if (!(await stat(file).then(() => true, () => false))) return;
      await new Promise((r) => setTimeout(r, wait));
    }
  }

  /** Removes the oldest files until the directory holds at most 90% of the budget. */
  async sweep(): Promise<void> {
    const files: { file: string; size: number; mtime: number }[] = [];
    const walk = async (dir: string): Promise<void> => {
      let entries;
      try {
        entries = await readdir(dir, { withFileTypes: true });
      } catch {
        return;
      }
      for (const e of entries) {
        const p = path.join(dir, e.name);
        // Claims are not cached tiles (removing a held one would let a second process draw the same metatile),
        // and a temp file is renamed into place by a write still running.
        if (e.isDirectory()) {
          if (!(dir === this.dir && e.name === 'locks')) await walk(p);
        } else if (e.isFile() && !e.name.endsWith('.tmp')) {
          const s = await stat(p).catch(() => undefined);
          if (s) files.push({ file: p, size: s.size, mtime: s.mtimeMs });
        }
      }
    };
    await walk(this.dir!);
    let total = files.reduce((n, f) => n + f.size, 0);
    if (total <= this.diskBudget) return;
    files.sort((a, b) => a.mtime - b.mtime);
    for (const f of files) {
      if (total <= this.diskBudget * 0.9) break;
      await unlink(f.file).catch(() => {});
      total -= f.size;
    }
  }

  get entries(): number {
    return this.memory?.size ?? 0;
  }

  get bytes(): number {
    return this.memory?.calculatedSize ?? 0;
  }
}
