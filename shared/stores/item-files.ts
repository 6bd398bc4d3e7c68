// The files users upload as items (a CSV, a GeoPackage, a PDF), kept by mapgate: objects of the stack's own
// bucket on AWS (`ITEM_FILES_BUCKET`), files of the data folder on one machine (`ITEM_FILES_DIR`). Keyed by item
// id alone, never by a name a user chose, so no upload can land outside its place or over another item's file.
// The item record is the truth: a file is written before its item commits and removed after its item is gone,
// so a crash between the two leaves at most a file no item names (never an item whose file is missing).
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { config } from "#shared/config.ts";

export interface ItemFiles {
  put(itemId: string, bytes: Buffer, contentType: string): Promise<void>;
  /** Keeps a file mapgate wrote (an export) as the item's, streamed from `path` rather than read whole; its size. */
  putFile(itemId: string, path: string, contentType: string): Promise<number>;
  /** The file's bytes; undefined when there is none. */
  get(itemId: string): Promise<Buffer | undefined>;
  /** The file's size in bytes; undefined when there is none. */
  size(itemId: string): Promise<number | undefined>;
  /**
   * The file's bytes from `start` up to and including `end` (both optional), as a stream read a chunk at a time,
   * so a file larger than a function's memory can be read; undefined when there is none.
   */
  stream(itemId: string, range?: ByteRange): Promise<Readable | undefined>;
  /** Removes the file; nothing happens when there is none. */
  remove(itemId: string): Promise<void>;
  /** Keeps one part of a file uploaded in parts (addPart), replacing a part of the same number. */
  putPart(itemId: string, partNum: number, bytes: Buffer): Promise<void>;
  /** The size of one part kept for an item; undefined when there is none. */
  partSize(itemId: string, partNum: number): Promise<number | undefined>;
  /** The parts kept for an item: part number → size in bytes. */
  listParts(itemId: string): Promise<Map<number, number>>;
  /**
   * Writes the item's file from its parts, in the order given, streaming (one part's chunks, or on S3 one
   * bounded buffer, in memory at a time); answers the file's size and its first bytes (for the magic check).
   */
  assemble(itemId: string, partNums: readonly number[], contentType: string): Promise<Assembled>;
  /** Removes every part kept for the item, and its upload's mark; nothing happens when there is none. */
  removeParts(itemId: string): Promise<void>;
  /**
   * Marks an item's upload in parts as underway (`addItem` with `multipart=true`), so one that never gets a part is
   * found by the sweeper (shared/hosted/sweep.ts) as one with parts is.
   */
  markUpload(itemId: string): Promise<void>;
  /**
   * Every upload in parts with a mark or parts kept: when it last changed (the latest of its mark and parts, ms)
   * and what its parts hold.
   */
  uploadsUnderway(): Promise<UploadUnderway[]>;
}

export interface UploadUnderway {
  readonly itemId: string;
  readonly lastChanged: number;
  readonly bytes: number;
}

/** Where uploads in parts are marked (`items/uploads/<item id>`): under the files' prefix, where no file is looked for. */
const UPLOADS_PREFIX = "items/uploads/";
const PARTS_PREFIX = "items/parts/";

/** Folds a listing's entries (item id, time, bytes) into one entry per upload. */
function underway(entries: Iterable<{ itemId: string; time: number; bytes: number }>): UploadUnderway[] {
  const byItem = new Map<string, { lastChanged: number; bytes: number }>();
  for (const e of entries) {
    if (!ITEM_ID.test(e.itemId)) continue;
    const held = byItem.get(e.itemId) ?? { lastChanged: 0, bytes: 0 };
    byItem.set(e.itemId, { lastChanged: Math.max(held.lastChanged, e.time), bytes: held.bytes + e.bytes });
  }
  return [...byItem].map(([itemId, u]) => ({ itemId, ...u }));
}

/** Byte offsets of a file, `end` included (as HTTP's Range counts). */
export interface ByteRange {
  readonly start?: number;
  readonly end?: number;
}

export interface Assembled {
  readonly size: number;
  /** The file's first bytes (at most HEAD_BYTES). */
  readonly head: Buffer;
}

const HEAD_BYTES = 64;

const ITEM_ID = /^[0-9a-f]{32}$/;

function checkedId(itemId: string): string {
  if (!ITEM_ID.test(itemId)) throw new Error(`not an item id: ${itemId.slice(0, 40)}`);
  return itemId;
}

