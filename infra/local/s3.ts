// s3rver, in-process, listening on loopback: cloud stores are read from it through the ordinary AWS SDK, as
// from S3 on AWS. s3rver is no longer maintained; the few places where it parts from S3 in ways the SDK
// meets are put right here, per request, without touching its files.
import { createReadStream, type Dirent } from "node:fs";
import { mkdir, mkdtemp, readdir, rm } from "node:fs/promises";
import type { Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";

export interface LocalS3 {
  /** `http://127.0.0.1:<port>`: for `AWS_ENDPOINT_URL_S3`, with path-style addressing. */
  readonly endpoint: string;
  close(): Promise<void>;
}

// The parts of s3rver (CommonJS, untyped) used here.
interface StoredObject {
  readonly size: number;
  content: Readable | null;
  range?: { start: number; end: number };
}
interface ListOptions {
  readonly prefix?: string;
  readonly delimiter?: string;
  readonly startAfter?: string;
  readonly maxKeys?: number;
}
interface FilesystemStore {
  getObject(bucket: string, key: string, options?: object): Promise<StoredObject | null>;
  getMetadata(bucket: string, key: string): Promise<object>;
  getResourcePath(bucket: string, key: string, resource: "object"): string;
  getBucketPath(bucket: string): string;
}
/** What one listing request learns on its way: where it starts, whether it was cut short and where. */
interface ListingState {
  after: string | undefined;
  truncated: boolean;
  last: string;
}
interface Context {
  readonly method: string;
  query: Record<string, string | string[] | undefined>;
  get(header: string): string;
  store: FilesystemStore;
  body: unknown;
}
type Middleware = ((ctx: Context, next: () => Promise<void>) => Promise<void>) & { router?: unknown };
interface S3rverApp {
  readonly middleware: Middleware[];
  readonly store: FilesystemStore;
  readonly httpServer?: Server;
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
interface S3rverOptions {
  address: string;
  port: number;
  directory: string;
  silent: boolean;
  vhostBuckets: boolean;
}

const require = createRequire(import.meta.url);
const S3rver = require("s3rver") as new (options: S3rverOptions) => S3rverApp;
const S3Error = require("s3rver/lib/models/error.js") as new (code: string, message: string) => Error;
const S3Object = require("s3rver/lib/models/object.js") as new (
  bucket: string,
  key: string,
  content: null,
  metadata: object,
) => unknown;
const accounts = require("s3rver/lib/models/account.js") as {
  registry: Map<string, unknown>;
  readonly DUMMY_ACCOUNT: unknown;
};

// s3rver knows one access key id (S3RVER) and checks no SigV4 signature; the handlers sign with whatever
// credentials the environment holds, as they do against dynalite, so every key id stands for its one account.
class AnyKeyRegistry extends Map<string, unknown> {
  override get(id: string) {
    return super.get(id) ?? accounts.DUMMY_ACCOUNT;
  }
}
accounts.registry = new AnyKeyRegistry(accounts.registry);

/** Starts s3rver on 127.0.0.1 at a free port, its buckets in `dataDir` (a temporary folder when undefined). */
export async function startS3(dataDir: string | undefined): Promise<LocalS3> {
  const directory = dataDir ?? (await mkdtemp(join(tmpdir(), "mapgate-s3-")));
  const forget = () => (dataDir ? Promise.resolve() : rm(directory, { recursive: true, force: true }));
  try {
    if (dataDir) await mkdir(dataDir, { recursive: true });
    // silent quiets both s3rver's logger and Koa's error printing (Koa reads the same `silent` property).
    const app = new S3rver({ address: "127.0.0.1", port: 0, directory, silent: true, vhostBuckets: false });
    // Koa composes its middleware when the server starts listening: what is added now runs on every request.
    const routes = app.middleware.findIndex((m) => m.router !== undefined);
    if (routes < 0) throw new Error("s3rver has no router middleware where one was expected");
    app.middleware.splice(routes, 0, fixes as Middleware);
    const { port } = await app.run();
    return {
      endpoint: `http://127.0.0.1:${port}`,
      close: async () => {
        const closing = app.close();
        // The SDK keeps connections alive; without this, closing waits for them to time out.
        app.httpServer?.closeAllConnections();
        await closing;
        await forget();
      },
    };
  } catch (err) {
    await forget();
    throw err;
  }
}

async function fixes(ctx: Context, next: () => Promise<void>): Promise<void> {
  // s3rver stores an aws-chunked body (the SDK's default for stream uploads, checksum trailer included)
  // as it comes, framing and all: refused, rather than kept corrupt.
  if (/aws-chunked/i.test(ctx.get("content-encoding"))) {
    throw new S3Error(
      "NotImplemented",
      "aws-chunked uploads are not supported here: set AWS_REQUEST_CHECKSUM_CALCULATION=WHEN_REQUIRED",
    );
  }
  const store = ctx.store;
  const overrides: PropertyDescriptorMap = {};
  const listing: ListingState = { after: undefined, truncated: false, last: "" };
  overrides.listObjects = {
    value: (bucket: string, options: ListOptions) => listObjects(store, bucket, options, listing),
  };
  // s3rver's own continuation tokens are DES-encrypted, which OpenSSL 3 (Node 17 on) no longer offers.
  const tokenValue = ctx.query["continuation-token"];
  const token = typeof tokenValue === "string" && tokenValue !== "" ? tokenValue : undefined;
  if (ctx.method === "GET" && ctx.query["list-type"] === "2" && token) {
    const { "continuation-token": _token, ...query } = ctx.query;
    ctx.query = query;
    listing.after = Buffer.from(token, "base64url").toString("utf8");
  }
  if ((ctx.method === "GET" || ctx.method === "HEAD") && ctx.get("range")) {
    const range = parseRange(ctx.get("range"));
    if (range) overrides.getObject = { value: (bucket: string, key: string) => getRange(store, bucket, key, range) };
  }
  ctx.store = Object.create(store, overrides) as FilesystemStore;
  await next();

  const result = (ctx.body as { ListBucketResult?: Record<string, unknown> } | undefined)?.ListBucketResult;
  if (!result) return;
  if (token) {
    result.ContinuationToken = token;
    result.StartAfter = undefined;
  }
  if (listing.truncated) {
    result.IsTruncated = true;
    if (ctx.query["list-type"] === "2") {
      result.NextContinuationToken = Buffer.from(listing.last, "utf8").toString("base64url");
    } else if (result.Delimiter !== undefined) {
      result.NextMarker = listing.last;
    }
  }
}

/**
 * Ranges as S3 answers them. s3rver reads `bytes=0-0` as the whole object, answers a range of an empty
 * object with a Content-Length its body does not have, and reads `bytes=-N` as the first N+1 bytes.
 */
type Range = { readonly first: number; readonly last: number } | { readonly suffix: number };

function parseRange(header: string): Range | undefined {
  const match = /^bytes=(\d*)-(\d*)$/.exec(header);
  const first = match?.[1] ?? "";
  const last = match?.[2] ?? "";
  // S3 ignores a Range it cannot parse (several ranges, last before first) and answers the whole object.
  if (!match || (first === "" && last === "")) return undefined;
  if (first === "") return { suffix: Number(last) };
  const range = { first: Number(first), last: last === "" ? Infinity : Number(last) };
  return range.last < range.first ? undefined : range;
}

async function getRange(store: FilesystemStore, bucket: string, key: string, range: Range) {
  const object = await store.getObject(bucket, key);
  if (!object) return object;
  object.content?.destroy();
  const size = object.size;
  const start = "suffix" in range ? Math.max(0, size - range.suffix) : range.first;
  const end = "suffix" in range ? size - 1 : Math.min(range.last, size - 1);
  const satisfiable = start <= end && !("suffix" in range && range.suffix === 0);
  object.range = { start, end };
  // No content: s3rver answers 416 InvalidRange, as S3 does for a range starting at or past the end.
  object.content = satisfiable ? createReadStream(store.getResourcePath(bucket, key, "object"), { start, end }) : null;
  return object;
}

/**
 * Object listings as S3 makes them, over s3rver's folders (a key's `/` are folders, the object a file
 * named `<last part>._S3rver_object`). s3rver's own leaves out every common prefix whose objects all lie
 * two or more folders below it (`tiles/` of `tiles/0/0/0.pbf`), does not count common prefixes against
 * max-keys, and pages with tokens it can no longer make. Here a page ends on its last key or common
 * prefix, and the next page starts after it.
 */
async function listObjects(
  store: FilesystemStore,
  bucket: string,
  options: ListOptions,
  state: ListingState,
): Promise<{ objects: unknown[]; commonPrefixes: string[]; isTruncated: false }> {
  const query = {
    prefix: options.prefix ?? "",
    delimiter: options.delimiter ?? "",
    after: state.after ?? options.startAfter ?? "",
  };
  const maxKeys = options.maxKeys ?? 1000;
  const keys: string[] = [];
  const commonPrefixes: string[] = [];
  let last: string | undefined;
  for await (const item of walk(store.getBucketPath(bucket), "", query)) {
    const name = "key" in item ? item.key : item.prefix;
    // The keys under one common prefix come one after another: it is named once.
    if (name === last) continue;
    if (keys.length + commonPrefixes.length >= maxKeys) {
      state.truncated = true;
      break;
    }
    ("key" in item ? keys : commonPrefixes).push(name);
    last = name;
  }
  state.last = last ?? "";
  const objects = await Promise.all(
    keys.map((key) =>
      store.getMetadata(bucket, key).then(
        (metadata) => new S3Object(bucket, key, null, metadata),
        (err: NodeJS.ErrnoException) => {
          if (err.code === "ENOENT") return undefined;
          throw err;
        },
      ),
    ),
  );
  return { objects: objects.filter((o) => o !== undefined), commonPrefixes, isTruncated: false };
}

const OBJECT_FILE = "._S3rver_object";

type Item = { readonly key: string } | { readonly prefix: string };

/** The keys and common prefixes below a folder standing for the keys starting with `base`, in key order. */
async function* walk(
  folder: string,
  base: string,
  query: { prefix: string; delimiter: string; after: string },
): AsyncGenerator<Item> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(folder, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return;
    throw err;
  }
  // Sorted by the keys they stand for: the folder `a` holds keys `a/…`, which come after the key `a.txt`.
  const entries = dirents
    .flatMap((d): { key: string; folder?: string }[] => {
      // s3rver's own folders (multipart uploads) hold no objects.
      if (d.isDirectory()) return d.name.includes("._S3rver_") ? [] : [{ key: `${base}${d.name}/`, folder: d.name }];
      return d.name.endsWith(OBJECT_FILE) ? [{ key: base + d.name.slice(0, -OBJECT_FILE.length) }] : [];
    })
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const { prefix, delimiter, after } = query;
  for (const entry of entries) {
    if (entry.folder === undefined) {
      const item = itemOf(entry.key, query);
      if (item) yield item;
      continue;
    }
    // Every key below starts with entry.key: none can match the prefix, or all come before the start.
    if (!entry.key.startsWith(prefix) && !prefix.startsWith(entry.key)) continue;
    if (entry.key <= after && !after.startsWith(entry.key)) continue;
    const sub = join(folder, entry.folder);
    // A folder right at the prefix's level is one common prefix for "/": no need to go through it all.
    if (
      delimiter === "/" &&
      entry.key.startsWith(prefix) &&
      entry.key.indexOf("/", prefix.length) === entry.key.length - 1
    ) {
      if (entry.key > after && (await holdsObject(sub))) yield { prefix: entry.key };
      continue;
    }
    yield* walk(sub, entry.key, query);
  }
}

/** A key as listed: itself, or the common prefix it rolls up into; undefined when not listed. */
function itemOf(key: string, query: { prefix: string; delimiter: string; after: string }): Item | undefined {
  const { prefix, delimiter, after } = query;
  if (!key.startsWith(prefix)) return undefined;
  const at = delimiter ? key.indexOf(delimiter, prefix.length) : -1;
  if (at < 0) return key > after ? { key } : undefined;
  const rolled = key.slice(0, at + delimiter.length);
  return rolled > after ? { prefix: rolled } : undefined;
}

async function holdsObject(folder: string): Promise<boolean> {
  let dirents: Dirent[];
  try {
    dirents = await readdir(folder, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return false;
    throw err;
  }
  if (dirents.some((d) => !d.isDirectory() && d.name.endsWith(OBJECT_FILE))) return true;
  for (const d of dirents) {
    if (d.isDirectory() && !d.name.includes("._S3rver_") && (await holdsObject(join(folder, d.name)))) return true;
  }
  return false;
}
