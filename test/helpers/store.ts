// Direct access to a local engine's store, for the states only the server itself (or a crash) can cause.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { BatchWriteCommand, DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { startDynamo } from "#infra/local/dynamo.ts";
import { inProcessClientOptions } from "#infra/local/in-process-dynamo.ts";

/**
 * A document client of a local store: over HTTP, or `inProcess` as the engine's own clients reach it (through
 * the transaction layer and its item cache, with no socket). `maxAttempts: 1` where a retry would hide a fault.
 */
export const storeClient = (endpoint: string, options: { inProcess?: boolean; maxAttempts?: number } = {}) =>
  DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      ...(options.maxAttempts ? { maxAttempts: options.maxAttempts } : {}),
      ...(options.inProcess ? inProcessClientOptions : {}),
    }),
  );
const client = (endpoint: string) => storeClient(endpoint);

/** The running engine's store (through its own endpoint, as the operator command reaches it). */
export function runningStore(dataDir: string): DynamoDBDocumentClient {
  const { dynamoEndpoint } = JSON.parse(readFileSync(join(dataDir, "engine.json"), "utf8")) as {
    dynamoEndpoint: string;
  };
  return client(dynamoEndpoint);
}

/** Opens a stopped engine's store, runs `fn` against it, and closes it again. */
export async function withStoppedStore(
  dataDir: string,
  fn: (ddb: DynamoDBDocumentClient) => Promise<void>,
): Promise<void> {
  const store = await startDynamo(join(dataDir, "dynamodb"));
  const ddb = client(store.endpoint);
  try {
    await fn(ddb);
  } finally {
    ddb.destroy();
    await store.close();
  }
}

/**
 * Moves a server's catalog version on, as every service write does: the catalog a function keeps is read again
 * on its next request, so records written straight into the table are seen.
 */
export const bumpCatalog = (ddb: DynamoDBDocumentClient, serverId: string) =>
  ddb.send(
    new UpdateCommand({
      TableName: "mapgate-services",
      Key: { serverId, entry: "#catalog" },
      UpdateExpression: "ADD #v :one",
      ExpressionAttributeNames: { "#v": "version" },
      ExpressionAttributeValues: { ":one": 1 },
    }),
  );

/**
 * Writes records straight into the services table, 25 a batch (BatchWriteItem's most), again for what a batch
 * leaves unprocessed, then bumps the server's catalog: how the benches seed thousands of services at once.
 */
export async function putServices(
  ddb: DynamoDBDocumentClient,
  serverId: string,
  items: readonly Record<string, unknown>[],
): Promise<void> {
  for (let i = 0; i < items.length; i += 25) {
    let pending: Record<string, unknown>[] = items.slice(i, i + 25).map((Item) => ({ PutRequest: { Item } }));
    while (pending.length > 0) {
      const res = await ddb.send(new BatchWriteCommand({ RequestItems: { "mapgate-services": pending } }));
      pending = (res.UnprocessedItems?.["mapgate-services"] ?? []) as Record<string, unknown>[];
    }
  }
  await bumpCatalog(ddb, serverId);
}
