// The files users upload as items (a CSV, a GeoPackage, a PDF), kept by mapgate: objects of the stack's own
// bucket on AWS (`ITEM_FILES_BUCKET`), files of the data folder on one machine (`ITEM_FILES_DIR`). Keyed by item
// id alone, never by a name a user chose, so no upload can land outside its place or over another item's file.
// The item record is the truth: a file is written before its item commits and removed after its item is gone,
// so a crash between the two leaves at most a file no item names (never an item whose file is missing).
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, mkdir, open, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { config } from "#shared/config.ts";

export interface ItemFiles {
  put(itemId: string, bytes: Buffer, contentType: string): Promise<void>;
  /** Keeps a file mapgate wrote (an export) as the item's, streamed from `path` rather than read whole; its size. */
  putFile(itemId: string, path: string, contentType: string): Promise<number>;
  /** The file's bytes; undefined when there is none. */
  get(itemId: string): Promise<Buffer | undefined>;
  /** Removes the file; nothing happens when there is none. */
  remove(itemId: string): Promise<void>;
}

const ITEM_ID = /^[0-9a-f]{32}$/;

function checkedKey(itemId: string): string {
  if (!ITEM_ID.test(itemId)) throw new Error(`not an item id: ${itemId.slice(0, 40)}`);
  return `items/${itemId}`;
}

/** One machine: a folder only the engine's user reads; each file written whole, then renamed into place. */
class FolderItemFiles implements ItemFiles {
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  async put(itemId: string, bytes: Buffer): Promise<void> {
    const target = join(this.#dir, checkedKey(itemId));
    await mkdir(join(this.#dir, "items"), { recursive: true, mode: 0o700 });
    const temporary = `${target}.${randomBytes(6).toString("hex")}.part`;
    const handle = await open(temporary, "wx", 0o600);
    try {
      await handle.writeFile(bytes);
      // Durable before it is named: a kill -9 after the item commits must not leave a truncated file behind it.
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, target);
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

  async remove(itemId: string): Promise<void> {
    await rm(join(this.#dir, checkedKey(itemId)), { force: true });
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

  async remove(itemId: string): Promise<void> {
    const { s3, client } = await this.#client();
    await client.send(new s3.DeleteObjectCommand({ Bucket: this.#bucket, Key: checkedKey(itemId) }));
  }
}

let opened: ItemFiles | undefined;

/** Where this function keeps item files; a function whose route does not declare `itemFiles` has none. */
export function itemFiles(): ItemFiles {
  if (opened) return opened;
  const where = config().itemFiles;
  if (!where) throw new Error("no item file storage configured (ITEM_FILES_BUCKET or ITEM_FILES_DIR)");
  opened = "bucket" in where ? new BucketItemFiles(where.bucket) : new FolderItemFiles(where.dir);
  return opened;
}
