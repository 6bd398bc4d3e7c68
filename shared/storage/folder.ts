// The Storage of a folder store: the files below a directory of this machine. A path is only ever followed
// to its real path, which must lie inside the folder's own: a symlink may lead anywhere inside the folder,
// never out of it (O_NOFOLLOW alone would guard only the last component of a path).
import { constants, type Dirent, lstatSync, type Stats, statSync } from "node:fs";
import { type FileHandle, lstat, open, readdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, sep } from "node:path";
import { type Entry, type LocalFile, safeRelativePath, type Storage, StorageError } from "#shared/storage/storage.ts";

// O_NONBLOCK: opening a FIFO left in the folder must not wait for a writer (what is no file is refused next).
const OPEN_FLAGS = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

/** Entries described at once while listing (each may take a stat). */
const BATCH = 256;

export class FolderStorage implements Storage {
  readonly #root: string;
  #realRoot: string | undefined;
  /** Files' real paths as last resolved (by relative path), with the device and inode each named then. */
  readonly #resolved = new Map<string, Identity & { readonly real: string }>();

  constructor(root: string) {
    if (!isAbsolute(root)) throw new StorageError("A folder store's location must be an absolute path.");
    this.#root = root;
  }

  async read(path: string, maxBytes: number): Promise<Buffer | undefined> {
    const handle = await this.#open(safeRelativePath(path));
    if (!handle) return undefined;
    try {
      const info = await handle.stat();
      if (!info.isFile()) return undefined;
      if (info.size > maxBytes) throw new StorageError(`The file is larger than ${maxBytes} bytes.`);
      return await readAt(handle, 0, info.size);
    } finally {
      await handle.close();
    }
  }

  async readRange(path: string, offset: number, length: number): Promise<Buffer | undefined> {
    const relative = safeRelativePath(path);
    if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
      throw new RangeError(`bad byte range: offset ${offset}, length ${length}`);
    }
    const handle = await this.#open(relative);
    if (!handle) return undefined;
    try {
      const info = await handle.stat();
      if (!info.isFile()) return undefined;
      return await readAt(handle, offset, Math.max(0, Math.min(length, info.size - offset)));
    } finally {
      await handle.close();
    }
  }

  async list(path: string, limit: number): Promise<Entry[]> {
    const dir = await this.#resolve(safeRelativePath(path));
    const root = this.#realRoot;
    if (dir === undefined || root === undefined || !(limit > 0)) return [];
    let dirents: Dirent[];
    try {
      dirents = await readdir(dir, { withFileTypes: true });
    } catch (err) {
      if (isMissing(err)) return [];
      throw err;
    }
    const candidates = dirents.filter((d) => isName(d.name)).sort((a, b) => compare(a.name, b.name));
    const entries: Entry[] = [];
    for (let next = 0; next < candidates.length && entries.length < limit;) {
      const batch = candidates.slice(next, next + Math.min(BATCH, limit - entries.length));
      next += batch.length;
      for (const entry of await Promise.all(batch.map((d) => describe(root, dir, d)))) {
        if (entry) entries.push(entry);
      }
    }
    return entries;
  }

  async localFile(path: string, maxBytes: number): Promise<LocalFile | undefined> {
    const relative = safeRelativePath(path);
    // A feature query opens its file on every request: once the path was resolved inside the folder, two stats
    // show it still reaches that same file (device and inode, through any link) at that same real path, and
    // resolving it again (a realpath, a stat of each part) is left for when either differs. Synchronous: a
    // stat of a local file takes microseconds, less than the hop to libuv's thread pool an async one costs, and
    // the file is then read synchronously by node:sqlite all the same.
    const known = this.#resolved.get(relative);
    if (known && this.#realRoot !== undefined) {
      const reached = statOrNone(join(this.#realRoot, relative));
      // The real path itself, not followed: a real path is never a link, so a link put there since is resolved anew.
      const atReal = reached && statOrNone(known.real, false);
      if (reached && atReal && sameFile(reached, known) && sameFile(atReal, known))
        return localFileOf(known.real, atReal, maxBytes);
      this.#resolved.delete(relative);
    }
    const file = await this.#resolve(relative);
    if (file === undefined) return undefined;
    const info = await stat(file).catch((err: unknown) => {
      if (isMissing(err)) return undefined;
      throw err;
    });
    const local = localFileOf(file, info, maxBytes);
    if (local && info) {
      if (this.#resolved.size >= MAX_RESOLVED) this.#resolved.delete(this.#resolved.keys().next().value as string);
      this.#resolved.set(relative, { real: file, ...identityOf(info) });
    }
    return local;
  }

  /** Opens the file at a checked relative path; undefined when there is none. */
  async #open(relative: string): Promise<FileHandle | undefined> {
    const file = await this.#resolve(relative);
    if (file === undefined) return undefined;
    try {
      return await open(file, OPEN_FLAGS);
    } catch (err) {
      if (isMissing(err)) return undefined;
      // A link put in place of the file since it was resolved.
      if ((err as NodeJS.ErrnoException).code === "ELOOP") throw outside();
      throw err;
    }
  }

  /**
   * The real path of a checked relative path, inside the folder; undefined when it does not exist (or the
   * folder itself does not). A StorageError when it lies outside.
   */
  async #resolve(relative: string): Promise<string | undefined> {
    this.#realRoot ??= await realOrMissing(this.#root);
    const root = this.#realRoot;
    if (root === undefined) return undefined;
    if (relative === "") return root;
    const real = await realOrMissing(join(root, relative));
    if (real !== undefined) {
      if (!inside(root, real)) throw outside();
      return real;
    }
    // Missing: refused all the same when the deepest part of it that exists lies outside, so that nothing
    // tells what exists out there. Parts exist from the root down to some depth: found by bisection.
    const parts = relative.split("/");
    let found = 0;
    let missing = parts.length;
    let deepest = root;
    while (missing - found > 1) {
      const middle = (found + missing) >> 1;
      const real = await realOrMissing(join(root, ...parts.slice(0, middle)));
      if (real === undefined) {
        missing = middle;
      } else {
        found = middle;
        deepest = real;
      }
    }
    if (!inside(root, deepest)) throw outside();
    return undefined;
  }
}

