// Reading an uploaded zip file (a zipped shapefile) with yauzl, as an attacker may have made it: names that escape
// their folder, links, encrypted entries and zip bombs are refused with a 400 saying which entry and why. Sizes are
// checked twice: first as the central directory declares them (nothing inflated), then while inflating, counting
// the bytes as they come and stopping at the first one past a bound, since a crafted entry may declare a few bytes
// and inflate to gigabytes.
import { open } from "node:fs/promises";
import { join } from "node:path";
import yauzl from "yauzl";
import { ApiError, badRequest } from "#shared/errors.ts";

/** The most entries (files and folders) a zip may list. */
export const MAX_ZIP_ENTRIES = 1000;
/** The most bytes one entry may inflate to. */
export const MAX_ZIP_ENTRY_BYTES = 256 * 1024 * 1024;
/** The most bytes all entries together may inflate to (written to a temporary folder while the layers are read). */
export const MAX_ZIP_TOTAL_BYTES = 256 * 1024 * 1024;
/**
 * The most an entry may inflate to, as a multiple of its compressed size, once it holds more than
 * MIN_RATIO_BYTES. A dBASE file of padded text compresses well (a hundred to one is common); deflate tops out near
 * 1,032 to one, which only a bomb's long runs of one byte reach.
 */
export const MAX_ZIP_RATIO = 250;
/** Below this many inflated bytes an entry's ratio is not checked: a tiny file's ratio says nothing. */
const MIN_RATIO_BYTES = 1024 * 1024;

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;

/** Why a name may not be used as a path in the zip's folder, or undefined when it may. */
function unsafeName(name: string): string | undefined {
  if (name.includes("\0")) return "has a NUL character in its name";
  if (name.startsWith("/") || name.startsWith("\\")) return "is an absolute path";
  if (/^[A-Za-z]:/.test(name)) return "names a drive";
  if (name.split(/[/\\]/).includes("..")) return "escapes its folder (..)";
  return undefined;
}

const shown = (name: string) => JSON.stringify(name.slice(0, 120));

/**
 * The zip's files by their path in it (folders left out), each inflated within the bounds above. The zip itself is
 * read in place when it is a file (its central directory and each entry by position).
 */
export async function readZip(zipped: Buffer | string, what: string): Promise<Map<string, Buffer>> {
  const files = new Map<string, Buffer>();
  await walkZip(zipped, what, async (name, inflate) => {
    const chunks: Buffer[] = [];
    const length = await inflate((chunk) => void chunks.push(chunk));
    files.set(name, Buffer.concat(chunks, length));
  });
  return files;
}

/**
 * Inflates the zip file at `path` into `dir`, each entry into a file of its own named by its place in the zip (never
 * by the name the zip gives it), within the bounds above: the zip's paths → those files. Nothing but a chunk of an
 * entry at a time is in memory.
 */
export async function extractZip(path: string, dir: string, what: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  await walkZip(path, what, async (name, inflate) => {
    const target = join(dir, String(files.size));
    const handle = await open(target, "wx", 0o600);
    try {
      await inflate(async (chunk) => {
        await handle.write(chunk);
      });
    } finally {
      await handle.close();
    }
    files.set(name, target);
  });
  return files;
}

/** Each file entry of the zip, checked (name, kind, declared sizes) and handed to `each` to inflate it. */
async function walkZip(
  zipped: Buffer | string,
  what: string,
  each: (name: string, inflate: (take: (chunk: Buffer) => void | Promise<void>) => Promise<number>) => Promise<void>,
): Promise<void> {
  let zip: yauzl.ZipFile;
  try {
    // Names are decoded and checked here (decodeStrings off), so each refusal names its entry in words.
    const options = { lazyEntries: true, decodeStrings: false, validateEntrySizes: false };
    zip = await (typeof zipped === "string"
      ? yauzl.openPromise(zipped, options)
      : yauzl.fromBufferPromise(zipped, options));
  } catch {
    throw badRequest(what, ["The file is not a zip file that can be read."]);
  }
  if (zip.entryCount > MAX_ZIP_ENTRIES)
    throw badRequest(what, [`The zip file has ${zip.entryCount} entries; at most ${MAX_ZIP_ENTRIES} are read.`]);
  const seen = new Set<string>();
  let total = 0;
  try {
    for (;;) {
      const entry = await nextEntry(zip, what);
      if (!entry) break;
      const raw = entry.fileName as unknown as Buffer;
      const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, raw, entry.extraFields, false);
      const unsafe = unsafeName(name) ?? unsafeName(raw.toString("latin1"));
      if (unsafe) throw badRequest(what, [`The zip entry ${shown(name)} ${unsafe}: it is refused.`]);
      if (((entry.externalFileAttributes >>> 16) & S_IFMT) === S_IFLNK)
        throw badRequest(what, [`The zip entry ${shown(name)} is a symbolic link: links are refused.`]);
      if (entry.isEncrypted())
        throw badRequest(what, [`The zip entry ${shown(name)} is encrypted: encrypted entries cannot be read.`]);
      if (name.endsWith("/")) continue;
      checkDeclared(name, entry, total, what);
      if (seen.has(name)) throw badRequest(what, [`The zip file holds ${shown(name)} twice.`]);
      seen.add(name);
      const before = total;
      await each(name, async (take) => {
        const length = await inflate(zip, entry, name, before, what, take);
        total += length;
        return length;
      });
    }
  } finally {
    zip.close();
  }
}

