// dynalite, in-process, listening on loopback: the handlers reach it through the ordinary AWS SDK.
import type { AddressInfo } from "node:net";
import { CreateTableCommand, DynamoDBClient, ResourceInUseException } from "@aws-sdk/client-dynamodb";
import dynalite from "dynalite";
import { TABLES, type TableSpec } from "#infra/system.ts";
import { startTransactionProxy } from "./transactions.ts";

export interface LocalDynamo {
  readonly endpoint: string;
  close(): Promise<void>;
}

export const localTableName = (name: string) => `mapgate-${name}`;

/**
 * dynalite behind the transaction proxy: what the handlers of the local engine talk to. With a journal, a
 * transaction a crash interrupted is rolled back before the endpoint is returned, so nothing reads it half-done.
 * dynalite never asks LevelDB for synced writes: each acknowledged write has reached the kernel (it survives
 * the process being killed) but not necessarily the disk (a power cut may lose the last ones).
 */
export async function startDynamo(path: string | undefined, journal?: string): Promise<LocalDynamo> {
  const store = await startDynalite(path);
  try {
    const proxy = await startTransactionProxy(store.endpoint, journal ? { journal } : {});
    return {
      endpoint: proxy.endpoint,
      close: async () => {
        await proxy.close();
        await store.close();
      },
    };
  } catch (err) {
    await store.close();
    throw err;
  }
}

async function startDynalite(path: string | undefined, port = 0): Promise<LocalDynamo> {
  // No path: in memory (tests).
  const server = dynalite({ ...(path ? { path } : {}), createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  const { port: actual } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${actual}`,
    close: () => new Promise<void>((resolve, reject) => server.close((err?: Error) => (err ? reject(err) : resolve()))),
  };
}

function createInput(spec: TableSpec) {
  const attributes = new Set<string>([spec.partitionKey]);
  if (spec.sortKey) attributes.add(spec.sortKey);
  for (const index of spec.indexes ?? []) {
    attributes.add(index.partitionKey);
    if (index.sortKey) attributes.add(index.sortKey);
  }
  const keySchema = (pk: string, sk?: string) => [
    { AttributeName: pk, KeyType: "HASH" as const },
    ...(sk ? [{ AttributeName: sk, KeyType: "RANGE" as const }] : []),
  ];
  return {
    TableName: localTableName(spec.name),
    BillingMode: "PAY_PER_REQUEST" as const,
    AttributeDefinitions: [...attributes].map((AttributeName) => ({ AttributeName, AttributeType: "S" as const })),
    KeySchema: keySchema(spec.partitionKey, spec.sortKey),
    ...(spec.indexes?.length
      ? {
          GlobalSecondaryIndexes: spec.indexes.map((i) => ({
            IndexName: i.name,
            KeySchema: keySchema(i.partitionKey, i.sortKey),
            Projection: { ProjectionType: "ALL" as const },
          })),
        }
      : {}),
  };
}

/** Creates every declared table that does not exist yet (the same declarations the CDK stack uses). */
export async function createTables(endpoint: string): Promise<void> {
  const client = new DynamoDBClient({
    endpoint,
    region: "us-east-1",
    credentials: { accessKeyId: "local", secretAccessKey: "local" },
  });
  try {
    for (const spec of TABLES) {
      try {
        await client.send(new CreateTableCommand(createInput(spec)));
      } catch (err) {
        if (!(err instanceof ResourceInUseException)) throw err;
      }
    }
  } finally {
    client.destroy();
  }
}
