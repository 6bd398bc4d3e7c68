// The one DynamoDB client handlers use. Its endpoint comes from the SDK's own configuration
// (AWS_ENDPOINT_URL_DYNAMODB on the local engine), so no code here knows which engine it runs on. An engine
// may register client options process-wide before this module loads (the local engine registers a request
// handler that reaches its store in-process); on AWS none is registered and the clients use the SDK's own
// HTTP handler, one shared by both.
import {
  BatchGetItemCommand,
  type BatchGetItemCommandOutput,
  DynamoDBClient,
  type DynamoDBClientConfig,
} from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, QueryCommand, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { unmarshall } from "@aws-sdk/util-dynamodb";
import { NodeHttpHandler } from "@smithy/node-http-handler";
import type { InitializeMiddleware, MetadataBearer } from "@smithy/types";
import type { TABLES } from "#shared/system.ts";
import { tableName } from "#shared/config.ts";

const engineOptions = (globalThis as { [key: symbol]: DynamoDBClientConfig | undefined })[
  Symbol.for("mapgate.dynamodb.clientConfig")
];

/**
 * Per-call work the SDK does for nothing here, removed from every client: its logger middleware makes a redacted
 * deep copy of each input and output for a logger mapgate never gives it (the default one discards them), and its
 * user-agent middleware re-escapes the same user-agent string on each call (DynamoDB needs none). Together about a
 * fifth of a warm read's CPU.
 */
function lean(client: DynamoDBClient): DynamoDBClient {
  client.middlewareStack.remove("loggerMiddleware");
  client.middlewareStack.remove("getUserAgentMiddleware");
  return client;
}

/**
 * The options of both clients. On AWS they share one HTTP handler, so one pool of kept-alive TLS connections (a cold
 * function opens one connection to DynamoDB, not one per client).
 */
const options: DynamoDBClientConfig = {
  maxAttempts: 4,
  ...(engineOptions?.requestHandler ? {} : { requestHandler: new NodeHttpHandler() }),
  ...engineOptions,
};

export const ddb = DynamoDBDocumentClient.from(lean(new DynamoDBClient(options)), {
  marshallOptions: { removeUndefinedValues: true },
});

/**
 * The client of `batchGet`, the read on every request's path: it resolves its middleware stack once per command
 * type instead of on each call (`cacheMiddleware`), which lib-dynamodb's commands cannot use (their marshalling
 * is bound to the first command sent), so keys and items are marshalled here. Middleware added to it after its
 * first call of a command type is not seen by that type.
 */
const reads = lean(new DynamoDBClient({ ...options, cacheMiddleware: true }));

/**
 * Adds an initialize-step middleware to every client this module sends through: how the tests and the bench
 * observe the store's requests. Add it before the first request: the read client resolves its middleware at its
 * first call of a command type and never again.
 */
export function observeStore(name: string, middleware: InitializeMiddleware<object, MetadataBearer>): void {
  for (const client of [ddb, reads]) client.middlewareStack.add(middleware as never, { step: "initialize", name });
}

/** True for the SDK's error when a ConditionExpression failed: the expected outcome of a lost race. */
export function isConditionFailure(err: unknown): boolean {
  return err instanceof Error && err.name === "ConditionalCheckFailedException";
}

/** True when a transaction was cancelled only because another one was changing the same items at once. */
export function isTransactionConflict(err: unknown): boolean {
  if (!(err instanceof Error) || err.name !== "TransactionCanceledException") return false;
  const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
  return (
    reasons.some((r) => r.Code === "TransactionConflict") && !reasons.some((r) => r.Code === "ConditionalCheckFailed")
  );
}

/**
 * Runs a transaction again while it is cancelled by TransactionConflict (concurrent writes to one item, such as an
 * organization's usage counter), with jittered backoff (about 2.5 s in all); any other failure goes to the caller.
 */
export async function retryingConflicts<T>(run: () => Promise<T>, attempts = 8): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      if (!isTransactionConflict(err) || attempt >= attempts) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
    }
  }
}