function nextEntry(zip: yauzl.ZipFile, what: string): Promise<yauzl.Entry | undefined> {
  return new Promise((resolve, reject) => {
    const cleanup = () => {
      zip.off("entry", onEntry);
      zip.off("end", onEnd);
      zip.off("error", onError);
    };
    const onEntry = (e: yauzl.Entry) => (cleanup(), resolve(e));
    const onEnd = () => (cleanup(), resolve(undefined));
    const onError = (err: Error) => (
      cleanup(),
      reject(badRequest(what, [`The zip file is damaged: ${err.message.slice(0, 160)}`]))
    );
    zip.on("entry", onEntry);
    zip.on("end", onEnd);
    zip.on("error", onError);
    zip.readEntry();
  });
}

const bomb = (name: string, why: string, what: string) =>
  badRequest(what, [`The zip entry ${shown(name)} ${why}: the file looks like a zip bomb and is refused.`]);

/** Refuses what the central directory already says is too much, before a byte is inflated. */
function checkDeclared(name: string, entry: yauzl.Entry, total: number, what: string): void {
  const size = entry.uncompressedSize;
  if (size > MAX_ZIP_ENTRY_BYTES) throw bomb(name, `inflates to ${size} bytes (at most ${MAX_ZIP_ENTRY_BYTES})`, what);
  if (total + size > MAX_ZIP_TOTAL_BYTES)
    throw bomb(name, `takes the inflated total past ${MAX_ZIP_TOTAL_BYTES} bytes`, what);
  if (size > MIN_RATIO_BYTES && size > MAX_ZIP_RATIO * Math.max(entry.compressedSize, 1))
    throw bomb(name, `inflates to more than ${MAX_ZIP_RATIO} times its compressed size`, what);
}

/**
 * An entry's bytes, counted as they inflate and handed to `take` (which may write them out): the first byte past its
 * declared size or a bound stops it. Answers the entry's length.
 */
async function inflate(
  zip: yauzl.ZipFile,
  entry: yauzl.Entry,
  name: string,
  total: number,
  what: string,
  take: (chunk: Buffer) => void | Promise<void>,
): Promise<number> {
  let stream: import("node:stream").Readable;
  try {
    stream = await zip.openReadStreamPromise(entry);
  } catch (err) {
    throw badRequest(what, [`The zip entry ${shown(name)} cannot be read: ${(err as Error).message.slice(0, 160)}`]);
  }
  let length = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      length += chunk.length;
      if (length > entry.uncompressedSize)
        throw bomb(name, `inflates to more bytes than it declares (${entry.uncompressedSize})`, what);
      if (length > MAX_ZIP_ENTRY_BYTES || total + length > MAX_ZIP_TOTAL_BYTES)
        throw bomb(name, `inflates past ${Math.min(MAX_ZIP_ENTRY_BYTES, MAX_ZIP_TOTAL_BYTES - total)} bytes`, what);
      if (length > MIN_RATIO_BYTES && length > MAX_ZIP_RATIO * Math.max(entry.compressedSize, 1))
        throw bomb(name, `inflates to more than ${MAX_ZIP_RATIO} times its compressed size`, what);
      await take(chunk);
    }
  } catch (err) {
    stream.destroy();
    if (err instanceof ApiError) throw err;
    throw badRequest(what, [`The zip entry ${shown(name)} cannot be read: ${(err as Error).message.slice(0, 160)}`]);
  }
  if (length !== entry.uncompressedSize)
    throw badRequest(what, [`The zip entry ${shown(name)} is shorter than it declares: the file is damaged.`]);
  return length;
}
