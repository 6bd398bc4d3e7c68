// The item cache under interleavings a scheduler rarely makes: a read answered by the store before a write
// commits, whose answer arrives after the write has invalidated and finished. Held answers make the order
// deterministic; the stress below makes it at random through the real transaction layer and dynalite.
import { DynamoDBDocumentClient, GetCommand, UpdateCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ItemCache } from "#infra/local/item-cache.ts";
import { createTables, startDynamo } from "#infra/local/dynamo.ts";
import type { StoreAnswer } from "#infra/local/store-call.ts";
import { storeClient } from "./helpers/store.ts";

const TABLE = "t";
const key = { id: { S: "a" } };
const getInput = { TableName: TABLE, Key: key };
const batchInput = { RequestItems: { [TABLE]: { Keys: [key] } } };

const stored = (n: number | undefined, batch = false): StoreAnswer => {
  const item = n === undefined ? undefined : { id: { S: "a" }, n: { N: String(n) } };
  const body = batch ? { Responses: { [TABLE]: item ? [item] : [] }, UnprocessedKeys: {} } : item ? { Item: item } : {};
  return { status: 200, headers: {}, body: Buffer.from(JSON.stringify(body)) };
};

const valueOf = (out: StoreAnswer, batch = false): string | undefined => {
  const body = JSON.parse(out.body.toString("utf8")) as {
    Item?: { n: { N: string } };
    Responses?: Record<string, { n: { N: string } }[]>;
  };
  return (batch ? body.Responses?.[TABLE]?.[0] : body.Item)?.n.N;
};

/** A promise and the function that settles it, for holding one side of an interleaving. */
function held<T>() {
  let release!: (v: T) => void;
  const promise = new Promise<T>((r) => (release = r));
  return { promise, release };
}

describe.each([
  ["GetItem", false],
  ["BatchGetItem", true],
] as const)("a %s answered before a write committed", (_, batch) => {
  const read = (cache: ItemCache, forward: () => Promise<StoreAnswer>) =>
    batch ? cache.batchGetItem(batchInput, forward) : cache.getItem(getInput, forward);

  it("does not fill the cache when its answer arrives after the write finished", async () => {
    const cache = new ItemCache(async () => ["id"]);
    let committed = 1;
    // The write starts and drops the key; its store call is held.
    const commit = held<undefined>();
    const write = cache.write([{ table: TABLE, key }], async () => {
      await commit.promise;
      committed = 2;
    });
    // A read begins while the write runs; the store answers it the value before the commit, but the answer is
    // held until the write has finished.
    const answer = held<undefined>();
    const racing = read(cache, async () => {
      const before = stored(committed, batch);
      await answer.promise;
      return before;
    });
    commit.release(undefined);
    await write;
    answer.release(undefined);
    expect(valueOf(await racing, batch)).toBe("1");
    // Every read after the write was acknowledged sees it: the store is asked again, as nothing was cached.
    expect(valueOf(await read(cache, async () => stored(committed, batch)), batch)).toBe("2");
    // ...which a quiet read may cache again.
    expect(valueOf(await read(cache, async () => stored(99, batch)), batch)).toBe("2");
  });

  it("fills the cache from a read no write overlapped", async () => {
    const cache = new ItemCache(async () => ["id"]);
    expect(valueOf(await read(cache, async () => stored(1, batch)), batch)).toBe("1");
    expect(valueOf(await read(cache, async () => stored(5, batch)), batch)).toBe("1");
    await cache.write([{ table: TABLE, key }], async () => undefined);
    expect(valueOf(await read(cache, async () => stored(5, batch)), batch)).toBe("5");
  });

  it("does not fill it from a read a write began during", async () => {
    const cache = new ItemCache(async () => ["id"]);
    const answer = held<undefined>();
    const racing = read(cache, async () => {
      await answer.promise;
      return stored(1, batch);
    });
    await cache.write([{ table: TABLE, key }], async () => undefined);
    answer.release(undefined);
    await racing;
    expect(valueOf(await read(cache, async () => stored(2, batch)), batch)).toBe("2");
  });
});

describe("through the transaction layer and dynalite", () => {
  const TableName = "mapgate-portals";
  let store: Awaited<ReturnType<typeof startDynamo>>;
  let ddb: DynamoDBDocumentClient;
  beforeAll(async () => {
    store = await startDynamo(undefined);
    await createTables(store.endpoint);
    ddb = storeClient(store.endpoint, { inProcess: true, maxAttempts: 1 });
  });
  afterAll(async () => {
    ddb?.destroy();
    await store?.close();
  });

  it("concurrent reads and writes on one item: every read begun after a write's answer sees it", async () => {
    const get = async () =>
      Number((await ddb.send(new GetCommand({ TableName, Key: { portalId: "stress" } }))).Item?.n ?? -1);
    await ddb.send(new PutCommand({ TableName, Item: { portalId: "stress", n: 0 } }));
    let acknowledged = 0;
    let written = 0;
    const stale: string[] = [];
    const WRITES = 400;
    // Writers overlap each other (each writes the next number only if it is above the stored one), readers
    // start whenever the loop turns, so reads begin before, during and after every write.
    const writer = async () => {
      while (written < WRITES) {
        const n = ++written;
        await ddb
          .send(
            new UpdateCommand({
              TableName,
              Key: { portalId: "stress" },
              UpdateExpression: "SET n = :n",
              ConditionExpression: "n < :n",
              ExpressionAttributeValues: { ":n": n },
            }),
          )
          .catch((err: Error) => {
            if (err.name !== "ConditionalCheckFailedException") throw err;
          });
        acknowledged = Math.max(acknowledged, n);
        if (Math.random() < 0.5) await new Promise((r) => setImmediate(r));
      }
    };
    let done = false;
    const reader = async () => {
      while (!done) {
        const floor = acknowledged;
        const seen = await get();
        if (seen < floor) stale.push(`read ${seen} after ${floor} was acknowledged`);
        if (Math.random() < 0.3) await new Promise((r) => setTimeout(r, Math.random() * 2));
      }
    };
    const readers = Array.from({ length: 12 }, reader);
    await Promise.all(Array.from({ length: 3 }, writer));
    done = true;
    await Promise.all(readers);
    expect(stale).toEqual([]);
    // And long after: the item as written, however often it is read.
    for (let i = 0; i < 20; i++) expect(await get()).toBe(WRITES);
  });
});
