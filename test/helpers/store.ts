// Direct access to a local engine's store, for the states only the server itself (or a crash) can cause.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";
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