/** Relative paths whose resolution a folder storage keeps. */
const MAX_RESOLVED = 256;

/**
 * What tells one file from another: its device and inode, and its birth time (or, where the file system keeps none,
 * its change time), since an inode number is given again to a file made after one was deleted.
 */
interface Identity {
  readonly dev: number;
  readonly ino: number;
  readonly born: number;
}
const identityOf = (s: Stats): Identity => ({ dev: s.dev, ino: s.ino, born: s.birthtimeMs || s.ctimeMs });
const sameFile = (a: Stats, b: Identity) =>
  a.dev === b.dev && a.ino === b.ino && (a.birthtimeMs || a.ctimeMs) === b.born;

/** A path's stat, following links unless `follow` is false; none when anything is amiss (the full resolution then says what). */
function statOrNone(path: string, follow = true): Stats | undefined {
  try {
    return follow ? statSync(path, { throwIfNoEntry: false }) : lstatSync(path, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

/** A file found at its real path, if it is a file and not over `maxBytes`; its version from its stat. */
function localFileOf(file: string, info: Stats | undefined, maxBytes: number): LocalFile | undefined {
  if (!info?.isFile()) return undefined;
  if (info.size > maxBytes) throw new StorageError(`The file is larger than ${maxBytes} bytes.`);
  return { file, version: `${info.dev}:${info.ino}:${info.size}:${info.mtimeMs}` };
}

const outside = () => new StorageError("The path leads outside the data store.");

function inside(root: string, real: string): boolean {
  return real === root || real.startsWith(root.endsWith(sep) ? root : root + sep);
}

function isMissing(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code === "ENOENT" || code === "ENOTDIR";
}

async function realOrMissing(path: string): Promise<string | undefined> {
  try {
    return await realpath(path);
  } catch (err) {
    if (isMissing(err)) return undefined;
    if ((err as NodeJS.ErrnoException).code === "ELOOP") throw new StorageError("The path leads into a loop of links.");
    throw err;
  }
}

/** An entry of a listing; undefined for what is neither file nor folder, or is a link leading out. */
async function describe(root: string, dir: string, d: Dirent): Promise<Entry | undefined> {
  const { name } = d;
  try {
    if (d.isDirectory()) return { name, kind: "folder" };
    if (d.isFile()) {
      const info = await lstat(join(dir, name));
      return info.isFile() ? { name, kind: "file", size: info.size } : undefined;
    }
    if (!d.isSymbolicLink()) return undefined;
    const real = await realpath(join(dir, name));
    if (!inside(root, real)) return undefined;
    const info = await stat(real);
    if (info.isDirectory()) return { name, kind: "folder" };
    return info.isFile() ? { name, kind: "file", size: info.size } : undefined;
  } catch (err) {
    // Gone since the folder was read, a dangling link or a loop of links: nothing to list.
    if (isMissing(err) || (err as NodeJS.ErrnoException).code === "ELOOP") return undefined;
    throw err;
  }
}

/** Whether a name in a folder is one a path can reach. */
function isName(name: string): boolean {
  try {
    return safeRelativePath(name) === name;
  } catch {
    return false;
  }
}

const compare = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** `length` bytes at `position`, fewer when the file ends first. */
async function readAt(handle: FileHandle, position: number, length: number): Promise<Buffer> {
  const buffer = Buffer.alloc(length);
  let filled = 0;
  while (filled < length) {
    const { bytesRead } = await handle.read(buffer, filled, length - filled, position + filled);
    if (bytesRead === 0) break;
    filled += bytesRead;
  }
  return filled === length ? buffer : buffer.subarray(0, filled);
}
