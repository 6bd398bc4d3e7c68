// dynalite has no TransactWriteItems. The local engine puts this layer in front of it: every request is
// passed on unchanged, except that writes are serialised and TransactWriteItems is carried out as
// ordinary conditional writes under that same lock, rolled back from pre-images if any condition fails.
// Handlers keep making plain AWS SDK calls; only the local engine knows this exists. Its core takes a request
// (target, headers, body) and returns the answer (status, headers, body), so it serves both the SDK clients of
// the engine's own process (in-process, see in-process-dynamo.ts) and, through a thin HTTP server, everything
// still on a socket (the operator command, tests).
// Limit (documented in docs/local-engine.md, "The store"): reads are not serialised, so a reader may glimpse a
// transaction half-applied for the few milliseconds it takes. Writers never can.
// A crash cannot leave one half-applied: with a journal file (the engine's data folder has one), each
// transaction's pre-images are made durable there before its first write, and the next start rolls back
// whatever the journal still holds before the layer serves anyone.
import { createHash } from "node:crypto";
import { constants } from "node:fs";
import { type FileHandle, open, readFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { dirname } from "node:path";
import { ItemCache, type WriteTarget } from "./item-cache.ts";
import type { StoreAnswer, StoreCall } from "./store-call.ts";

/**
 * Test hook, never set in use: milliseconds to wait between the writes of one transaction, so a crash test
 * can reliably kill the engine while a transaction is half-applied.
 */
const STEP_DELAY_MS = Number(process.env.MAPGATE_TEST_TRANSACTION_STEP_DELAY_MS) || 0;

const WRITES = new Set(["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"]);
/** Requests that change nothing; any other (table operations, tags, unknown targets) counts as a write. */
const READS = new Set([
  "GetItem",
  "BatchGetItem",
  "Query",
  "Scan",
  "DescribeTable",
  "ListTables",
  "DescribeTimeToLive",
  "ListTagsOfResource",
]);
const PREFIX = "DynamoDB_20120810.";

type Json = Record<string, unknown>;

interface Step {
  op: string;
  body: Json;
  table: string;
  key: Json;
  before: Json | undefined;
  check: boolean;
}

type Upstream = StoreAnswer;

class Lock {
  #tail: Promise<void> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

/** What one key of a transaction held before it began; no `before` when the item did not exist. */
interface PreImage {
  table: string;
  key: Json;
  before?: Json;
}

const digest = (body: Buffer) => createHash("sha256").update(body).digest("hex");

/**
 * The write-ahead journal: the pre-images of the one transaction being applied (writes are serialised, so
 * there is never more than one), as a single record `<sha256 of body> <body length>\n<body>` at the start of
 * the file. An empty file means no transaction is in flight.
 */
class Journal {
  readonly #handle: FileHandle;

  private constructor(handle: FileHandle) {
    this.#handle = handle;
  }

  static async open(file: string): Promise<Journal> {
    const handle = await open(file, constants.O_RDWR | constants.O_CREAT, 0o600);
    // So the file itself survives a power cut; best effort, as some systems cannot sync a directory.
    const dir = await open(dirname(file), "r").catch(() => undefined);
    await dir?.sync().catch(() => undefined);
    await dir?.close();
    return new Journal(handle);
  }

  /**
   * The record left by a transaction that never finished. A torn record (the crash came while it was being
   * written) is no record: no write of its transaction starts before the whole record is on disk.
   */
  static async read(file: string): Promise<PreImage[] | undefined> {
    const content = await readFile(file).catch((err: NodeJS.ErrnoException) => {
      if (err.code === "ENOENT") return Buffer.alloc(0);
      throw err;
    });
    const newline = content.indexOf(10);
    if (newline < 0) return undefined;
    const [sum, length] = content.subarray(0, newline).toString("latin1").split(" ");
    const body = content.subarray(newline + 1, newline + 1 + Number(length));
    if (body.length !== Number(length) || digest(body) !== sum) return undefined;
    return JSON.parse(body.toString("utf8")) as PreImage[];
  }

  /** Durable before it returns: only then may the transaction's first write start. */
  async begin(images: PreImage[]): Promise<void> {
    const body = Buffer.from(JSON.stringify(images));
    const record = Buffer.concat([Buffer.from(`${digest(body)} ${body.length}\n`, "latin1"), body]);
    for (let at = 0; at < record.length;) {
      at += (await this.#handle.write(record, at, record.length - at, at)).bytesWritten;
    }
    await this.#handle.datasync();
  }

  /**
   * Not synced, deliberately: dynalite does not sync its own writes either (see `startDynamo`), so after a
   * power cut the journal coming back is what keeps a transaction whose writes were half lost all-or-nothing.
   * A process crash loses nothing the kernel was handed, so there this costs nothing.
   */
  async end(): Promise<void> {
    await this.#handle.truncate(0);
  }

  close(): Promise<void> {
    return this.#handle.close();
  }
}

/** The headers dynalite insists on, for the layer's own requests (it checks no signature). */
export const OWN_HEADERS: Readonly<Record<string, string>> = {
  "content-type": "application/x-amz-json-1.0",
  authorization:
    "AWS4-HMAC-SHA256 Credential=local/20200101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=0",
  "x-amz-date": "20200101T000000Z",
};

export interface TransactionLayer {
  /** Answers one request as DynamoDB would (transactions included), without any socket. */
  readonly handle: StoreCall;
  close(): Promise<void>;
}

export interface LayerOptions {
  /** The journal file that makes transactions atomic across crashes; none for a store in memory. */
  readonly journal?: string;
  /** Answer the engine's own GetItem and BatchGetItem from the item cache (item-cache.ts); on unless false. */
  readonly itemCache?: boolean;
}

/** The items a write names, as far as its body tells; undefined when it may change anything. */
function writeTargets(op: string, input: Json | undefined): WriteTarget[] | undefined {
  if (!input) return undefined;
  const one = (body: unknown, kind: "key" | "item"): WriteTarget | undefined => {
    if (typeof body !== "object" || body === null) return undefined;
    const b = body as Json;
    const value = kind === "key" ? b.Key : b.Item;
    if (typeof b.TableName !== "string" || typeof value !== "object" || value === null) return undefined;
    return kind === "key" ? { table: b.TableName, key: value as Json } : { table: b.TableName, item: value as Json };
  };
  const all = (targets: (WriteTarget | undefined)[]) =>
    targets.every((t) => t !== undefined) ? (targets as WriteTarget[]) : undefined;
  switch (op) {
    case "PutItem":
      return all([one(input, "item")]);
    case "UpdateItem":
    case "DeleteItem":
      return all([one(input, "key")]);
    case "BatchWriteItem": {
      const requested = input.RequestItems;
      if (typeof requested !== "object" || requested === null) return undefined;
      return all(
        Object.entries(requested as Json).flatMap(([table, list]) =>
          Array.isArray(list)
            ? list.map((r: Json | null) =>
                r?.PutRequest
                  ? one({ TableName: table, ...(r.PutRequest as Json) }, "item")
                  : r?.DeleteRequest
                    ? one({ TableName: table, ...(r.DeleteRequest as Json) }, "key")
                    : undefined,
              )
            : [undefined],
        ),
      );
    }
    case "TransactWriteItems": {
      const items = input.TransactItems;
      if (!Array.isArray(items)) return undefined;
      return all(
        items.map((entry: Json | null) => {
          const [kind, body] = Object.entries(entry ?? {})[0] ?? [];
          return kind === "Put" ? one(body, "item") : one(body, "key");
        }),
      );
    }
    default:
      return undefined;
  }
}

/**
 * The transaction layer over `forward` (dynalite). With a journal, a transaction a crash interrupted is rolled
 * back before this returns.
 */
export async function openTransactionLayer(forward: StoreCall, options: LayerOptions = {}): Promise<TransactionLayer> {
  const lock = new Lock();
  const schemas = new Map<string, string[]>();
  // Set when the journal could not be written or cleared, or dynalite failed in mid-transaction: the journal
  // may then hold pre-images that later writes would make stale (a rollback at the next start would undo
  // them), so no write is taken until a restart has rolled the transaction back.
  let broken: unknown;
  let journal: Journal | undefined;

  const call = async (
    op: string,
    headers: Record<string, string>,
    input: Json,
  ): Promise<{ ok: boolean; out: Json; raw: Upstream }> => {
    const raw = await forward(PREFIX + op, headers, Buffer.from(JSON.stringify(input)));
    const out = raw.body.length ? (JSON.parse(raw.body.toString("utf8")) as Json) : {};
    return { ok: raw.status === 200, out, raw };
  };

  const keyNames = async (table: string, headers: Record<string, string>): Promise<string[]> => {
    const known = schemas.get(table);
    if (known) return known;
    const { ok, out } = await call("DescribeTable", headers, { TableName: table });
    if (!ok) throw new Error(`no table ${table}`);
    const names = ((out.Table as Json).KeySchema as { AttributeName: string }[]).map((k) => k.AttributeName);
    schemas.set(table, names);
    return names;
  };

  /** DynamoDB's answer to a request it refuses before doing anything. */
  const invalid = (message: string): Upstream => ({
    status: 400,
    headers: { "content-type": "application/x-amz-json-1.0" },
    body: Buffer.from(JSON.stringify({ __type: "com.amazon.coral.validate#ValidationException", message })),
  });

  const cancelled = (reasons: { Code: string; Message?: string }[]): Upstream => ({
    status: 400,
    headers: { "content-type": "application/x-amz-json-1.0" },
    body: Buffer.from(
      JSON.stringify({
        __type: "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(", ")}]`,
        CancellationReasons: reasons,
      }),
    ),
  });

  const transact = async (headers: Record<string, string>, input: Json): Promise<Upstream> => {
    const items = (input.TransactItems ?? []) as Json[];
    if (items.length === 0 || items.length > 100) {
      return invalid("TransactItems must have 1 to 100 items");
    }
    // Pre-images first, so any partial application can be undone.
    const steps: Step[] = [];
    for (const item of items) {
      const [kind, body] = Object.entries(item)[0] as [string, Json];
      const table = body.TableName as string;
      let key = body.Key as Json | undefined;
      if (kind === "Put") {
        const names = await keyNames(table, headers);
        key = Object.fromEntries(names.map((n) => [n, (body.Item as Json)[n]]));
      }
      const { out } = await call("GetItem", headers, { TableName: table, Key: key, ConsistentRead: true });
      // A ConditionCheck runs as a conditional DeleteItem: where the item is absent nothing is written at all
      // (an update would create a key-only item readers could see); where it exists it is put back at once.
      const op = kind === "Put" ? "PutItem" : kind === "Update" ? "UpdateItem" : "DeleteItem";
      const request_: Json = { ...body };
      delete request_.ReturnValuesOnConditionCheckFailure;
      steps.push({
        op,
        body: request_,
        table,
        key: key as Json,
        before: out.Item as Json | undefined,
        check: kind === "ConditionCheck",
      });
    }
    // DynamoDB refuses a transaction that touches one item twice (before anything is written): so does this one,
    // or a request that fails on AWS would pass here.
    const touched = new Set(
      steps.map(
        (st) => `${st.table}\u0000${JSON.stringify(Object.entries(st.key).sort(([a], [b]) => (a < b ? -1 : 1)))}`,
      ),
    );
    if (touched.size < steps.length) {
      return invalid("Transaction request cannot include multiple operations on one item");
    }
    if (journal) {
      try {
        await journal.begin(
          steps.map((s) => ({ table: s.table, key: s.key, ...(s.before ? { before: s.before } : {}) })),
        );
      } catch (err) {
        // Perhaps written whole but not synced: it must not be left to roll back later writes.
        broken = err;
        throw err;
      }
    }
    try {
      const answer = await apply(headers, steps);
      await journal?.end();
      return answer;
    } catch (err) {
      if (journal) broken = err;
      throw err;
    }
  };

  /** Puts back what the steps' keys held before, last write first; a restore that fails throws. */
  const restore = async (headers: Record<string, string>, images: PreImage[]) => {
    for (const image of [...images].reverse()) {
      const { ok, out } = image.before
        ? await call("PutItem", headers, { TableName: image.table, Item: image.before })
        : await call("DeleteItem", headers, { TableName: image.table, Key: image.key });
      // A table deleted since holds nothing to put back.
      if (!ok && !String(out.__type).endsWith("ResourceNotFoundException"))
        throw new Error(`could not restore an item of ${image.table}: ${String(out.message ?? out.__type)}`);
    }
  };

  const apply = async (headers: Record<string, string>, steps: Step[]): Promise<Upstream> => {
    const done: Step[] = [];
    for (const [i, s] of steps.entries()) {
      if (i > 0 && STEP_DELAY_MS > 0) await new Promise((r) => setTimeout(r, STEP_DELAY_MS));
      const result = await call(s.op, headers, s.body);
      if (!result.ok) {
        await restore(headers, done);
        const type = String(result.out.__type ?? "");
        if (type.endsWith("ConditionalCheckFailedException")) {
          return cancelled(
            steps.map((_, j) =>
              j === i
                ? { Code: "ConditionalCheckFailed", Message: "The conditional request failed" }
                : { Code: "None" },
            ),
          );
        }
        return result.raw;
      }
      done.push(s);
    }
    // A ConditionCheck only checks: undo the no-op update that carried its condition.
    await restore(
      headers,
      done.filter((s) => s.check),
    );
    return { status: 200, headers: { "content-type": "application/x-amz-json-1.0" }, body: Buffer.from("{}") };
  };

  /**
   * Rolls back the transaction a crash interrupted, before anyone can read the store. Back, not forward: its
   * client never had an answer, so either outcome is allowed, and only pre-images restore with plain puts and
   * deletes that are safe to repeat (a crash during recovery just means recovering again at the next start);
   * rolling forward would re-run updates and conditions over a half-written state (`SET n = n + :d` twice).
   */
  const recover = async (file: string): Promise<number> => {
    const images = await Journal.read(file);
    if (!images?.length) return 0;
    await restore(OWN_HEADERS, images);
    return images.length;
  };

  const unavailable = (): Upstream => ({
    status: 500,
    headers: { "content-type": "application/x-amz-json-1.0" },
    body: Buffer.from(
      JSON.stringify({
        __type: "com.amazonaws.dynamodb.v20120810#InternalServerError",
        message: `the local store takes no writes after its transaction journal failed (${String(broken)}): restart the engine to roll back the interrupted transaction`,
      }),
    ),
  });

  const cache = options.itemCache === false ? undefined : new ItemCache((table) => keyNames(table, OWN_HEADERS));

  /** Only what the engine's own clients send may be answered from the cache (dynalite's header checks pass). */
  const own = (headers: Record<string, string>) =>
    headers.authorization === OWN_HEADERS.authorization &&
    headers["x-amz-date"] === OWN_HEADERS["x-amz-date"] &&
    headers["content-type"] === OWN_HEADERS["content-type"];

  const parse = (body: Buffer): Json | undefined => {
    try {
      const value: unknown = JSON.parse(body.toString("utf8"));
      return typeof value === "object" && value !== null && !Array.isArray(value) ? (value as Json) : undefined;
    } catch {
      return undefined;
    }
  };

  const handle: StoreCall = async (targetHeader, headers, body) => {
    const op = targetHeader.startsWith(PREFIX) ? targetHeader.slice(PREFIX.length) : "";
    const pass = () => forward(targetHeader, headers, body);
    if (READS.has(op)) {
      if (cache && own(headers) && (op === "GetItem" || op === "BatchGetItem")) {
        const input = parse(body);
        if (input) return op === "GetItem" ? cache.getItem(input, pass) : cache.batchGetItem(input, pass);
      }
      return pass();
    }
    const input = parse(body);
    const write = <T>(run: () => Promise<T>) => (cache ? cache.write(writeTargets(op, input), run) : run());
    if (op === "TransactWriteItems") {
      // dynalite's own answer to a body that is not a JSON object (it knows no transactions, so it says so)
      if (!input) return write(pass);
      return write(() => lock.run(() => (broken ? Promise.resolve(unavailable()) : transact(headers, input))));
    }
    if (WRITES.has(op)) return write(() => lock.run(() => (broken ? Promise.resolve(unavailable()) : pass())));
    // A table created, deleted or changed: its key schema may not be the one remembered.
    schemas.clear();
    try {
      return await write(pass);
    } finally {
      schemas.clear();
    }
  };

  if (options.journal) {
    const rolledBack = await recover(options.journal);
    if (rolledBack)
      console.warn(`mapgate: rolled back a transaction a crash interrupted (${rolledBack} items restored)`);
    journal = await Journal.open(options.journal);
    await journal.end();
  }

  return { handle, close: async () => journal?.close() };
}

export interface HttpStore {
  readonly endpoint: string;
  close(): Promise<void>;
}

/** Serves `handle` on a loopback port, for whatever reaches the store over a socket. */
export async function serveHttp(handle: StoreCall): Promise<HttpStore> {
  const answer = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined && !["host", "content-length", "connection", "x-amz-target"].includes(k))
        headers[k] = String(v);
    }
    const out = await handle(String(req.headers["x-amz-target"] ?? ""), headers, Buffer.concat(chunks));
    res.writeHead(out.status, { ...out.headers, "content-length": String(out.body.length) });
    res.end(out.body);
  };
  const server = createServer((req, res) => {
    answer(req, res).catch((err: unknown) => {
      if (res.headersSent) return res.destroy();
      res.writeHead(500, { "content-type": "application/x-amz-json-1.0" });
      res.end(JSON.stringify({ __type: "com.amazonaws.dynamodb.v20120810#InternalServerError", message: String(err) }));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
