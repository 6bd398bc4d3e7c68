// The local store path without sockets: the engine's SDK clients reach dynalite in-process (through the
// transaction layer and its item cache) and must get what a client over HTTP gets, answers and errors alike,
// and never a stale item after a committed write.
import { createHash } from "node:crypto";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ConditionalCheckFailedException,
  DynamoDBClient,
  TransactionCanceledException,
} from "@aws-sdk/client-dynamodb";
import {
  BatchGetCommand,
  BatchWriteCommand,
  DeleteCommand,
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  TransactWriteCommand,
  UpdateCommand,
} from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { inProcessClientOptions } from "#infra/local/in-process-dynamo.ts";
import { createTables, startDynamo } from "#infra/local/dynamo.ts";

const TableName = "mapgate-portals";
let store: Awaited<ReturnType<typeof startDynamo>>;
let socket: DynamoDBDocumentClient;
let local: DynamoDBDocumentClient;
/** Whether each answer the in-process client parsed came over HTTP (Node's server adds a Date header). */
const overHttp: boolean[] = [];

const client = (endpoint: string, inProcess: boolean) => {
  const c = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "x", secretAccessKey: "x" },
    maxAttempts: 1,
    ...(inProcess ? inProcessClientOptions : {}),
  });
  if (inProcess)
    c.middlewareStack.add(
      (next) => async (args) => {
        const out = await next(args);
        overHttp.push("date" in ((out.response as { headers?: object }).headers ?? {}));
        return out;
      },
      { step: "deserialize", name: "seeTransport" },
    );
  return DynamoDBDocumentClient.from(c);
};

beforeAll(async () => {
  store = await startDynamo(undefined);
  await createTables(store.endpoint);
  socket = client(store.endpoint, false);
  local = client(store.endpoint, true);
});
afterAll(async () => {
  socket?.destroy();
  local?.destroy();
  await store?.close();
});

/** What a call gives, comparable across clients: the output without metadata, or the error's shape. */
async function outcome(fn: () => Promise<object>): Promise<unknown> {
  try {
    const { $metadata: _, ...out } = (await fn()) as { $metadata?: unknown };
    return { ok: out };
  } catch (err) {
    const e = err as Error & {
      $fault?: string;
      $metadata?: { httpStatusCode?: number };
      CancellationReasons?: unknown;
    };
    return {
      error: e.name,
      class: Object.getPrototypeOf(e)?.constructor?.name,
      message: e.message,
      fault: e.$fault,
      status: e.$metadata?.httpStatusCode,
      reasons: e.CancellationReasons,
    };
  }
}

/** Same outcome from both clients, the in-process one twice (the second may come from the item cache). */
async function same(fn: (ddb: DynamoDBDocumentClient) => Promise<object>, sort?: (o: unknown) => unknown) {
  const norm = sort ?? ((o: unknown) => o);
  const over = norm(await outcome(() => fn(socket)));
  expect(norm(await outcome(() => fn(local)))).toEqual(over);
  expect(norm(await outcome(() => fn(local)))).toEqual(over);
  return over;
}

const get = (ddb: DynamoDBDocumentClient, portalId: string) =>
  ddb.send(new GetCommand({ TableName, Key: { portalId } })).then((r) => r.Item);