function checkedKey(itemId: string): string {
  return `items/${checkedId(itemId)}`;
}

/**
 * Where an item's parts are kept (`items/parts/<item id>/`): under the files' own prefix (so the functions' grant
 * covers them), never where a file is looked for (no item id is `parts`).
 */
function partsPrefix(itemId: string): string {
  if (!ITEM_ID.test(itemId)) throw new Error(`not an item id: ${itemId.slice(0, 40)}`);
  return `items/parts/${itemId}/`;
}

/** A part's name: its number padded, so names sort as numbers do. */
function partName(partNum: number): string {
  if (!Number.isSafeInteger(partNum) || partNum < 1 || partNum > 10_000) throw new Error(`not a part number`);
  return String(partNum).padStart(5, "0");
}

const PART_NAME = /^\d{5}$/;

/**
 * Writes `bytes` to `target` whole or not at all: into a temporary file beside it, synced (durable before it is named:
 * a kill -9 after the item commits must not leave a truncated file behind it), then renamed over it.
 */
async function writeDurably(target: string, bytes: Buffer): Promise<void> {
  const temporary = `${target}.${randomBytes(6).toString("hex")}.part`;
  const handle = await open(temporary, "wx", 0o600);
  try {
    await handle.writeFile(bytes);
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, target);
}

