// A file to publish, read as often as publishing needs (once to learn its fields, once to keep its rows) and never
// whole: an uploaded item's file streamed from where mapgate keeps it (a folder, or S3 with GETs read as they
// arrive), or a file sent with an analyze request (already in memory, as the request body was). Readers that need
// random access (SQLite for a GeoPackage, the zip's central directory) take a private temporary copy instead.
import { randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { itemFiles } from "#shared/stores/item-files.ts";

export interface FileSource {
  /** The file's size in bytes. */
  readonly size: number;
  /** The file from its first byte, a chunk at a time: a new reading at every call. */
  stream(): Promise<Readable>;
  /** The file's first bytes (at most `n`). */
  head(n: number): Promise<Buffer>;
}

/** A file held in memory (one sent with the request). */
export function bufferSource(bytes: Buffer): FileSource {
  return {
    size: bytes.length,
    // A few large chunks rather than one: the parsers downstream yield between them.
    stream: async () => Readable.from(chunks(bytes), { objectMode: false }),
    head: async (n) => bytes.subarray(0, n),
  };
}

function* chunks(bytes: Buffer): Generator<Buffer> {
  for (let at = 0; at < bytes.length; at += 256 * 1024) yield bytes.subarray(at, at + 256 * 1024);
}

/** An uploaded item's file, where mapgate keeps it. */
export async function itemFileSource(itemId: string): Promise<FileSource> {
  const files = itemFiles();
  const size = await files.size(itemId);
  if (size === undefined) throw new Error(`the file of item ${itemId} is missing`);
  const opened = async (range?: { start: number; end: number }) => {
    const stream = await files.stream(itemId, range);
    if (!stream) throw new Error(`the file of item ${itemId} is missing`);
    return stream;
  };
  return {
    size,
    stream: () => opened(),
    async head(n) {
      if (size === 0 || n <= 0) return Buffer.alloc(0);
      const got: Buffer[] = [];
      for await (const chunk of await opened({ start: 0, end: Math.min(n, size) - 1 })) got.push(chunk as Buffer);
      return Buffer.concat(got).subarray(0, n);
    },
  };
}

/**
 * A private copy of the file on this machine's disk (on AWS the function's /tmp, whose size the stack sets), for
 * `use`; removed after it, whatever happens.
 */
export async function withLocalCopy<T>(
  source: FileSource,
  name: string,
  use: (path: string) => Promise<T>,
): Promise<T> {
  const dir = join(tmpdir(), "mapgate-publish");
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${randomBytes(8).toString("hex")}-${name}`);
  try {
    await pipeline(await source.stream(), createWriteStream(path, { flags: "wx", mode: 0o600 }));
    return await use(path);
  } finally {
    await rm(path, { force: true });
  }
}
