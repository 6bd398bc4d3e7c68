// The local engine's TransactWriteItems (dynalite has none), through the AWS SDK as handlers use it.
import { createHash } from "node:crypto";
import { mkdtempSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, GetCommand, PutCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTables, startDynamo } from "#infra/local/dynamo.ts";

let store: Awaited<ReturnType<typeof startDynamo>>;
let ddb: DynamoDBDocumentClient;
const TableName = "mapgate-portals";

beforeAll(async () => {
  store = await startDynamo(undefined);
  await createTables(store.endpoint);
  ddb = DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: store.endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
    }),
  );
});
afterAll(async () => {
  ddb?.destroy();
  await store?.close();
});

const get = async (portalId: string) => (await ddb.send(new GetCommand({ TableName, Key: { portalId } }))).Item;

it("applies every write when every condition holds", async () => {
  await ddb.send(new PutCommand({ TableName, Item: { portalId: "t-old", n: 1 } }));
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Put: { TableName, Item: { portalId: "t-new", n: 2 }, ConditionExpression: "attribute_not_exists(portalId)" },
        },
        {
          Update: {
            TableName,
            Key: { portalId: "t-old" },
            UpdateExpression: "SET n = :n",
            ConditionExpression: "n = :one",
            ExpressionAttributeValues: { ":n": 5, ":one": 1 },
          },
        },
        {
          ConditionCheck: {
            TableName,
            Key: { portalId: "t-absent" },
            ConditionExpression: "attribute_not_exists(portalId)",
          },
        },
      ],
    }),
  );
  expect(await get("t-new")).toEqual({ portalId: "t-new", n: 2 });
  expect(await get("t-old")).toEqual({ portalId: "t-old", n: 5 });
  // The condition check left nothing behind.
  expect(await get("t-absent")).toBeUndefined();
});

it("applies nothing when any condition fails, and says which", async () => {
  await ddb.send(new PutCommand({ TableName, Item: { portalId: "u-1", n: 1 } }));
  await ddb.send(new PutCommand({ TableName, Item: { portalId: "u-taken", n: 9 } }));
  const err = await ddb
    .send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Update: {
              TableName,
              Key: { portalId: "u-1" },
              UpdateExpression: "SET n = :n",
              ExpressionAttributeValues: { ":n": 2 },
            },
          },
          { Delete: { TableName, Key: { portalId: "u-gone" } } },
          {
            Put: {
              TableName,
              Item: { portalId: "u-taken", n: 0 },
              ConditionExpression: "attribute_not_exists(portalId)",
            },
          },
        ],
      }),
    )
    .catch((e: unknown) => e as { name: string; CancellationReasons?: { Code: string }[] });
  expect(err).toMatchObject({ name: "TransactionCanceledException" });
  expect((err as { CancellationReasons: { Code: string }[] }).CancellationReasons.map((r) => r.Code)).toEqual([
    "None",
    "None",
    "ConditionalCheckFailed",
  ]);
  expect(await get("u-1")).toEqual({ portalId: "u-1", n: 1 });
  expect(await get("u-taken")).toEqual({ portalId: "u-taken", n: 9 });
});

it("lets exactly one of many concurrent transactions claim a key", async () => {
  const attempts = await Promise.allSettled(
    Array.from({ length: 20 }, (_, i) =>
      ddb.send(
        new TransactWriteCommand({
          TransactItems: [
            {
              Put: {
                TableName,
                Item: { portalId: "claim", by: i },
                ConditionExpression: "attribute_not_exists(portalId)",
              },
            },
            { Put: { TableName, Item: { portalId: `claimer-${i}` } } },
          ],
        }),
      ),
    ),
  );
  expect(attempts.filter((a) => a.status === "fulfilled")).toHaveLength(1);
  const winner = (await get("claim"))?.by as number;
  const claimers = await Promise.all(Array.from({ length: 20 }, (_, i) => get(`claimer-${i}`)));
  expect(claimers.map((c, i) => (c ? i : -1)).filter((i) => i >= 0)).toEqual([winner]);
});

