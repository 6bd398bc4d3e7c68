// The Storage of a cloud store: the objects under a prefix of an S3 bucket, read through the ordinary SDK,
// so the local engine (an S3-compatible server on loopback) and AWS take the same path.
import {
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
} from "@aws-sdk/client-s3";
import { createHash, randomBytes } from "node:crypto";
import { createWriteStream } from "node:fs";
import { mkdir, readdir, rename, rm, stat, statfs } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pipeline } from "node:stream/promises";
import {
  type Entry,
  joinPath,
  type LocalFile,
  safeRelativePath,
  type Storage,
  StorageError,
} from "#shared/storage/storage.ts";

/** Where copies of objects live while the function is warm (Lambda's ephemeral storage, /tmp). */
const COPIES = join(tmpdir(), "mapgate-objects");

// The SDK takes the endpoint, region and credentials from the environment but has no variable for
// path-style addressing, which a server on loopback needs (bucket names are no host names there).
const forcePathStyle = process.env.S3_FORCE_PATH_STYLE === "true";
const sharedClient = new S3Client({ forcePathStyle });

/** The one S3 client of the function (stores' content, item files, hosted data): one connection pool, built once. */
export const sharedS3Client = (): S3Client => sharedClient;

/** S3 answers at most this many keys a page, whatever is asked. */
const PAGE = 1000;

export class S3Storage implements Storage {
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #client: S3Client;

  constructor(bucket: string, prefix: string, client: S3Client = sharedClient) {
    this.#bucket = bucket;
    this.#prefix = safeRelativePath(prefix);
    this.#client = client;
  }

  /** The key of a store-relative path; "" for the store's root. */
  #key(path: string): string {
    const relative = joinPath(path);
    if (this.#prefix === "") return relative;
    return relative === "" ? this.#prefix : `${this.#prefix}/${relative}`;
  }

  async read(path: string, maxBytes: number): Promise<Buffer | undefined> {
    const key = this.#key(path);
    // The store's root is a folder, never a file (and a key equal to the prefix is outside the store).
    if (key === this.#prefix) return undefined;
    const response = await this.#get(key, undefined);
    if (!response) return undefined;
    if (response.ContentLength !== undefined && response.ContentLength > maxBytes) {
      discard(response.Body);
      throw tooLarge(maxBytes);
    }
    const { data, more } = await readBody(response.Body, 0, maxBytes);
    if (more) throw tooLarge(maxBytes);
    return data;
  }

  async readRange(path: string, offset: number, length: number): Promise<Buffer | undefined> {
    const key = this.#key(path);
    checkRange(offset, length);
    if (key === this.#prefix) return undefined;
    if (length === 0) return (await this.#exists(key)) ? Buffer.alloc(0) : undefined;
    let response: GetObjectCommandOutput | undefined;
    try {
      response = await this.#get(key, `bytes=${offset}-${offset + length - 1}`);
    } catch (err) {
      // 416 InvalidRange: S3's answer to a range starting at or past the end (any range of an empty object).
      if (err instanceof S3ServiceException && (err.name === "InvalidRange" || err.$metadata.httpStatusCode === 416)) {
        return Buffer.alloc(0);
      }
      throw err;
    }
    if (!response) return undefined;
    // A server that ignores Range answers 200 and the whole object.
    const skip = response.$metadata.httpStatusCode === 206 ? 0 : offset;
    return (await readBody(response.Body, skip, length)).data;
  }

  async list(path: string, limit: number): Promise<Entry[]> {
    const key = this.#key(path);
    const prefix = key === "" ? "" : `${key}/`;
    // Keyed by kind and name: a bucket may hold both an object `a` and objects under `a/`.
    const found = new Map<string, Entry>();
    let token: string | undefined;
    while (found.size < limit) {
      const page = await this.#client.send(
        new ListObjectsV2Command({
          Bucket: this.#bucket,
          ...(prefix ? { Prefix: prefix } : {}),
          Delimiter: "/",
          MaxKeys: Math.min(PAGE, limit - found.size),
          ...(token ? { ContinuationToken: token } : {}),
        }),
      );
      for (const { Prefix: p } of page.CommonPrefixes ?? []) {
        const name = p?.slice(prefix.length, -1);
        if (name !== undefined && isName(name)) found.set(`folder/${name}`, { name, kind: "folder" });
      }
      for (const { Key: k, Size: size } of page.Contents ?? []) {
        const name = k?.slice(prefix.length);
        if (name !== undefined && isName(name)) found.set(`file/${name}`, { name, kind: "file", size: size ?? 0 });
      }
      if (!page.IsTruncated || !page.NextContinuationToken) break;
      token = page.NextContinuationToken;
    }
    return [...found.values()].sort(byName).slice(0, Math.max(0, limit));
  }

  async localFile(path: string, maxBytes: number): Promise<LocalFile | undefined> {
    const key = this.#key(path);
    if (key === this.#prefix) return undefined;
    let head;
    try {
      head = await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
    if ((head.ContentLength ?? 0) > maxBytes) throw tooLarge(maxBytes);
    const etag = head.ETag ?? String(head.LastModified?.getTime() ?? "");
    const name = createHash("sha256").update(`${this.#bucket}\u0000${key}`).digest("hex").slice(0, 32);
    const version = createHash("sha256").update(etag).digest("hex").slice(0, 16);
    const file = join(COPIES, `${name}-${version}`);
    if (
      await stat(file).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      return { file, version: etag };
    await mkdir(COPIES, { recursive: true, mode: 0o700 });
    // Older versions of the same object go first: the ephemeral storage is small.
    // (A copy still being written by a concurrent request is its own to finish or remove.)
    for (const old of await readdir(COPIES))
      if (old.startsWith(`${name}-`) && !old.endsWith(".part")) await rm(join(COPIES, old), { force: true });
    await makeRoom(head.ContentLength ?? 0);
    const response = await this.#client.send(
      new GetObjectCommand({ Bucket: this.#bucket, Key: key, ...(head.ETag ? { IfMatch: head.ETag } : {}) }),
    );
    // Unique per copy, not per process: the local engine runs several instances of a function as threads of one.
    const partial = `${file}.${randomBytes(8).toString("hex")}.part`;
    try {
      let size = 0;
      const body = response.Body as NodeJS.ReadableStream;
      body.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size > maxBytes) (body as unknown as { destroy: (e: Error) => void }).destroy(tooLarge(maxBytes));
      });
      await pipeline(body, createWriteStream(partial, { mode: 0o600 }));
      await rename(partial, file);
    } catch (err) {
      await rm(partial, { force: true });
      throw err;
    }
    return { file, version: etag };
  }

  /** GetObject, or undefined when there is no such key. */
  async #get(key: string, range: string | undefined): Promise<GetObjectCommandOutput | undefined> {
    try {
      return await this.#client.send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: key, ...(range ? { Range: range } : {}) }),
      );
    } catch (err) {
      if (isMissing(err)) return undefined;
      throw err;
    }
  }

  async #exists(key: string): Promise<boolean> {
    try {
      await this.#client.send(new HeadObjectCommand({ Bucket: this.#bucket, Key: key }));
      return true;
    } catch (err) {
      if (isMissing(err)) return false;
      throw err;
    }
  }
}

