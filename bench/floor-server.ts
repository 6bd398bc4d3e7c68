// A child process for the read figures' floor: the local engine's gateway serving one route whose handler answers
// the anonymous read's bytes, either at once (`gateway`) or after the one BatchGetItem that read makes, through the
// same SDK client and in-process store (`store-read`). What separates these from the real route is the pipeline
// and handler; what separates them from each other is the SDK call alone.
import "#infra/local/in-process-dynamo.ts";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { inProcessStore } from "../test/helpers/in-process.ts";

const mode = process.argv[2];
if (mode !== "gateway" && mode !== "store-read") throw new Error("usage: floor-server.ts gateway|store-read BODY");
const body = process.argv[3] ?? "{}";
await inProcessStore();
const { Gateway } = await import("#infra/local/gateway.ts");
const { batchGet, ddb } = await import("#shared/stores/dynamo.ts");
const { tableName } = await import("#shared/config.ts");
const { PutCommand } = await import("@aws-sdk/lib-dynamodb");
const portals = tableName("portals");
const portalId = "floor";
await ddb.send(new PutCommand({ TableName: portals, Item: { portalId, answer: body } }));

const gateway = await Gateway.load(async () => async () => {
  if (mode === "store-read") await batchGet({ [portals]: { Keys: [{ portalId }] } });
  return { statusCode: 200, headers: { "content-type": "application/json; charset=utf-8" }, body };
});
const server = createServer((req, res) => gateway.serve(req, res, "127.0.0.1", "http"));
server.keepAliveTimeout = 30_000;
server.listen(0, "127.0.0.1", () => console.log(`floor ${(server.address() as AddressInfo).port}`));
process.on("SIGTERM", () => process.exit(0));
