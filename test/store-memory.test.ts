// The local store under sustained reads: tens of thousands of Query, on a table key and on a global secondary
// index, through the path the engine's own clients take (in-process, through the transaction layer, to dynalite
// on disk), must leave the heap where it was. dynalite once left every Query's LevelDB iterator open (see
// `closeIteratorsWhenStreamsEnd` in infra/local/dynamo.ts): the engine grew by kilobytes per search, for good.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { DynamoDBDocumentClient, PutCommand, QueryCommand, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createTables, startDynamo } from "#infra/local/dynamo.ts";
import { storeClient } from "./helpers/store.ts";

/** Queries per measurement: the probe that found the growth sent this many searches per round. */
const QUERIES = 20_000;
/** As many at once as that probe. */
const AT_ONCE = 8;
/**
 * What 20,000 queries may add to the heap after a full collection: 4 MB, about 200 bytes a query. Without
 * the fix they added ~19 MB on the table key and ~270 MB on the index; with it, under 1 MB either way.
 */
const BOUND = 4 * 1024 * 1024;

// The process was not started with --expose-gc: the flag can still be set, and a new context then has gc.
setFlagsFromString("--expose-gc");
const gc = runInNewContext("gc") as () => void;

const TableName = "mapgate-items";
const dir = mkdtempSync(join(tmpdir(), "mapgate-store-memory-"));
let store: Awaited<ReturnType<typeof startDynamo>>;
let ddb: DynamoDBDocumentClient;

beforeAll(async () => {
  store = await startDynamo(join(dir, "dynamodb"));
  await createTables(store.endpoint);
  ddb = storeClient(store.endpoint, { inProcess: true });
  // Public items, about 1 KB each: a page of the index stops before its end, a key query reads to its end.
  for (let i = 0; i < 30; i++) {
    await ddb.send(
      new PutCommand({
        TableName,
        Item: {
          itemId: `item-${i}`,
          listed: "public",
          createdKey: `2024-01-01T00:00:${String(i).padStart(2, "0")}Z#item-${i}`,
          portalId: "portal",
          owner: "owner",
          title: `item ${i} ${"x".repeat(1000)}`,
        },
      }),
    );
  }
});

afterAll(async () => {
  ddb?.destroy();
  await store?.close();
  rmSync(dir, { recursive: true, force: true });
});

async function query(input: QueryCommandInput, count: number): Promise<void> {
  for (let sent = 0; sent < count; sent += AT_ONCE) {
    const answers = await Promise.all(Array.from({ length: AT_ONCE }, () => ddb.send(new QueryCommand(input))));
    for (const a of answers) expect(a.Count).toBeGreaterThan(0);
  }
}

function heapUsed(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Heap added by `QUERIES` more of `input`, after enough of them that everything loaded once is loaded. */
async function growth(input: QueryCommandInput): Promise<number> {
  await query(input, 1_000);
  const before = heapUsed();
  await query(input, QUERIES);
  return heapUsed() - before;
}

it("20,000 queries on the table's key leave the heap flat", { timeout: 120_000 }, async () => {
  const added = await growth({
    TableName,
    KeyConditionExpression: "itemId = :id",
    ExpressionAttributeValues: { ":id": "item-7" },
  });
  expect(added).toBeLessThan(BOUND);
});

it("20,000 queries on a global secondary index leave the heap flat", { timeout: 120_000 }, async () => {
  // The search's own query: newest first, one page.
  const added = await growth({
    TableName,
    IndexName: "byPublic",
    KeyConditionExpression: "listed = :v",
    ExpressionAttributeValues: { ":v": "public" },
    ScanIndexForward: false,
    Limit: 10,
  });
  expect(added).toBeLessThan(BOUND);
});