/** Collects a file's first bytes as its chunks pass. */
class Head {
  #bytes = Buffer.alloc(0);
  take(chunk: Buffer): void {
    if (this.#bytes.length < HEAD_BYTES)
      this.#bytes = Buffer.concat([this.#bytes, chunk.subarray(0, HEAD_BYTES - this.#bytes.length)]);
  }
  get bytes(): Buffer {
    return this.#bytes;
  }
}

/** One machine: a folder only the engine's user reads; each file written whole, then renamed into place. */
class FolderItemFiles implements ItemFiles {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async put(itemId: string, bytes: Buffer): Promise<void> {
    await mkdir(join(this.#dir, "items"), { recursive: true, mode: 0o700 });
    await writeDurably(join(this.#dir, checkedKey(itemId)), bytes);
  }

  async putFile(itemId: string, path: string): Promise<number> {
    const target = join(this.#dir, checkedKey(itemId));
    await mkdir(join(this.#dir, "items"), { recursive: true, mode: 0o700 });
    const temporary = `${target}.${randomBytes(6).toString("hex")}.part`;
    try {
      // Copied (the file may lie on another file system), made durable, then named: as put does.
      await copyFile(path, temporary);
      const handle = await open(temporary, "r+");
      try {
        await handle.sync();
      } finally {
        await handle.close();
      }
      const { size } = await stat(temporary);
      await rename(temporary, target);
      return size;
    } finally {
      await rm(temporary, { force: true });
    }
  }

  async get(itemId: string): Promise<Buffer | undefined> {
    try {
      return await readFile(join(this.#dir, checkedKey(itemId)));
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  }

  async size(itemId: string): Promise<number | undefined> {
    try {
      return (await stat(join(this.#dir, checkedKey(itemId)))).size;
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  }

  async stream(itemId: string, range: ByteRange = {}): Promise<Readable | undefined> {
    // Opened before it is answered, so a missing file is `undefined` here rather than an error on the stream.
    let handle;
    try {
      handle = await open(join(this.#dir, checkedKey(itemId)), "r");
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
    return handle.createReadStream({
      ...(range.start !== undefined ? { start: range.start } : {}),
      ...(range.end !== undefined ? { end: range.end } : {}),
      highWaterMark: 256 * 1024,
    });
  }

  async remove(itemId: string): Promise<void> {
    await rm(join(this.#dir, checkedKey(itemId)), { force: true });
  }

  async putPart(itemId: string, partNum: number, bytes: Buffer): Promise<void> {
    const folder = join(this.#dir, partsPrefix(itemId));
    await mkdir(folder, { recursive: true, mode: 0o700 });
    await writeDurably(join(folder, partName(partNum)), bytes);
  }

  async partSize(itemId: string, partNum: number): Promise<number | undefined> {
    try {
      return (await stat(join(this.#dir, partsPrefix(itemId), partName(partNum)))).size;
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  }

  async listParts(itemId: string): Promise<Map<number, number>> {
    const folder = join(this.#dir, partsPrefix(itemId));
    const out = new Map<number, number>();
    let names: string[];
    try {
      names = await readdir(folder);
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return out;
      throw err;
    }
    for (const name of names) {
      if (!PART_NAME.test(name)) continue;
      out.set(Number(name), (await stat(join(folder, name))).size);
    }
    return out;
  }

  async assemble(itemId: string, partNums: readonly number[]): Promise<Assembled> {
    const target = join(this.#dir, checkedKey(itemId));
    await mkdir(join(this.#dir, "items"), { recursive: true, mode: 0o700 });
    const temporary = `${target}.${randomBytes(6).toString("hex")}.part`;
    const handle = await open(temporary, "wx", 0o600);
    const head = new Head();
    let size = 0;
    try {
      for (const n of partNums) {
        for await (const chunk of createReadStream(join(this.#dir, partsPrefix(itemId), partName(n)))) {
          const bytes = chunk as Buffer;
          head.take(bytes);
          await handle.write(bytes);
          size += bytes.length;
        }
      }
      await handle.sync();
    } catch (err) {
      await handle.close();
      await rm(temporary, { force: true });
      throw err;
    }
    await handle.close();
    await rename(temporary, target);
    return { size, head: head.bytes };
  }

  async removeParts(itemId: string): Promise<void> {
    await rm(join(this.#dir, partsPrefix(itemId)), { recursive: true, force: true });
    await rm(join(this.#dir, UPLOADS_PREFIX, checkedId(itemId)), { force: true });
  }

  async markUpload(itemId: string): Promise<void> {
    await mkdir(join(this.#dir, UPLOADS_PREFIX), { recursive: true, mode: 0o700 });
    await writeDurably(join(this.#dir, UPLOADS_PREFIX, checkedId(itemId)), Buffer.alloc(0));
  }

  async uploadsUnderway(): Promise<UploadUnderway[]> {
    const entries: { itemId: string; time: number; bytes: number }[] = [];
    const names = async (dir: string) => {
      try {
        return await readdir(dir);
      } catch (err) {
        if ((err as { code?: string }).code === "ENOENT") return [];
        throw err;
      }
    };
    // A file or folder gone between the listing and its stat was removed meanwhile (a commit, a delete): skipped.
    const statOf = (path: string) => stat(path).catch(() => undefined);
    for (const name of await names(join(this.#dir, UPLOADS_PREFIX))) {
      const s = await statOf(join(this.#dir, UPLOADS_PREFIX, name));
      if (s?.isFile()) entries.push({ itemId: name, time: s.mtimeMs, bytes: 0 });
    }
    for (const itemId of await names(join(this.#dir, PARTS_PREFIX))) {
      if (!ITEM_ID.test(itemId)) continue;
      const folder = join(this.#dir, PARTS_PREFIX, itemId);
      const s = await statOf(folder);
      if (!s?.isDirectory()) continue;
      entries.push({ itemId, time: s.mtimeMs, bytes: 0 });
      for (const name of await names(folder)) {
        const p = await statOf(join(folder, name));
        if (p?.isFile()) entries.push({ itemId, time: p.mtimeMs, bytes: PART_NAME.test(name) ? p.size : 0 });
      }
    }
    return underway(entries);
  }
}

/** AWS: the stack's private, encrypted bucket; the SDK is loaded only by functions that meet a file. */
class BucketItemFiles implements ItemFiles {
  readonly #bucket: string;

  constructor(bucket: string) {
    this.#bucket = bucket;
  }

  // Loaded by the functions that meet a bucket only, and sharing the stores' client (built once per function).
  async #client() {
    const [s3, { sharedS3Client }] = await Promise.all([import("@aws-sdk/client-s3"), import("#shared/storage/s3.ts")]);
    return { s3, client: sharedS3Client() };
  }

  async put(itemId: string, bytes: Buffer, contentType: string): Promise<void> {
    const { s3, client } = await this.#client();
    await client.send(
      new s3.PutObjectCommand({ Bucket: this.#bucket, Key: checkedKey(itemId), Body: bytes, ContentType: contentType }),
    );
  }

  async putFile(itemId: string, path: string, contentType: string): Promise<number> {
    const { s3, client } = await this.#client();
    const { size } = await stat(path);
    // A stream of known length: the file is never held whole in the function's memory.
    await client.send(
      new s3.PutObjectCommand({
        Bucket: this.#bucket,
        Key: checkedKey(itemId),
        Body: createReadStream(path),
        ContentLength: size,
        ContentType: contentType,
      }),
    );
    return size;
  }

  async get(itemId: string): Promise<Buffer | undefined> {
    const { s3, client } = await this.#client();
    try {
      const out = await client.send(new s3.GetObjectCommand({ Bucket: this.#bucket, Key: checkedKey(itemId) }));
      const bytes = await out.Body?.transformToByteArray();
      return bytes ? Buffer.from(bytes) : Buffer.alloc(0);
    } catch (err) {
      if ((err as { name?: string }).name === "NoSuchKey") return undefined;
      throw err;
    }
  }

  async size(itemId: string): Promise<number | undefined> {
    const { s3, client } = await this.#client();
    try {
      const out = await client.send(new s3.HeadObjectCommand({ Bucket: this.#bucket, Key: checkedKey(itemId) }));
      return out.ContentLength ?? 0;
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === "NotFound" || name === "NoSuchKey") return undefined;
      throw err;
    }
  }

  async stream(itemId: string, range: ByteRange = {}): Promise<Readable | undefined> {
    const { s3, client } = await this.#client();
    // A ranged GET when a part is asked for: the object's body is read as it arrives, never whole.
    const Range =
      range.start !== undefined || range.end !== undefined ? `bytes=${range.start ?? 0}-${range.end ?? ""}` : undefined;
    try {
      const out = await client.send(
        new s3.GetObjectCommand({ Bucket: this.#bucket, Key: checkedKey(itemId), ...(Range ? { Range } : {}) }),
      );
      return out.Body as Readable;
    } catch (err) {
      if ((err as { name?: string }).name === "NoSuchKey") return undefined;
      throw err;
    }
  }

  async remove(itemId: string): Promise<void> {
    const { s3, client } = await this.#client();
    await client.send(new s3.DeleteObjectCommand({ Bucket: this.#bucket, Key: checkedKey(itemId) }));
  }

  async putPart(itemId: string, partNum: number, bytes: Buffer): Promise<void> {
    const { s3, client } = await this.#client();
    const Key = partsPrefix(itemId) + partName(partNum);
    await client.send(new s3.PutObjectCommand({ Bucket: this.#bucket, Key, Body: bytes }));
  }

  async partSize(itemId: string, partNum: number): Promise<number | undefined> {
    const { s3, client } = await this.#client();
    try {
      const out = await client.send(
        new s3.HeadObjectCommand({ Bucket: this.#bucket, Key: partsPrefix(itemId) + partName(partNum) }),
      );
      return out.ContentLength ?? 0;
    } catch (err) {
      if ((err as { name?: string }).name === "NotFound" || (err as { name?: string }).name === "NoSuchKey")
        return undefined;
      throw err;
    }
  }

  /** Every object under `Prefix`, a listing page (1,000 keys) at a time. */
  async *#listed(Prefix: string): AsyncIterable<{ key: string; size: number; time: number }> {
    const { s3, client } = await this.#client();
    let ContinuationToken: string | undefined;
    do {
      const page = await client.send(
        new s3.ListObjectsV2Command({
          Bucket: this.#bucket,
          Prefix,
          ...(ContinuationToken ? { ContinuationToken } : {}),
        }),
      );
      for (const o of page.Contents ?? [])
        if (o.Key) yield { key: o.Key, size: o.Size ?? 0, time: o.LastModified?.getTime() ?? 0 };
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }

  /** The keys and sizes under the item's parts prefix. */
  async #partObjects(itemId: string): Promise<{ key: string; size: number }[]> {
    const out: { key: string; size: number }[] = [];
    for await (const { key, size } of this.#listed(partsPrefix(itemId))) out.push({ key, size });
    return out;
  }

  async listParts(itemId: string): Promise<Map<number, number>> {
    const prefix = partsPrefix(itemId);
    const out = new Map<number, number>();
    for (const { key, size } of await this.#partObjects(itemId)) {
      const name = key.slice(prefix.length);
      if (PART_NAME.test(name)) out.set(Number(name), size);
    }
    return out;
  }

  /**
   * S3 takes a multipart upload's parts from 5 MiB (but the last), and mapgate's parts are smaller than a
   * request body: the parts' bytes are streamed into one buffer of S3_CHUNK bytes, sent as an S3 part whenever it
   * fills, so at most one chunk (and one part's stream) is in memory whatever the file's size.
   */
  async assemble(itemId: string, partNums: readonly number[], contentType: string): Promise<Assembled> {
    const { s3, client } = await this.#client();
    const Bucket = this.#bucket;
    const Key = checkedKey(itemId);
    const { UploadId } = await client.send(
      new s3.CreateMultipartUploadCommand({ Bucket, Key, ContentType: contentType }),
    );
    if (!UploadId) throw new Error("S3 gave no multipart upload id");
    const done: { PartNumber: number; ETag: string }[] = [];
    const head = new Head();
    const buffer = Buffer.alloc(S3_CHUNK);
    let filled = 0;
    let size = 0;
    const flush = async () => {
      const PartNumber = done.length + 1;
      const out = await client.send(
        new s3.UploadPartCommand({ Bucket, Key, UploadId, PartNumber, Body: Buffer.from(buffer.subarray(0, filled)) }),
      );
      if (!out.ETag) throw new Error("S3 gave no ETag for an uploaded part");
      done.push({ PartNumber, ETag: out.ETag });
      filled = 0;
    };
    try {
      for (const n of partNums) {
        const got = await client.send(new s3.GetObjectCommand({ Bucket, Key: partsPrefix(itemId) + partName(n) }));
        for await (const chunk of got.Body as Readable) {
          let bytes = chunk as Buffer;
          head.take(bytes);
          size += bytes.length;
          while (bytes.length > 0) {
            const taken = bytes.copy(buffer, filled);
            filled += taken;
            bytes = bytes.subarray(taken);
            if (filled === S3_CHUNK) await flush();
          }
        }
      }
      // An empty file still needs one part to complete.
      if (filled > 0 || done.length === 0) await flush();
      await client.send(
        new s3.CompleteMultipartUploadCommand({ Bucket, Key, UploadId, MultipartUpload: { Parts: done } }),
      );
    } catch (err) {
      // The incomplete upload would otherwise be kept (and billed) until a lifecycle rule removes it.
      await client.send(new s3.AbortMultipartUploadCommand({ Bucket, Key, UploadId })).catch(() => undefined);
      throw err;
    }
    return { size, head: head.bytes };
  }

  async markUpload(itemId: string): Promise<void> {
    const { s3, client } = await this.#client();
    await client.send(
      new s3.PutObjectCommand({ Bucket: this.#bucket, Key: UPLOADS_PREFIX + checkedId(itemId), Body: Buffer.alloc(0) }),
    );
  }

  async uploadsUnderway(): Promise<UploadUnderway[]> {
    const entries: { itemId: string; time: number; bytes: number }[] = [];
    for (const Prefix of [UPLOADS_PREFIX, PARTS_PREFIX]) {
      for await (const o of this.#listed(Prefix)) {
        const [itemId = "", name] = o.key.slice(Prefix.length).split("/");
        entries.push({ itemId, time: o.time, bytes: name !== undefined && PART_NAME.test(name) ? o.size : 0 });
      }
    }
    return underway(entries);
  }

  async removeParts(itemId: string): Promise<void> {
    const { s3, client } = await this.#client();
    const keys = [...(await this.#partObjects(itemId)).map((o) => o.key), UPLOADS_PREFIX + checkedId(itemId)];
    // One DeleteObject per key (the grant is per object), a few at a time.
    for (let i = 0; i < keys.length; i += 8) {
      await Promise.all(
        keys.slice(i, i + 8).map((Key) => client.send(new s3.DeleteObjectCommand({ Bucket: this.#bucket, Key }))),
      );
    }
  }
}

/** The S3 part size of an assembled file: above S3's 5 MiB floor, a bounded buffer in a function's memory. */
const S3_CHUNK = 8 * 1024 * 1024;

let opened: ItemFiles | undefined;

/** Where this function keeps item files; a function whose route does not declare `itemFiles` has none. */
export function itemFiles(): ItemFiles {
  if (opened) return opened;
  const where = config().itemFiles;
  if (!where) throw new Error("no item file storage configured (ITEM_FILES_BUCKET or ITEM_FILES_DIR)");
  opened = openItemFiles(where);
  return opened;
}

/** The item files kept in a bucket or a folder (what itemFiles() opens from the configuration). */
export function openItemFiles(where: { readonly bucket: string } | { readonly dir: string }): ItemFiles {
  return "bucket" in where ? new BucketItemFiles(where.bucket) : new FolderItemFiles(where.dir);
}