describe("the same answers and errors as over HTTP", () => {
  beforeAll(async () => {
    for (let i = 0; i < 60; i++) await socket.send(new PutCommand({ TableName, Item: { portalId: `p-${i}`, n: i } }));
  });

  it("goes in-process: no answer the in-process client parses came over HTTP", async () => {
    overHttp.length = 0;
    await get(local, "p-1");
    await local.send(new PutCommand({ TableName, Item: { portalId: "p-probe", n: 1 } }));
    expect(overHttp).toEqual([false, false]);
  });

  it("items and absent items", async () => {
    expect(await same((d) => d.send(new GetCommand({ TableName, Key: { portalId: "p-7" } })))).toEqual({
      ok: { Item: { portalId: "p-7", n: 7 } },
    });
    expect(await same((d) => d.send(new GetCommand({ TableName, Key: { portalId: "absent" } })))).toEqual({ ok: {} });
  });

  it("a condition that fails: ConditionalCheckFailedException", async () => {
    const put = (d: DynamoDBDocumentClient) =>
      d.send(
        new PutCommand({
          TableName,
          Item: { portalId: "p-3", n: 0 },
          ConditionExpression: "attribute_not_exists(portalId)",
        }),
      );
    expect(await same(put)).toMatchObject({ error: "ConditionalCheckFailedException", status: 400 });
    await expect(put(local)).rejects.toBeInstanceOf(ConditionalCheckFailedException);
    expect(await get(local, "p-3")).toEqual({ portalId: "p-3", n: 3 });
  });

  it("a reserved word in an expression: ValidationException", async () => {
    const outcome_ = await same((d) =>
      d.send(
        new UpdateCommand({
          TableName,
          Key: { portalId: "p-4" },
          UpdateExpression: "SET name = :n",
          ExpressionAttributeValues: { ":n": "x" },
        }),
      ),
    );
    expect(outcome_).toMatchObject({
      error: "ValidationException",
      message: expect.stringContaining("reserved keyword"),
    });
  });

  it("a key that does not match the schema, a table that does not exist", async () => {
    expect(
      await same((d) => d.send(new GetCommand({ TableName, Key: { portalId: "p-1", other: "x" } }))),
    ).toMatchObject({ error: "ValidationException" });
    expect(
      await same((d) => d.send(new GetCommand({ TableName: "mapgate-nothing", Key: { portalId: "p-1" } }))),
    ).toMatchObject({ error: "ResourceNotFoundException" });
  });

  it("a cancelled transaction: TransactionCanceledException with its reasons", async () => {
    const transact = (d: DynamoDBDocumentClient) =>
      d.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName, Item: { portalId: "p-10", n: 100 } } },
            {
              Update: {
                TableName,
                Key: { portalId: "p-11" },
                UpdateExpression: "SET n = :n",
                ConditionExpression: "n = :wrong",
                ExpressionAttributeValues: { ":n": 1, ":wrong": -1 },
              },
            },
          ],
        }),
      );
    expect(await same(transact)).toMatchObject({
      error: "TransactionCanceledException",
      reasons: [{ Code: "None" }, { Code: "ConditionalCheckFailed", Message: "The conditional request failed" }],
    });
    await expect(transact(local)).rejects.toBeInstanceOf(TransactionCanceledException);
    expect(await get(local, "p-10")).toEqual({ portalId: "p-10", n: 10 });
  });

  it("a BatchGetItem of 100 keys, and the ones DynamoDB refuses", async () => {
    const keys = Array.from({ length: 100 }, (_, i) => ({ portalId: `p-${i}` })); // 60 exist
    const sorted = (o: unknown) => {
      const r = o as { ok?: { Responses?: Record<string, { portalId: string }[]> } };
      for (const items of Object.values(r.ok?.Responses ?? {}))
        items.sort((a, b) => a.portalId.localeCompare(b.portalId));
      return r;
    };
    const batch = await same(
      (d) => d.send(new BatchGetCommand({ RequestItems: { [TableName]: { Keys: keys } } })),
      sorted,
    );
    expect((batch as { ok: { Responses: Record<string, unknown[]> } }).ok.Responses[TableName]).toHaveLength(60);
    const tooMany = [...keys, { portalId: "p-100" }];
    expect(
      await same((d) => d.send(new BatchGetCommand({ RequestItems: { [TableName]: { Keys: tooMany } } }))),
    ).toMatchObject({ error: "ValidationException" });
    expect(
      await same((d) =>
        d.send(
          new BatchGetCommand({ RequestItems: { [TableName]: { Keys: [{ portalId: "p-1" }, { portalId: "p-1" }] } } }),
        ),
      ),
    ).toMatchObject({ error: "ValidationException", message: "Provided list of item keys contains duplicates" });
  });
});