/** Which item of a cancelled transaction failed its condition (by position), if that is why it failed. */
export function failedConditions(err: unknown): number[] | undefined {
  if (!(err instanceof Error) || err.name !== "TransactionCanceledException") return undefined;
  const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
  return reasons.flatMap((r, i) => (r.Code === "ConditionalCheckFailed" ? [i] : []));
}

type QueryInput = ConstructorParameters<typeof QueryCommand>[0];
type ScanInput = ConstructorParameters<typeof ScanCommand>[0];

/** Every item a Query matches, page after page (DynamoDB answers at most 1 MB per page). */
export async function queryAll(input: QueryInput): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** The tables shared/system.ts gives a `byPortal` index. */
type WithPortalIndex<T> = T extends { name: infer Name; indexes: readonly (infer Index)[] }
  ? Index extends { name: "byPortal" }
    ? Name
    : never
  : never;
type PortalIndexed = WithPortalIndex<(typeof TABLES)[number]>;

/** Every item of one organization, through the table's `byPortal` index. */
export function queryByPortal(table: PortalIndexed, portalId: string) {
  return queryAll({
    TableName: tableName(table),
    IndexName: "byPortal",
    KeyConditionExpression: "portalId = :p",
    ExpressionAttributeValues: { ":p": portalId },
  });
}

/** Every item a Scan finds: only for small operator-side tables, never on a request's path. */
export async function scanAll(input: ScanInput): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(new ScanCommand({ ...input, ExclusiveStartKey: start }));
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** A BatchGetItem carried to the end (unprocessed keys retried with backoff); items by real table name. */
export type BatchGetRequest = Record<string, { Keys: Record<string, string>[]; ConsistentRead?: boolean }>;

export async function batchGet(request: BatchGetRequest): Promise<Record<string, Record<string, unknown>[]>> {
  let keys: typeof request | undefined = request;
  const found: Record<string, Record<string, unknown>[]> = {};
  for (let attempt = 0; keys && Object.keys(keys).length > 0; attempt++) {
    if (attempt > 0) await new Promise((r) => setTimeout(r, 10 * 2 ** attempt));
    if (attempt > 5) throw new Error("store lookup throttled");
    const out: BatchGetItemCommandOutput = await reads.send(
      new BatchGetItemCommand({ RequestItems: marshallKeys(keys) }),
    );
    for (const [table, items] of Object.entries(out.Responses ?? {}))
      (found[table] ??= []).push(...items.map((item) => unmarshall(item)));
    keys = out.UnprocessedKeys ? unmarshallKeys(out.UnprocessedKeys) : undefined;
  }
  return found;
}

type AttributeKeys = NonNullable<ConstructorParameters<typeof BatchGetItemCommand>[0]["RequestItems"]>;

/** The keys of a BatchGetRequest as DynamoDB's JSON: every key attribute is a string. */
function marshallKeys(request: BatchGetRequest): AttributeKeys {
  const out: AttributeKeys = {};
  for (const table in request) {
    const spec = request[table] as BatchGetRequest[string];
    const keys = spec.Keys.map((key) => {
      const attributes: Record<string, { S: string }> = {};
      for (const k in key) attributes[k] = { S: key[k] as string };
      return attributes;
    });
    out[table] =
      spec.ConsistentRead === undefined ? { Keys: keys } : { Keys: keys, ConsistentRead: spec.ConsistentRead };
  }
  return out;
}

function unmarshallKeys(keys: AttributeKeys): BatchGetRequest | undefined {
  const out: BatchGetRequest = {};
  for (const [table, spec] of Object.entries(keys)) {
    out[table] = {
      ...(spec.ConsistentRead === undefined ? {} : { ConsistentRead: spec.ConsistentRead }),
      Keys: (spec.Keys ?? []).map((key) => unmarshall(key) as Record<string, string>),
    };
  }
  return Object.keys(out).length > 0 ? out : undefined;
}
