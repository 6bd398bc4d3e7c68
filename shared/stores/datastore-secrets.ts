// A database store's password, kept apart from everything else about the store: one secret per data store,
// in Secrets Manager on AWS (named under the stack's prefix, which only the functions that connect may read)
// or in a file of the engine's data folder readable by its user alone. Records, items, answers and logs hold
// the connection without it.
//
// A secret also names the destination its password was entered for (host, port, database, user), and is handed
// only to a connection to that destination: a connection changed without its password (an item update, a
// layer still holding the connection it was published with, a race of two updates) never carries a kept
// password to a server it was not given for.
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { config } from "#shared/config.ts";
import type { PostgresConnection } from "#shared/stores/datastores.ts";

/** Where a password may be sent: the database, and the login it was entered for. */
export type SecretDestination = Pick<PostgresConnection, "host" | "port" | "database" | "user">;

/** A connection that is not the one its store's password was entered for; the password is not handed out. */
export class SecretDestinationError extends Error {
  constructor() {
    super("the data store's password was entered for another host, port, database or user");
    this.name = "SecretDestinationError";
  }
}

const ID = /^[0-9a-f]{32}$/;

type Place = { readonly file: string; readonly dir: string } | { readonly secretId: string };

function where(datastoreId: string): Place {
  if (!ID.test(datastoreId)) throw new Error("a data store id is 32 hexadecimal digits");
  const source = config().datastoreSecrets;
  if (!source) throw new Error("no data store secrets configured (DATASTORE_SECRET_PREFIX or DATASTORE_SECRETS_DIR)");
  return "dir" in source
    ? { file: join(source.dir, `${datastoreId}.json`), dir: source.dir }
    : { secretId: `${source.prefix}${datastoreId}` };
}

async function secretsManager() {
  const m = await import("@aws-sdk/client-secrets-manager");
  return { m, client: new m.SecretsManagerClient({}) };
}

const destinationOf = (c: SecretDestination): SecretDestination => ({
  host: c.host,
  port: c.port,
  database: c.database,
  user: c.user,
});

const sameDestination = (a: SecretDestination, b: SecretDestination) =>
  a.host === b.host && a.port === b.port && a.database === b.database && a.user === b.user;

const parse = (text: string | undefined, to: SecretDestination) => {
  const value = JSON.parse(text ?? "{}") as { password?: unknown; for?: unknown };
  if (typeof value.password !== "string") throw new Error("the data store secret holds no password");
  // A secret written before destinations were recorded has none: it was entered for the store's connection.
  if (value.for === undefined) return value.password;
  const entered = value.for && typeof value.for === "object" ? (value.for as SecretDestination) : undefined;
  if (!entered || !sameDestination(entered, to)) throw new SecretDestinationError();
  return value.password;
};

/** A store's password, for a connection to `to` only (else a SecretDestinationError). */
export async function readDataStorePassword(datastoreId: string, to: SecretDestination): Promise<string> {
  const at = where(datastoreId);
  if ("file" in at) return parse(await readFile(at.file, "utf8"), to);
  const { m, client } = await secretsManager();
  const out = await client.send(new m.GetSecretValueCommand({ SecretId: at.secretId }));
  return parse(out.SecretString, to);
}

/**
 * Stores (or replaces) a data store's password, entered for the destination `to`; done before the store is
 * registered, so none lacks it.
 */
export async function writeDataStorePassword(
  datastoreId: string,
  password: string,
  to: SecretDestination,
): Promise<void> {
  const at = where(datastoreId);
  const text = JSON.stringify({ password, for: destinationOf(to) });
  if ("file" in at) {
    await mkdir(at.dir, { recursive: true, mode: 0o700 });
    await writeFile(at.file, text, { mode: 0o600 });
    return;
  }
  const { m, client } = await secretsManager();
  try {
    await client.send(
      new m.CreateSecretCommand({ Name: at.secretId, SecretString: text, Description: "mapgate data store password" }),
    );
  } catch (err) {
    if ((err as Error).name !== "ResourceExistsException") throw err;
    await client.send(new m.PutSecretValueCommand({ SecretId: at.secretId, SecretString: text }));
  }
}

export async function deleteDataStorePassword(datastoreId: string): Promise<void> {
  const at = where(datastoreId);
  if ("file" in at) {
    await rm(at.file, { force: true });
    return;
  }
  const { m, client } = await secretsManager();
  await client
    .send(new m.DeleteSecretCommand({ SecretId: at.secretId, ForceDeleteWithoutRecovery: true }))
    .catch((err: Error) => {
      if (err.name !== "ResourceNotFoundException") throw err;
    });
}
