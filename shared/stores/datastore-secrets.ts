// A database store's password, kept apart from everything else about the store: one secret per data store,
// in Secrets Manager on AWS (named under the stack's prefix, which only the functions that connect may read)
// or in a file of the engine's data folder readable by its user alone. Records, items, answers and logs hold
// the connection without it.
import { mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { config } from "#shared/config.ts";

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

const parse = (text: string | undefined) => {
  const value = JSON.parse(text ?? "{}") as { password?: unknown };
  if (typeof value.password !== "string") throw new Error("the data store secret holds no password");
  return value.password;
};

export async function readDataStorePassword(datastoreId: string): Promise<string> {
  const at = where(datastoreId);
  if ("file" in at) return parse(await readFile(at.file, "utf8"));
  const { m, client } = await secretsManager();
  const out = await client.send(new m.GetSecretValueCommand({ SecretId: at.secretId }));
  return parse(out.SecretString);
}

/** Stores (or replaces) a data store's password; done before the store is registered, so none lacks it. */
export async function writeDataStorePassword(datastoreId: string, password: string): Promise<void> {
  const at = where(datastoreId);
  const text = JSON.stringify({ password });
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
