// A read route's floor, in a child process of its own as the engine is: no pipeline and no route handler. Each
// request is answered with the route's recorded bytes after the DynamoDB requests the engine's handler sent for one
// warm request (bench/store-trace.ts), in the same order and grouping, through the same SDK clients
// (shared/stores/dynamo.ts) to the same in-process store: dynalite on a data folder behind the engine's transaction
// layer, seeded with the items those requests answered. A tile's floor also reads the tile as the route does (its
// bundle's index record and bytes, through the same storage reader).
// Usage: floor-server.ts SPEC.json [gateway|bare]; prints `floor <port>` when listening. `gateway` (the issue's
// floor): the engine's gateway, the stand-in for API Gateway, dispatches to a handler doing only that work, so
// what separates a route from it is the function's own work (pipeline, token, rendering, metrics). `bare`: plain
// node:http doing that work, no gateway.
import "#infra/local/in-process-dynamo.ts";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TracedCall } from "./store-trace.ts";

export interface FloorSpec {
  readonly status: number;
  readonly headers: Record<string, string>;
  /** The route's answer, base64. */
  readonly body: string;
  readonly calls: readonly TracedCall[];
  /** A tile read as the route reads it: the cache's folder store, the cache root in it, the tile. */
  readonly tile?: {
    readonly folder: string;
    readonly root: string;
    readonly level: number;
    readonly row: number;
    readonly col: number;
  };
}

const specFile = process.argv[2];
if (!specFile) throw new Error("usage: floor-server.ts SPEC.json");
const spec = JSON.parse(readFileSync(specFile, "utf8")) as FloorSpec;
const body = Buffer.from(spec.body, "base64");

// The engine's environment and store, on a data folder of this process's own (one process per dynalite folder).
const { createTables, startDynamo } = await import("#infra/local/dynamo.ts");
const { localEnvironment } = await import("#infra/local/engine.ts");
const dir = mkdtempSync(join(tmpdir(), "mapgate-floor-"));
const dynamo = await startDynamo(join(dir, "dynamo"), join(dir, "journal"));
await createTables(dynamo.endpoint);
Object.assign(process.env, localEnvironment(dynamo.endpoint, join(dir, "unused-key.json"), "https://localhost"));

const { batchGet, ddb } = await import("#shared/stores/dynamo.ts");
const low = await import("@aws-sdk/client-dynamodb");
const doc = await import("@aws-sdk/lib-dynamodb");
const { unmarshall } = await import("@aws-sdk/util-dynamodb");
type Attributes = Parameters<typeof unmarshall>[0];
type Json = Record<string, unknown>;

// Seed: every item the recorded requests were answered with, as it was answered.
for (const call of spec.calls) {
  const request = JSON.parse(call.body) as Json;
  const answer = JSON.parse(call.answer) as Json;
  const items: [string, Json][] = [];
  const table = request.TableName as string | undefined;
  for (const [t, list] of Object.entries((answer.Responses ?? {}) as Record<string, Json[]>))
    for (const item of list) items.push([t, item]);
  for (const item of (answer.Items ?? []) as Json[]) if (table) items.push([table, item]);
  if (answer.Item && table) items.push([table, answer.Item as Json]);
  for (const [TableName, Item] of items) await ddb.send(new low.PutItemCommand({ TableName, Item: Item as never }));
}

const unmarshallOpt = (v: unknown) => (v ? unmarshall(v as Attributes) : undefined);

/** One recorded request, sent the way mapgate's store code sends that kind of request. */
function send(call: TracedCall): Promise<unknown> {
  const op = call.target.split(".").pop() ?? "";
  const input = JSON.parse(call.body) as Json;
  if (op === "BatchGetItem") {
    // shared/stores/dynamo.ts's batchGet: the read path's own client, string keys.
    const request = Object.fromEntries(
      Object.entries(input.RequestItems as Record<string, Json>).map(([t, r]) => [
        t,
        { ...r, Keys: (r.Keys as Attributes[]).map((k) => unmarshall(k) as Record<string, string>) },
      ]),
    );
    return batchGet(request as never);
  }
  if (op === "Query")
    return ddb.send(
      new doc.QueryCommand({
        ...(input as { TableName: string }),
        ExpressionAttributeValues: unmarshallOpt(input.ExpressionAttributeValues),
        ExclusiveStartKey: unmarshallOpt(input.ExclusiveStartKey),
      }),
    );
  if (op === "GetItem")
    return ddb.send(
      new doc.GetCommand({ ...(input as { TableName: string }), Key: unmarshall(input.Key as Attributes) }),
    );
  const Command = (low as unknown as Record<string, new (input: Json) => never>)[`${op}Command`];
  if (!Command) throw new Error(`no command for ${op}`);
  return ddb.send(new Command(input));
}

const groups = new Map<number, TracedCall[]>();
for (const call of spec.calls) groups.set(call.group, [...(groups.get(call.group) ?? []), call]);
const plan = [...groups.values()];

const tile = spec.tile;
const readTile = tile
  ? await (async () => {
      const { storageAt } = await import("#shared/storage/open.ts");
      const { readBundleTile } = await import("#shared/caches/bundle.ts");
      return async () => {
        const storage = await storageAt({ folder: tile.folder });
        const read = await readBundleTile(storage, tile.root, tile.level, tile.row, tile.col);
        if (!read.found) throw new Error("the floor's tile read found no tile");
      };
    })()
  : undefined;

async function answer(): Promise<void> {
  for (const group of plan) await Promise.all(group.map(send));
  await readTile?.();
}

await answer(); // fails here, before listening, if a request cannot be replayed

/** `bare`: node:http alone. `gateway`: the engine's gateway (API Gateway's stand-in) in front of the same work. */
const mode = process.argv[3] ?? "gateway";
let listener: Parameters<typeof createServer>[1];
if (mode === "gateway") {
  // Every route's handler is the floor's: whatever the gateway matches, it runs with that route's table grants.
  const { Gateway } = await import("#infra/local/gateway.ts");
  const text = /^(text\/|application\/(json|xml|javascript))/.test(spec.headers["content-type"] ?? "");
  const result = {
    statusCode: spec.status,
    headers: spec.headers,
    body: text ? body.toString("utf8") : spec.body,
    isBase64Encoded: !text,
  };
  const gateway = await Gateway.load(async () => async () => {
    await answer();
    return result;
  });
  listener = (req, res) => gateway.serve(req, res, "127.0.0.1", "http");
} else {
  listener = (req, res) => {
    req.resume();
    req.once("end", () => {
      answer().then(
        () => {
          res.writeHead(spec.status, spec.headers);
          res.end(body);
        },
        () => {
          res.writeHead(500);
          res.end();
        },
      );
    });
  };
}
const server = createServer(listener);
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => console.log(`floor ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => process.exit(0));
