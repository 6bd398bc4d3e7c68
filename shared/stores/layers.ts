// Layer–dataset pairs recorded by bulk publishing, per data store; read with paged Queries, never a Scan.
import { DeleteCommand, GetCommand, PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import type { Dataset } from "#shared/stores/datastores.ts";
import { ddb, isConditionFailure } from "#shared/stores/dynamo.ts";
import type { Access } from "#shared/stores/service-keys.ts";

export interface Layer {
  readonly id: string;
  readonly title: string;
  readonly created: number;
  readonly modified: number;
  readonly url: string;
  readonly type: string;
}

export interface LayerPair {
  readonly layer: Layer;
  readonly dataset: Dataset & { readonly datastoreId: string };
  /** Who may see the layer (absent on pairs recorded before items existed: visible as before). */
  readonly access?: PairAccess;
}

const pairEntry = (path: string) => `pair#${path}`;

/**
 * Who may see a pair's layer: a copy of its item's access, owner and organization, changed with the item, so
 * getLayers filters without reading each item.
 */
export interface PairAccess {
  readonly access: Access;
  readonly owner: string;
  readonly portalId: string;
  /** The groups the item is shared with (absent: none). */
  readonly groups?: readonly string[];
}

/**
 * The write that records a pair unless the dataset has one already (for a transaction or on its own). The pair
 * keeps the id of the job that made it, so a job run again after a crash tells its own layers from older ones.
 */
export const pairPut = (datastoreId: string, pair: LayerPair, access: PairAccess, jobId: string) => ({
  TableName: tableName("layers"),
  Item: {
    datastoreId,
    entry: pairEntry(pair.dataset.path),
    layer: { ...pair.layer },
    dataset: { ...pair.dataset },
    ...access,
    jobId,
  },
  ConditionExpression: "attribute_not_exists(#e)",
  ExpressionAttributeNames: { "#e": "entry" },
});

/** Records a pair unless the dataset has one already; answers whether this call recorded it. */
export async function recordPair(
  datastoreId: string,
  pair: LayerPair,
  access: PairAccess,
  jobId: string,
): Promise<boolean> {
  try {
    await ddb.send(new PutCommand(pairPut(datastoreId, pair, access, jobId)));
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** The job that made a pair ("" for pairs from before jobs were recorded on them). */
const makerOf = (item: Record<string, unknown>) => (typeof item.jobId === "string" ? item.jobId : "");

/**
 * The pairs of the datasets whose paths lie from `first` to `last` (inclusive, in DynamoDB's order): dataset
 * path → the job that made the pair. Reads only that key range, and only two small attributes of each pair.
 */
export async function pairMakers(datastoreId: string, first: string, last: string): Promise<Map<string, string>> {
  const makers = new Map<string, string>();
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName("layers"),
        KeyConditionExpression: "datastoreId = :d AND #e BETWEEN :first AND :last",
        ProjectionExpression: "#e, jobId",
        ExpressionAttributeNames: { "#e": "entry" },
        ExpressionAttributeValues: { ":d": datastoreId, ":first": pairEntry(first), ":last": pairEntry(last) },
        // A retried page must see the pairs its earlier attempt wrote.
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    for (const item of page.Items ?? []) makers.set(String(item.entry).slice("pair#".length), makerOf(item));
    start = page.LastEvaluatedKey;
  } while (start);
  return makers;
}

/** The job that made one dataset's pair, or undefined when it has none. */
export async function pairMaker(datastoreId: string, path: string): Promise<string | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({
      TableName: tableName("layers"),
      Key: { datastoreId, entry: pairEntry(path) },
      // The key attribute too: a pair without a jobId still answers an item.
      ProjectionExpression: "#e, jobId",
      ExpressionAttributeNames: { "#e": "entry" },
      ConsistentRead: true,
    }),
  );
  return Item ? makerOf(Item) : undefined;
}

/** Who may see a stored pair (absent on pairs recorded before items existed). */
function accessOf(item: Record<string, unknown>): PairAccess | undefined {
  if (typeof item.access !== "string") return undefined;
  const groups = Array.isArray(item.groups) ? (item.groups as string[]) : undefined;
  return {
    access: item.access as Access,
    owner: String(item.owner),
    portalId: String(item.portalId),
    ...(groups && groups.length > 0 ? { groups } : {}),
  };
}

function toPair(item: Record<string, unknown>): LayerPair {
  const access = accessOf(item);
  return {
    layer: item.layer as Layer,
    dataset: item.dataset as LayerPair["dataset"],
    ...(access ? { access } : {}),
  };
}

/** Calls `each` with every page of pairs in dataset-path order; stops early when it answers false. */
export async function forEachPairPage(
  datastoreId: string,
  each: (pairs: LayerPair[]) => boolean | undefined,
): Promise<void> {
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName("layers"),
        KeyConditionExpression: "datastoreId = :d AND begins_with(#e, :p)",
        ExpressionAttributeNames: { "#e": "entry" },
        ExpressionAttributeValues: { ":d": datastoreId, ":p": "pair#" },
        ExclusiveStartKey: start,
      }),
    );
    if (each((page.Items ?? []).map(toPair)) === false) return;
    start = page.LastEvaluatedKey;
  } while (start);
}

const pathOf = (item: Record<string, unknown>) => String(item.entry).slice("pair#".length);

/** Whether a reader takes a pair, given who may see it (a pair it does not take is not counted either). */
export type Accepts = (access: PairAccess | undefined) => boolean;