// HeadObject has no body to carry an error code: its 404 is named NotFound.
const isMissing = (err: unknown) => err instanceof Error && (err.name === "NoSuchKey" || err.name === "NotFound");

const free = async () => {
  const fs = await statfs(COPIES);
  return fs.bavail * fs.bsize;
};

/**
 * Room in the temporary storage for a copy of `bytes`: other objects' copies are removed, least recently
 * copied first, until it fits (a reader that has one open keeps reading it: Linux frees a removed file's space
 * when its last reader closes it). A file that cannot fit is refused, saying what to change.
 */
async function makeRoom(bytes: number): Promise<void> {
  // A little to spare: SQLite's own temporary files (sorting) live on the same storage.
  const needed = bytes + 16 * 1024 ** 2;
  if ((await free()) >= needed) return;
  const copies = await Promise.all(
    (await readdir(COPIES))
      .filter((f) => !f.endsWith(".part"))
      .map(async (f) => ({
        f,
        at: await stat(join(COPIES, f)).then(
          (st) => st.mtimeMs,
          () => 0,
        ),
      })),
  );
  for (const { f } of copies.sort((a, b) => a.at - b.at)) {
    await rm(join(COPIES, f), { force: true });
    if ((await free()) >= needed) return;
  }
  const mb = (n: number) => Math.ceil(n / 1024 ** 2);
  throw new StorageError(
    `The file (${mb(bytes)} MB) is larger than the function's free temporary storage (${mb(await free())} MB): deploy with a larger -c ephemeralStorageMb.`,
  );
}

const tooLarge = (maxBytes: number) => new StorageError(`The file is larger than ${maxBytes} bytes.`);

function checkRange(offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0 || !Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`bad byte range: offset ${offset}, length ${length}`);
  }
}

/** Whether an object or common prefix below a folder names an entry a path can reach. */
function isName(name: string): boolean {
  if (name === "" || name.includes("/")) return false;
  try {
    return safeRelativePath(name) === name;
  } catch {
    return false;
  }
}

const byName = (a: Entry, b: Entry) =>
  a.name < b.name ? -1 : a.name > b.name ? 1 : a.kind < b.kind ? -1 : a.kind > b.kind ? 1 : 0;

/** Lets go of a response body left unread, so its connection is not held. */
function discard(body: unknown): void {
  (body as { destroy?: () => void } | undefined)?.destroy?.();
}

/**
 * Reads a response body: `skip` bytes passed over, then at most `limit` kept. Stops reading as soon as it has
 * them (ending the response early), and says whether more followed.
 */
async function readBody(body: unknown, skip: number, limit: number): Promise<{ data: Buffer; more: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let toSkip = skip;
  let more = false;
  if (body) {
    for await (const chunk of body as AsyncIterable<Uint8Array>) {
      let part = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
      if (toSkip > 0) {
        const skipped = Math.min(toSkip, part.length);
        part = part.subarray(skipped);
        toSkip -= skipped;
      }
      if (size + part.length > limit) {
        chunks.push(part.subarray(0, limit - size));
        size = limit;
        more = true;
        break;
      }
      chunks.push(part);
      size += part.length;
    }
  }
  return { data: Buffer.concat(chunks, size), more };
}