describe("no stale read after a committed write", () => {
  it("sees every write, whichever path made it", async () => {
    await local.send(new PutCommand({ TableName, Item: { portalId: "c-1", n: 1 } }));
    expect(await get(local, "c-1")).toEqual({ portalId: "c-1", n: 1 });
    await socket.send(new PutCommand({ TableName, Item: { portalId: "c-1", n: 2 } }));
    expect(await get(local, "c-1")).toEqual({ portalId: "c-1", n: 2 });
    const updated = await socket.send(
      new UpdateCommand({
        TableName,
        Key: { portalId: "c-1" },
        UpdateExpression: "SET n = n + :one",
        ExpressionAttributeValues: { ":one": 1 },
        ReturnValues: "ALL_NEW",
      }),
    );
    expect(updated.Attributes).toEqual({ portalId: "c-1", n: 3 });
    expect(await get(local, "c-1")).toEqual({ portalId: "c-1", n: 3 });
    await socket.send(new DeleteCommand({ TableName, Key: { portalId: "c-1" } }));
    expect(await get(local, "c-1")).toBeUndefined();
  });

  it("after a conditional write that failed, and after the one that succeeded", async () => {
    await local.send(new PutCommand({ TableName, Item: { portalId: "c-2", n: 1 } }));
    expect(await get(local, "c-2")).toEqual({ portalId: "c-2", n: 1 });
    const bump = (expected: number) =>
      local.send(
        new UpdateCommand({
          TableName,
          Key: { portalId: "c-2" },
          UpdateExpression: "SET n = :next",
          ConditionExpression: "n = :expected",
          ExpressionAttributeValues: { ":next": expected + 1, ":expected": expected },
          ReturnValuesOnConditionCheckFailure: "ALL_OLD",
        }),
      );
    await expect(bump(5)).rejects.toMatchObject({ name: "ConditionalCheckFailedException" });
    expect(await get(local, "c-2")).toEqual({ portalId: "c-2", n: 1 });
    await bump(1);
    expect(await get(local, "c-2")).toEqual({ portalId: "c-2", n: 2 });
  });

  it("after BatchWriteItem and transactions (committed or rolled back), in GetItem and BatchGetItem", async () => {
    const keys = [{ portalId: "c-3" }, { portalId: "c-4" }];
    const batchGet = async () =>
      (
        (await local.send(new BatchGetCommand({ RequestItems: { [TableName]: { Keys: keys } } }))).Responses?.[
          TableName
        ] ?? []
      )
        .map((i) => `${String(i.portalId)}=${String(i.n)}`)
        .sort();
    expect(await batchGet()).toEqual([]);
    await socket.send(
      new BatchWriteCommand({
        RequestItems: {
          [TableName]: [
            { PutRequest: { Item: { portalId: "c-3", n: 3 } } },
            { PutRequest: { Item: { portalId: "c-4", n: 4 } } },
          ],
        },
      }),
    );
    expect(await batchGet()).toEqual(["c-3=3", "c-4=4"]);
    await local.send(
      new BatchWriteCommand({ RequestItems: { [TableName]: [{ DeleteRequest: { Key: { portalId: "c-4" } } }] } }),
    );
    expect(await batchGet()).toEqual(["c-3=3"]);
    expect(await get(local, "c-4")).toBeUndefined();
    // Rolled back: its first write was applied, then undone when the second's condition failed.
    await expect(
      socket.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName, Item: { portalId: "c-4", n: 40 } } },
            {
              ConditionCheck: {
                TableName,
                Key: { portalId: "c-3" },
                ConditionExpression: "n = :x",
                ExpressionAttributeValues: { ":x": 0 },
              },
            },
          ],
        }),
      ),
    ).rejects.toMatchObject({ name: "TransactionCanceledException" });
    expect(await batchGet()).toEqual(["c-3=3"]);
    await socket.send(
      new TransactWriteCommand({
        TransactItems: [
          { Put: { TableName, Item: { portalId: "c-4", n: 41 } } },
          {
            Update: {
              TableName,
              Key: { portalId: "c-3" },
              UpdateExpression: "SET n = :n",
              ExpressionAttributeValues: { ":n": 31 },
            },
          },
        ],
      }),
    );
    expect(await batchGet()).toEqual(["c-3=31", "c-4=41"]);
    expect(await get(local, "c-3")).toEqual({ portalId: "c-3", n: 31 });
  });

  it("while reads race the writes: each read after a write's answer sees it", async () => {
    await socket.send(new PutCommand({ TableName, Item: { portalId: "c-race", n: 0 } }));
    let stop = false;
    // Readers in a loop throughout, so reads are in flight when each write starts and ends (a cached answer
    // takes no I/O: each reader lets the event loop turn between its reads).
    const readers = Array.from({ length: 8 }, async () => {
      while (!stop) {
        await get(local, "c-race");
        await new Promise((r) => setImmediate(r));
      }
    });
    try {
      for (let n = 1; n <= 150; n++) {
        const writer = n % 2 ? local : socket;
        await writer.send(
          new UpdateCommand({
            TableName,
            Key: { portalId: "c-race" },
            UpdateExpression: "SET n = :n",
            ExpressionAttributeValues: { ":n": n },
          }),
        );
        expect((await get(local, "c-race"))?.n).toBe(n);
      }
    } finally {
      stop = true;
      await Promise.all(readers);
    }
  });

  it("after a start that rolled back a transaction a crash interrupted", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-store-path-"));
    const open = () => startDynamo(join(dir, "dynamodb"), join(dir, "dynamodb.journal"));
    let s = await open();
    let ddb = client(s.endpoint, true);
    try {
      await createTables(s.endpoint);
      await ddb.send(new PutCommand({ TableName, Item: { portalId: "j-a", n: 2 } }));
      await ddb.send(new PutCommand({ TableName, Item: { portalId: "j-b", n: 9 } }));
      expect(await get(ddb, "j-a")).toEqual({ portalId: "j-a", n: 2 });
    } finally {
      ddb.destroy();
      await s.close();
    }
    // What a kill between two writes of a transaction leaves: the journal holding j-a as it was, j-b absent.
    const body = Buffer.from(
      JSON.stringify([
        { table: TableName, key: { portalId: { S: "j-a" } }, before: { portalId: { S: "j-a" }, n: { N: "1" } } },
        { table: TableName, key: { portalId: { S: "j-b" } } },
      ]),
    );
    writeFileSync(
      join(dir, "dynamodb.journal"),
      Buffer.concat([Buffer.from(`${createHash("sha256").update(body).digest("hex")} ${body.length}\n`), body]),
    );
    s = await open();
    ddb = client(s.endpoint, true);
    try {
      expect(await get(ddb, "j-a")).toEqual({ portalId: "j-a", n: 1 });
      expect(await get(ddb, "j-b")).toBeUndefined();
      const batch = await ddb.send(
        new BatchGetCommand({ RequestItems: { [TableName]: { Keys: [{ portalId: "j-a" }, { portalId: "j-b" }] } } }),
      );
      expect(batch.Responses?.[TableName]).toEqual([{ portalId: "j-a", n: 1 }]);
    } finally {
      ddb.destroy();
      await s.close();
    }
  });
});

it("shared/stores/dynamo.ts builds its client with the options the engine registered", async () => {
  const { ddb } = await import("#shared/stores/dynamo.ts");
  expect(ddb.config.requestHandler).toBe(
    inProcessClientOptions && (inProcessClientOptions as { requestHandler: unknown }).requestHandler,
  );
});