/**
 * The pairs `accepts` takes, in dataset-path order after the dataset at `from` (from the first when
 * undefined), a Query's worth at a time, until `want` of them (Infinity: to the end). Each Query's Limit is
 * what is still wanted, scaled up by the share of pairs refused so far, so DynamoDB reads hardly any pair
 * past the last one wanted: a page deep in a long list costs that page, not the list before it.
 */
async function* accepted(
  datastoreId: string,
  from: string | undefined,
  accepts: Accepts,
  want: number,
  keysOnly: boolean,
): AsyncGenerator<Record<string, unknown>[]> {
  let start: Record<string, unknown> | undefined =
    from === undefined ? undefined : { datastoreId, entry: pairEntry(from) };
  let taken = 0;
  let refused = 0;
  do {
    const left = want - taken;
    const limit = taken === 0 ? left + refused : Math.ceil((left * (taken + refused)) / taken);
    const page = await ddb.send(
      new QueryCommand({
        TableName: tableName("layers"),
        KeyConditionExpression: "datastoreId = :d AND begins_with(#e, :p)",
        ExpressionAttributeValues: { ":d": datastoreId, ":p": "pair#" },
        // Who may see each pair, for `accepts`: counting to a position never loads whole pairs.
        ...(keysOnly
          ? {
              ProjectionExpression: "#e, #a, #o, #p, #g",
              ExpressionAttributeNames: {
                "#e": "entry",
                "#a": "access",
                "#o": "owner",
                "#p": "portalId",
                "#g": "groups",
              },
            }
          : { ExpressionAttributeNames: { "#e": "entry" } }),
        ExclusiveStartKey: start,
        ...(Number.isFinite(limit) ? { Limit: limit } : {}),
      }),
    );
    const kept: Record<string, unknown>[] = [];
    for (const item of page.Items ?? []) {
      if (taken === want) break;
      if (!accepts(accessOf(item))) refused++;
      else {
        kept.push(item);
        taken++;
      }
    }
    if (kept.length > 0) yield kept;
    start = page.LastEvaluatedKey;
  } while (start && taken < want);
}

/** A pair as a read of pairs yields it: with the dataset path its key holds, where a later read resumes. */
export interface PairAt {
  readonly path: string;
  readonly pair: LayerPair;
}

/**
 * Calls `each` with the pairs `accepts` takes, in dataset-path order after the dataset at `from` (from the
 * first when undefined), a Query's worth at a time, until `want` of them (Infinity: to the end). Reads no
 * more than that (see `accepted`), and holds one Query's pairs at a time.
 */
export async function readPairs(
  datastoreId: string,
  from: string | undefined,
  accepts: Accepts,
  want: number,
  each: (pairs: PairAt[]) => void,
): Promise<void> {
  for await (const items of accepted(datastoreId, from, accepts, want, false)) {
    each(items.map((item) => ({ path: pathOf(item), pair: toPair(item) })));
  }
}

/**
 * The dataset path of the `n`th pair (from 1, in dataset-path order) that `accepts` takes; undefined when it
 * takes fewer. Reads each pair's key and access only, never a whole pair, and no pair past the `n`th. DynamoDB
 * still charges every pair read in full: what this saves is transfer, parsing and memory, which is why a page
 * the server handed out resumes from its cursor instead (`pageStart`).
 */
export async function nthPairPath(datastoreId: string, n: number, accepts: Accepts): Promise<string | undefined> {
  let taken = 0;
  let last: Record<string, unknown> | undefined;
  for await (const items of accepted(datastoreId, undefined, accepts, n, true)) {
    taken += items.length;
    last = items[items.length - 1];
  }
  return taken === n && last ? pathOf(last) : undefined;
}

/** How long a page's end is remembered: far longer than a client takes to ask for its next page. */
const CURSOR_SECONDS = 3600;

const cursorKey = (datastoreId: string, client: string, start: number) => `getLayers#${datastoreId}#${client}#${start}`;

/**
 * Remembers that the page of `datastoreId`'s pairs a client (its token's id) is handed ended with the pair of
 * the dataset at `path`, so its request for `nextStart` resumes right after it.
 */
export async function rememberPageEnd(
  datastoreId: string,
  client: string,
  nextStart: number,
  path: string,
): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: tableName("cursors"),
      Item: {
        cursor: cursorKey(datastoreId, client, nextStart),
        path,
        expiresAt: Math.floor(Date.now() / 1000) + CURSOR_SECONDS,
      },
    }),
  );
}

/** The dataset path the page a client was handed as `start` resumes after, unless it was never handed out. */
export async function pageStart(datastoreId: string, client: string, start: number): Promise<string | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({
      TableName: tableName("cursors"),
      Key: { cursor: cursorKey(datastoreId, client, start) },
      // The client asks for its next page as soon as it has this one: the cursor must be there already.
      ConsistentRead: true,
    }),
  );
  // Expiry on read, whatever DynamoDB's TTL has or has not deleted.
  if (!Item || typeof Item.path !== "string" || Number(Item.expiresAt) * 1000 <= Date.now()) return undefined;
  return Item.path;
}

/** Removes a pair whose layer's item is gone (the item's own delete removes the pair with it otherwise). */
export async function deletePair(datastoreId: string, path: string): Promise<void> {
  await ddb.send(new DeleteCommand({ TableName: tableName("layers"), Key: { datastoreId, entry: pairEntry(path) } }));
}
