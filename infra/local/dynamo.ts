// dynalite, in-process, behind the transaction layer. SDK clients of this process whose endpoint is the store's
// reach it without a socket (see in-process-dynamo.ts); everything else (the operator command, tests, another
// process) reaches it over loopback HTTP at `endpoint`.
// First: it registers the in-process client options before anything here can load shared/stores/dynamo.ts.
import { registerInProcessStore } from "./in-process-dynamo.ts";
import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createRequire } from "node:module";
import { CreateTableCommand, DynamoDBClient, ResourceInUseException } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { TABLES, type TableSpec } from "#shared/system.ts";
import type { StoreAnswer, StoreCall } from "./store-call.ts";
import { openTransactionLayer, serveHttp } from "./transactions.ts";

/** A LevelDB iterator as abstract-level makes it (the iterators of dynalite's `level` and `memory-level`). */
interface LevelIterator {
  close(): Promise<void>;
  return?: () => Promise<void>;
}
/** What dynalite's store module (`dynalite/db`) gives for one store, as far as the wrapper below needs it. */
interface DynaliteStore {
  readonly db: { keys(options?: object): LevelIterator; values(options?: object): LevelIterator };
}
/** Set on dynalite's store module once wrapped (a second copy of this module must not wrap it again). */
const WRAPPED = Symbol.for("mapgate.dynalite.iteratorsClose");

/**
 * dynalite reads every Query, Scan and table listing through a stream over a LevelDB iterator, and that
 * stream's destroy (when the read ends, or stops at its Limit) ends the iterator only by calling
 * `iterator.return()`. abstract-level's iterators have no `return()` (they end with `close()`), so none was
 * ever closed: each stayed attached to its database (which closes its iterators only when it closes) with all
 * it held (on disk, a LevelDB snapshot, which also keeps replaced data from being compacted away), and the
 * engine grew by kilobytes with every Query, for good. So every store dynalite creates in this process gets
 * iterators whose `return()` closes them. dynalite's `index.js` calls its store module's `create` through the
 * module object at each `dynalite()`, so wrapping `create` before any store exists is enough. Loud if dynalite
 * changes shape: the leak would come back silently otherwise (test/store-memory.test.ts measures it).
 */
function closeIteratorsWhenStreamsEnd(): void {
  const stores = createRequire(import.meta.url)("dynalite/db") as {
    create?: (options: object) => DynaliteStore;
    [WRAPPED]?: true;
  };
  const create = stores.create;
  if (typeof create !== "function") throw new Error("dynalite/db has no create(): see infra/local/dynamo.ts");
  if (stores[WRAPPED]) return;
  const closing = (open: (options?: object) => LevelIterator) => (options?: object) => {
    const iterator = open(options);
    iterator.return ??= () => iterator.close();
    return iterator;
  };
  stores.create = (options) => {
    const store = create(options);
    store.db.keys = closing(store.db.keys.bind(store.db));
    store.db.values = closing(store.db.values.bind(store.db));
    return store;
  };
  stores[WRAPPED] = true;
}
closeIteratorsWhenStreamsEnd();

export interface LocalDynamo {
  readonly endpoint: string;
  close(): Promise<void>;
}

export const localTableName = (name: string) => `mapgate-${name}`;

/**
 * dynalite behind the transaction layer: what the handlers of the local engine talk to. With a journal, a
 * transaction a crash interrupted is rolled back before the endpoint is returned, so nothing reads it half-done.
 * dynalite never asks LevelDB for synced writes: each acknowledged write has reached the kernel (it survives
 * the process being killed) but not necessarily the disk (a power cut may lose the last ones).
 */
export async function startDynamo(path: string | undefined, journal?: string): Promise<LocalDynamo> {
  const store = await startDynalite(path);
  const cleanups: (() => Promise<void>)[] = [() => store.close()];
  const undo = async () => {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
  };
  try {
    const layer = await openTransactionLayer(store.call, journal ? { journal } : {});
    cleanups.push(() => layer.close());
    const http = await serveHttp(layer.handle);
    cleanups.push(() => http.close());
    const unregister = registerInProcessStore(http.endpoint, layer.handle);
    cleanups.push(async () => unregister());
    return { endpoint: http.endpoint, close: undo };
  } catch (err) {
    await undo();
    throw err;
  }
}

interface Dynalite {
  /** One request answered by dynalite's own request listener, in this process. */
  readonly call: StoreCall;
  close(): Promise<void>;
}

/**
 * dynalite driven through its request listener with a minimal request and response in memory: the same
 * parsing, validation, errors and answers as over HTTP, without the socket. It still listens on a loopback
 * port nobody is given, because closing its server is what closes its LevelDB store.
 */
async function startDynalite(path: string | undefined): Promise<Dynalite> {
  // No path: in memory (tests).
  const server = dynalite({ ...(path ? { path } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const [listener] = server.listeners("request") as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (!listener) throw new Error("dynalite has no request listener");
  const call: StoreCall = (target, headers, body) =>
    new Promise<StoreAnswer>((resolve, reject) => {
      const req = Object.assign(new EventEmitter(), {
        method: "POST",
        url: "/",
        headers: { ...headers, "x-amz-target": target },
      });
      const out: Record<string, string> = {};
      let done = false;
      const res = {
        statusCode: 200,
        setHeader(name: string, value: unknown) {
          out[name.toLowerCase()] = String(value);
        },
        end(chunk?: string | Buffer) {
          if (done) return;
          done = true;
          delete out["content-length"];
          delete out["transfer-encoding"];
          resolve({
            status: res.statusCode,
            headers: out,
            body: chunk === undefined ? Buffer.alloc(0) : Buffer.from(chunk),
          });
        },
      };
      try {
        listener(req as unknown as IncomingMessage, res as unknown as ServerResponse);
        if (body.length > 0) req.emit("data", body);
        req.emit("end");
      } catch (err) {
        reject(err instanceof Error ? err : new Error(String(err)));
      }
    });
  return {
    call,
    close: () => new Promise<void>((resolve, reject) => server.close((err?: Error) => (err ? reject(err) : resolve()))),
  };
}

function createInput(spec: TableSpec) {
  const attributes = new Set<string>([spec.partitionKey]);
  if (spec.sortKey) attributes.add(spec.sortKey);
  for (const index of spec.indexes ?? []) {
    attributes.add(index.partitionKey);
    if (index.sortKey) attributes.add(index.sortKey);
  }
  const keySchema = (pk: string, sk?: string) => [
    { AttributeName: pk, KeyType: "HASH" as const },
    ...(sk ? [{ AttributeName: sk, KeyType: "RANGE" as const }] : []),
  ];
  return {
    TableName: localTableName(spec.name),
    BillingMode: "PAY_PER_REQUEST" as const,
    AttributeDefinitions: [...attributes].map((AttributeName) => ({ AttributeName, AttributeType: "S" as const })),
    KeySchema: keySchema(spec.partitionKey, spec.sortKey),
    ...(spec.indexes?.length
      ? {
          GlobalSecondaryIndexes: spec.indexes.map((i) => ({
            IndexName: i.name,
            KeySchema: keySchema(i.partitionKey, i.sortKey),
            Projection: { ProjectionType: "ALL" as const },
          })),
        }
      : {}),
  };
}

/** Creates every declared table that does not exist yet (the same declarations the CDK stack uses). */
export async function createTables(endpoint: string): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    for (const spec of TABLES) {
      try {
        await client.send(new CreateTableCommand(createInput(spec)));
      } catch (err) {
        if (!(err instanceof ResourceInUseException)) throw err;
      }
    }
  } finally {
    client.destroy();
  }
}
