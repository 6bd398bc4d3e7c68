import { gunzipSync } from "node:zlib";

// Where a data store's content lies, read by reference: a folder on this machine or an S3 bucket and prefix.
// Every path handed to a Storage is relative to the store's root and checked here first, so no caller can
// reach outside the store whatever it asks for.

/** Where a data store's content lies: a folder on the machine that serves it, or an S3 bucket and prefix. */
export type StoreLocation = { readonly folder: string } | { readonly bucket: string; readonly prefix: string };

/** One entry of a listing: a file (with its size) or a folder. */
export interface Entry {
  readonly name: string;
  readonly kind: "file" | "folder";
  readonly size?: number;
}

export interface Storage {
  /** The whole file, or undefined when it does not exist; a file over `maxBytes` is a StorageError. */
  read(path: string, maxBytes: number): Promise<Buffer | undefined>;
  /** `length` bytes at `offset` (fewer at the end of the file); undefined when the file does not exist. */
  readRange(path: string, offset: number, length: number): Promise<Buffer | undefined>;
  /** The entries directly below a folder, sorted by name, at most `limit` of them; [] for a missing folder. */
  list(path: string, limit: number): Promise<Entry[]>;
  /**
   * The file as a file of this machine, for readers that open files themselves (SQLite): the file itself in a
   * folder store, a copy kept in the function's temporary storage for a cloud store (fetched once per version).
   * Undefined when there is no such file; a file over `maxBytes` is a StorageError.
   */
  localFile(path: string, maxBytes: number): Promise<LocalFile | undefined>;
}

export interface LocalFile {
  readonly file: string;
  /** Changes whenever the content may have: a reader opened on an older version is reopened. */
  readonly version: string;
}

/** A fault of the stored content or of a path (not of mapgate): reported to the caller as a clear error. */
export class StorageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "StorageError";
  }
}

/** The longest relative path accepted (S3 keys end at 1,024 bytes). */
const MAX_PATH = 1024;

/**
 * Normalizes a store-relative path (`/a/b`, `a/b/`, `a//b`) to `a/b` ("" for the root). Refuses what could
 * leave the store or mean something else on some storage: `..` and `.` segments, backslashes, NUL and other
 * control characters, over-long paths. Linear in the path's length.
 */
export function safeRelativePath(path: string): string {
  if (path.length > MAX_PATH) throw new StorageError("The path is too long.");
  // eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
  if (/[\u0000-\u001f\u007f\\]/.test(path)) throw new StorageError("The path holds characters a path may not hold.");
  const segments = path.split("/").filter((s) => s !== "");
  for (const s of segments) {
    if (s === "." || s === "..") throw new StorageError("The path may not hold '.' or '..' segments.");
  }
  return segments.join("/");
}

/** Joins store-relative paths, each checked. */
export function joinPath(...parts: string[]): string {
  return safeRelativePath(parts.filter((p) => p !== "").join("/"));
}

/** A gzip member, inflated with a bound on its output (a small file may expand enormously). */
export function gunzipBounded(bytes: Buffer, maxBytes: number, what: string): Buffer {
  try {
    return gunzipSync(bytes, { maxOutputLength: maxBytes });
  } catch (err) {
    if ((err as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") throw new StorageError(`${what} is too large.`);
    throw new StorageError(`${what} is not a valid gzip file.`);
  }
}