it("refuses, as DynamoDB does, a transaction touching one item twice, and writes nothing", async () => {
  await ddb.send(new PutCommand({ TableName, Item: { portalId: "t-twice", n: 1 } }));
  const twice = ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        { Put: { TableName, Item: { portalId: "t-twice-other", n: 1 } } },
        { Put: { TableName, Item: { n: 2, portalId: "t-twice" } } },
        {
          Update: {
            TableName,
            Key: { portalId: "t-twice" },
            UpdateExpression: "SET n = :n",
            ExpressionAttributeValues: { ":n": 3 },
          },
        },
      ],
    }),
  );
  await expect(twice).rejects.toMatchObject({
    name: "ValidationException",
    message: "Transaction request cannot include multiple operations on one item",
  });
  expect(await get("t-twice")).toEqual({ portalId: "t-twice", n: 1 });
  expect(await get("t-twice-other")).toBeUndefined();
});

describe("with a journal (the engine's data folder)", () => {
  const client = (endpoint: string) =>
    DynamoDBDocumentClient.from(
      new DynamoDBClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "x", secretAccessKey: "x" } }),
    );
  /** A store on `dir` used by `fn`, then closed as the engine closes it. */
  const withStore = async <T>(dir: string, fn: (ddb: DynamoDBDocumentClient) => Promise<T>): Promise<T> => {
    const local = await startDynamo(join(dir, "dynamodb"), join(dir, "dynamodb.journal"));
    const ddb = client(local.endpoint);
    try {
      await createTables(local.endpoint);
      return await fn(ddb);
    } finally {
      ddb.destroy();
      await local.close();
    }
  };
  const read = (ddb: DynamoDBDocumentClient, portalId: string) =>
    ddb.send(new GetCommand({ TableName, Key: { portalId }, ConsistentRead: true })).then((r) => r.Item);
  // What a run killed between two writes of a transaction leaves: j-a written over, j-b created, and the
  // journal holding their pre-images (j-a as it was, j-b absent), in the journal's own record format.
  const record = () => {
    const body = Buffer.from(
      JSON.stringify([
        { table: TableName, key: { portalId: { S: "j-a" } }, before: { portalId: { S: "j-a" }, n: { N: "1" } } },
        { table: TableName, key: { portalId: { S: "j-b" } } },
      ]),
    );
    return Buffer.concat([Buffer.from(`${createHash("sha256").update(body).digest("hex")} ${body.length}\n`), body]);
  };
  const halfApplied = async (dir: string) =>
    withStore(dir, async (ddb) => {
      await ddb.send(new PutCommand({ TableName, Item: { portalId: "j-a", n: 2 } }));
      await ddb.send(new PutCommand({ TableName, Item: { portalId: "j-b", n: 9 } }));
    });

  it("keeps what a finished transaction wrote, and leaves the journal empty", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-journal-"));
    await withStore(dir, async (ddb) => {
      await ddb.send(
        new TransactWriteCommand({
          TransactItems: [
            { Put: { TableName, Item: { portalId: "j-a", n: 1 } } },
            { Put: { TableName, Item: { portalId: "j-b", n: 2 } } },
          ],
        }),
      );
      expect(statSync(join(dir, "dynamodb.journal")).size).toBe(0);
    });
    await withStore(dir, async (ddb) => {
      expect(await read(ddb, "j-a")).toEqual({ portalId: "j-a", n: 1 });
      expect(await read(ddb, "j-b")).toEqual({ portalId: "j-b", n: 2 });
    });
  });

  it("rolls back, before serving, a transaction the journal says was cut short", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-journal-"));
    await halfApplied(dir);
    writeFileSync(join(dir, "dynamodb.journal"), record());
    await withStore(dir, async (ddb) => {
      expect(await read(ddb, "j-a")).toEqual({ portalId: "j-a", n: 1 });
      expect(await read(ddb, "j-b")).toBeUndefined();
      expect(statSync(join(dir, "dynamodb.journal")).size).toBe(0);
    });
  });

  it("ignores a torn journal record: its transaction had not written anything yet", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-journal-"));
    await halfApplied(dir);
    const whole = record();
    writeFileSync(join(dir, "dynamodb.journal"), whole.subarray(0, whole.length - 1));
    await withStore(dir, async (ddb) => {
      expect(await read(ddb, "j-a")).toEqual({ portalId: "j-a", n: 2 });
      expect(await read(ddb, "j-b")).toEqual({ portalId: "j-b", n: 9 });
    });
  });
});
