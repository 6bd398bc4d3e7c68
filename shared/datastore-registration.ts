// The rules of registering data stores, shared by the operator command (`npm run admin -- register-datastore`)
// and the portal (`addItem` with type Data Store, the `datastores` operations): what a registration may name,
// where a database connection may go, where its password is kept (the store's secret, and nowhere else), how a
// registration is proven (validate), changed, pushed to what was published from it (refresh) and removed.
// Errors say what is wrong and never repeat a connection string (it may hold a password).
import { constants } from "node:fs";
import { access, realpath, stat } from "node:fs/promises";
import { isAbsolute, dirname, relative, sep } from "node:path";
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { config, tableName } from "#shared/config.ts";
import { DatasetError, QueryTimeoutError } from "#shared/features/errors.ts";
import { itemId } from "#shared/ids.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { dataStoreItem } from "#shared/items.ts";
import { logger } from "#shared/log.ts";
import { storageAt } from "#shared/storage/open.ts";
import { StorageError, type StoreLocation } from "#shared/storage/storage.ts";
import {
  ConnectionStringError,
  MAX_CONNECTION_STRING,
  type ParsedConnection,
  parseConnectionString,
  redactedConnectionString,
} from "#shared/stores/connection-string.ts";
import { databaseAddress } from "#shared/features/database-address.ts";
import {
  deleteDataStorePassword,
  readDataStorePassword,
  SecretDestinationError,
  writeDataStorePassword,
} from "#shared/stores/datastore-secrets.ts";
import {
  createDataStore,
  DATASET_TYPES,
  type DataStore,
  DataStoreChangedError,
  DataStoreNameTakenError,
  type Dataset,
  deleteDataStore,
  type PostgresConnection,
  updateDataStore,
} from "#shared/stores/datastores.ts";
import { ddb } from "#shared/stores/dynamo.ts";
import { getItem, getItems } from "#shared/stores/items.ts";
import { forEachPairPage } from "#shared/stores/layers.ts";
import { catalogBump, serviceKey } from "#shared/stores/service-keys.ts";
import { getServer } from "#shared/stores/servers.ts";
import { readCatalog } from "#shared/stores/services.ts";
import { getUser } from "#shared/stores/users.ts";

/** A registration that cannot be made as asked; the message says why (never the password). */
export class DataStoreInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DataStoreInputError";
  }
}

export type DataStoreKind = DataStore["kind"];

/** The JSON types of the portal's data store items, and the folder of `path` each lives under. */
export const PORTAL_TYPES = {
  egdb: { kind: "database", folder: "/enterpriseDatabases/" },
  cloudStore: { kind: "cloudStore", folder: "/cloudStores/" },
  folder: { kind: "folder", folder: "/fileShares/" },
} as const satisfies Record<string, { kind: DataStoreKind; folder: string }>;
type PortalType = keyof typeof PORTAL_TYPES;

const NAME = /^[A-Za-z0-9_][A-Za-z0-9_-]{0,119}$/;
/** A data store item's `text`: bounded before it is parsed (a connection string and a little JSON). */
export const MAX_DATA_STORE_JSON = MAX_CONNECTION_STRING + 4096;
/** S3 bucket names as AWS accepts them (general purpose buckets). */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
/** What a password shown redacted reads as; sent back unchanged, it means "keep the password". */
const REDACTED = "********";

/** A data store as the portal's item JSON describes it, checked. */
export interface PortalDataStore {
  readonly type: PortalType;
  readonly kind: DataStoreKind;
  readonly name: string;
  readonly location?: StoreLocation;
  /** A database's connection (normalized by the deployment's rules) and its password. */
  readonly database?: ParsedConnection;
}

const isObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === "object" && !Array.isArray(v);

/**
 * Reads a data store item's JSON (`{"type":"egdb"|"cloudStore"|"folder","path":"/<folder>/<name>","info":{…}}`).
 * A database's connection string is parsed and held to the deployment's rules (TLS, addresses by name only);
 * nothing is connected to.
 */
export async function readDataStoreJson(text: string): Promise<PortalDataStore> {
  if (text.length > MAX_DATA_STORE_JSON)
    throw new DataStoreInputError(`A data store's JSON has at most ${MAX_DATA_STORE_JSON} characters.`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new DataStoreInputError("The data store's JSON ('text') is not JSON.");
  }
  // Only a few known members are read; nothing deeper than these is ever walked.
  if (!isObject(parsed) || nestedDeeperThan(parsed, 8))
    throw new DataStoreInputError("The data store's JSON ('text') must be an object (at most 8 levels deep).");
  const type = parsed.type;
  if (typeof type !== "string" || !Object.hasOwn(PORTAL_TYPES, type))
    throw new DataStoreInputError(`'type' must be one of ${Object.keys(PORTAL_TYPES).join(", ")}.`);
  const { kind, folder } = PORTAL_TYPES[type as PortalType];
  const path = typeof parsed.path === "string" ? parsed.path : "";
  const name = path.startsWith(folder) ? path.slice(folder.length) : "";
  if (!NAME.test(name))
    throw new DataStoreInputError(
      `'path' must be ${folder}<name>, the name being letters, digits, _ or - (at most 120).`,
    );
  const info = isObject(parsed.info) ? parsed.info : {};
  if (info.isManaged === true)
    throw new DataStoreInputError("A managed data store (isManaged true) is not supported: register your own.");
  if (kind === "database") {
    const text = info.connectionString;
    if (typeof text !== "string" || text.trim() === "")
      throw new DataStoreInputError("'info.connectionString' must be specified.");
    return { type: type as PortalType, kind, name, database: await readConnection(text) };
  }
  if (kind === "cloudStore") return { type: type as PortalType, kind, name, location: readCloudStore(info) };
  const location = await checkLocation("folder", {
    folder: typeof info.path === "string" ? info.path : "",
  });
  return { type: type as PortalType, kind, name, ...(location ? { location } : {}) };
}

/**
 * A cloud store's bucket and prefix from ArcGIS's form: `info.objectStore` is `<bucket>[/<prefix>]`; the
 * connection string may name the region and says how to authenticate, which must be the functions' own role.
 */
function readCloudStore(info: Record<string, unknown>): StoreLocation {
  const raw = info.connectionString;
  if (raw !== undefined) {
    let c: unknown;
    try {
      c = typeof raw === "string" ? JSON.parse(raw) : raw;
    } catch {
      throw new DataStoreInputError("'info.connectionString' of a cloud store must be JSON.");
    }
    const o = isObject(c) ? c : {};
    if ("secretAccessKey" in o || "accessKeyId" in o || "secretKey" in o || "accessKey" in o)
      throw new DataStoreInputError(
        "A cloud store is read with mapgate's own role: give no access keys (credentialType IAMRole).",
      );
    if (o.credentialType !== undefined && o.credentialType !== "IAMRole")
      throw new DataStoreInputError("Only credentialType IAMRole is supported for a cloud store.");
  }
  const objectStore = typeof info.objectStore === "string" ? info.objectStore.replace(/^\/+/, "") : "";
  const slash = objectStore.indexOf("/");
  const bucket = slash < 0 ? objectStore : objectStore.slice(0, slash);
  const prefix = slash < 0 ? "" : objectStore.slice(slash + 1);
  return checkCloudLocation({ bucket, prefix });
}

/**
 * A database connection string, parsed and held to the deployment's rules: where TLS is required, `disable`
 * is refused and `prefer` (which falls back to plain text when the server offers no TLS, a downgrade anyone
 * on the path can force) becomes `require`. The host's address is checked when it is connected to.
 */
export async function readConnection(text: string): Promise<ParsedConnection> {
  let parsed: ParsedConnection;
  try {
    parsed = parseConnectionString(text);
  } catch (err) {
    if (err instanceof ConnectionStringError) throw new DataStoreInputError(`The connection string: ${err.message}.`);
    throw err;
  }
  const policy = config().datastorePolicy;
  let { connection } = parsed;
  if (policy.requireTls) {
    if (connection.sslmode === "disable")
      throw new DataStoreInputError("This deployment connects to databases over TLS only: sslmode=disable is refused.");
    if (connection.sslmode === "prefer") connection = { ...connection, sslmode: "require" };
  }
  try {
    await databaseAddress(connection.host);
  } catch (err) {
    if (err instanceof DatasetError) throw new DataStoreInputError(err.message);
    throw err;
  }
  return { connection, password: parsed.password };
}

/** Checks a cloud store's bucket and prefix: a valid name, one the deployment grants. */
function checkCloudLocation(location: { bucket: string; prefix: string }): StoreLocation {
  if (!BUCKET.test(location.bucket) || location.bucket.includes(".."))
    throw new DataStoreInputError(`${JSON.stringify(location.bucket.slice(0, 80))} is not a valid S3 bucket name.`);
  const granted = config().datastorePolicy.cloudStoreBuckets;
  if (granted && !granted.includes(location.bucket))
    throw new DataStoreInputError(
      `Bucket ${location.bucket} is not one this deployment may read (${granted.join(", ") || "none"}): the operator grants buckets with -c cloudStoreBuckets.`,
    );
  const prefix = location.prefix.replace(/^\/+|\/+$/g, "");
  if (prefix.length > 512 || prefix.split("/").some((s) => (s === "" && prefix !== "") || s === "." || s === ".."))
    throw new DataStoreInputError(`${JSON.stringify(location.prefix.slice(0, 80))} is not a valid prefix.`);
  return { bucket: location.bucket, prefix };
}

/** Whether `inner` is `outer` or inside it. */
const within = (outer: string, inner: string) => {
  const r = relative(outer, inner);
  return r === "" || (!r.startsWith("..") && !isAbsolute(r) && !r.startsWith(`..${sep}`));
};

/**
 * Checks a location for its kind: a folder must exist here (absolute), be allowed on this deployment and hold
 * none of the engine's own files; a bucket must be a valid name the deployment grants.
 */
export async function checkLocation(
  kind: DataStoreKind,
  location: StoreLocation | undefined,
): Promise<StoreLocation | undefined> {
  if (kind === "folder") {
    if (!config().datastorePolicy.folders)
      throw new DataStoreInputError(
        "Folder data stores cannot be registered on this deployment (its functions mount no folder): use a cloud store.",
      );
    if (!location || !("folder" in location) || location.folder === "")
      throw new DataStoreInputError("A folder data store needs its folder (info.path, --path).");
    if (!isAbsolute(location.folder)) throw new DataStoreInputError("A folder data store's path must be absolute.");
    let real: string;
    try {
      real = await realpath(location.folder);
      if (!(await stat(real)).isDirectory()) throw new Error("not a folder");
    } catch {
      throw new DataStoreInputError(`${location.folder.slice(0, 256)} is not a folder on this machine.`);
    }
    // The engine's data folder holds its keys and the stores' passwords: no store may be or hold it (a folder
    // inside it, as the demo's store, is fine), nor lie among the passwords.
    const secrets = config().datastoreSecrets;
    if (secrets && "dir" in secrets) {
      const data = await realpath(dirname(secrets.dir)).catch(() => dirname(secrets.dir));
      const held = await realpath(secrets.dir).catch(() => secrets.dir);
      if (within(real, data) || within(held, real))
        throw new DataStoreInputError("A folder data store may not be or hold mapgate's own data folder.");
    }
    return { folder: location.folder };
  }
  if (kind === "cloudStore") {
    if (!location || !("bucket" in location)) throw new DataStoreInputError("A cloud store needs its bucket.");
    return checkCloudLocation(location);
  }
  if (location) throw new DataStoreInputError(`A ${kind} data store has no folder or bucket.`);
  return undefined;
}

export interface NewDataStore {
  readonly title: string;
  readonly owner: string;
  readonly kind: DataStoreKind;
  readonly serverIds: readonly string[];
  readonly datasets: readonly Dataset[];
  /** The name registered through the portal (unique per kind in the organization). */
  readonly name?: string;
  /** The item's tags. */
  readonly tags?: readonly string[];
  /** Required for folder and cloudStore kinds; a database store has none. */
  readonly location?: StoreLocation;
  /** A database store's connection string (a libpq URI or ArcGIS's form). */
  readonly postgres?: string;
  /** A database's connection already read (readDataStoreJson): taken instead of `postgres`. */
  readonly database?: ParsedConnection;
  /**
   * Logs in before registering (the operator command); the portal registers first and `validate` says what
   * is wrong, as ArcGIS does.
   */
  readonly checkConnection?: boolean;
}

/**
 * Registers a data store: its record, its item and (a database's) password as the store's secret, written
 * before the store so none lacks it, and removed again when the registration fails.
 */
export async function registerDataStore(portalId: string, spec: NewDataStore): Promise<DataStore> {
  const owner = await getUser(spec.owner);
  if (!owner || owner.portalId !== portalId)
    throw new DataStoreInputError(`No user ${spec.owner.slice(0, 128)} in this organization.`);
  for (const id of spec.serverIds) {
    const server = await getServer(id);
    if (!server || server.portalId !== portalId)
      throw new DataStoreInputError(`No server ${id.slice(0, 64)} in this organization.`);
  }
  const title = spec.title.trim();
  if (title === "" || title.length > 250) throw new DataStoreInputError("A title has 1–250 characters.");
  const location = await checkLocation(spec.kind, spec.location);
  const paths = new Set<string>();
  for (const entry of spec.datasets) {
    if (!entry.path.startsWith("/") || entry.path.length > 1024)
      throw new DataStoreInputError(`Bad dataset path ${entry.path.slice(0, 256)}.`);
    if (paths.has(entry.path)) throw new DataStoreInputError(`Dataset path ${entry.path} is listed twice.`);
    if (!(DATASET_TYPES as readonly string[]).includes(entry.type))
      throw new DataStoreInputError(`Bad dataset type ${String(entry.type).slice(0, 40)}.`);
    paths.add(entry.path);
  }
  let database = spec.database;
  if (!database && spec.postgres !== undefined) {
    if (spec.kind !== "database") throw new DataStoreInputError(`A ${spec.kind} data store has no connection string.`);
    database = await readConnection(spec.postgres);
  }
  if (database && spec.datasets.length > 0)
    throw new DataStoreInputError("A database store lists what its database holds: give it no datasets.");
  if (database && spec.checkConnection) {
    const problem = await connectionProblem(database.connection, database.password);
    if (problem) throw new DataStoreInputError(`${redactedConnectionString(database.connection)}: ${problem}`);
  }
  const now = Date.now();
  const store: DataStore = {
    datastoreId: itemId(),
    portalId,
    title,
    ...(spec.name !== undefined ? { name: spec.name } : {}),
    owner: spec.owner,
    kind: spec.kind,
    serverIds: [...spec.serverIds],
    ...(location ? { location } : {}),
    ...(database ? { connection: { ...database.connection, revision: 1 } } : {}),
    created: now,
    modified: now,
  };
  if (database) await writeDataStorePassword(store.datastoreId, database.password, database.connection);
  try {
    await createDataStore(
      { store, datasets: spec.datasets },
      { ...dataStoreItem(store), tags: [...(spec.tags ?? [])] },
    );
  } catch (err) {
    if (database) await forgetSecret(store.datastoreId);
    if (err instanceof DataStoreNameTakenError)
      throw new DataStoreInputError(
        `A data store named ${spec.name ?? ""} is registered in this organization already.`,
      );
    throw err;
  }
  return store;
}

/**
 * Removes a store's secret once the store is gone (or was never made). A failure leaves a password with no store:
 * logged for the operator (by the store's id, never the password) rather than failing what already happened.
 */
async function forgetSecret(datastoreId: string): Promise<void> {
  await deleteDataStorePassword(datastoreId).catch((err: unknown) =>
    logger.error("data store secret left behind: delete it", { datastoreId, reason: (err as Error).name }),
  );
}

/**
 * Why a database cannot serve (it cannot be reached, refuses the login or the session, its certificate is not
 * trusted, it lacks PostGIS, it answers too slowly), or undefined.
 */
async function connectionProblem(connection: PostgresConnection, password: string): Promise<string | undefined> {
  const { checkPostGis } = await import("#shared/features/postgis.ts");
  try {
    await checkPostGis(connection, password);
    return undefined;
  } catch (err) {
    if (err instanceof DatasetError) return err.message;
    if (err instanceof QueryTimeoutError) return "The database took too long to answer.";
    throw err;
  }
}

/**
 * Proves a data store can be read as registered: a database logs in and has PostGIS (bounded: connecting
 * gives up after 5 s); a cloud store's prefix can be listed; a folder exists and can be read. Answers
 * `success` or the reason, as `validate` answers `status`.
 */
export async function validateDataStore(
  target: Pick<DataStore, "datastoreId" | "kind" | "location" | "connection"> & { readonly password?: string },
): Promise<string> {
  if (target.connection) {
    let password = target.password;
    if (password === undefined) {
      try {
        password = await readDataStorePassword(target.datastoreId, target.connection);
      } catch (err) {
        if (err instanceof SecretDestinationError)
          return "The data store's password was entered for another host, port, database or user: update its item with the connection string and its password.";
        logger.warn("data store secret unreadable", { datastoreId: target.datastoreId, reason: (err as Error).name });
        return "The data store's password cannot be read: update its item with the connection string again.";
      }
    }
    return (await connectionProblem(target.connection, password)) ?? "success";
  }
  if (target.location && "folder" in target.location) {
    try {
      if (!(await stat(target.location.folder)).isDirectory()) return "The data store's folder is not a folder.";
      await access(target.location.folder, constants.R_OK | constants.X_OK);
      return "success";
    } catch {
      return "The data store's folder does not exist or cannot be read.";
    }
  }
  if (target.location) {
    try {
      await (await storageAt(target.location)).list("", 1);
      return "success";
    } catch (err) {
      if (err instanceof StorageError) return `The data store's bucket cannot be listed: ${err.message}`;
      logger.warn("cloud store validation failed", { datastoreId: target.datastoreId, reason: String(err) });
      return "The data store's bucket cannot be listed.";
    }
  }
  return "The data store has no connection or location to validate.";
}

/** A data store's item data, as `content/items/<id>/data` answers it: the connection never with its password. */
export function dataStoreJson(store: DataStore): Record<string, unknown> {
  const type = store.connection ? "egdb" : store.kind === "folder" ? "folder" : "cloudStore";
  const name = store.name ?? store.title.replace(/[^A-Za-z0-9_-]/g, "_").slice(0, 120);
  const path = `${PORTAL_TYPES[type].folder}${name}`;
  if (store.connection)
    return {
      type,
      path,
      info: {
        isManaged: false,
        dataStoreConnectionType: "shared",
        connectionString: redactedConnectionString(store.connection),
      },
    };
  const l = store.location;
  if (l && "folder" in l) return { type, path, info: { isManaged: false, path: l.folder, dataStorePath: path } };
  if (l)
    return {
      type,
      path,
      provider: "amazon",
      info: {
        isManaged: false,
        connectionString: JSON.stringify({ credentialType: "IAMRole" }),
        objectStore: l.prefix ? `${l.bucket}/${l.prefix}` : l.bucket,
      },
    };
  return { type, path, info: { isManaged: false } };
}

/** libpq's modes from the least protection of the password on its way to the server to the most. */
const SSL_STRENGTH: Readonly<Record<PostgresConnection["sslmode"], number>> = {
  disable: 0,
  prefer: 1,
  require: 2,
  "verify-full": 3,
};

/**
 * What differs between a store's connection and a new one in where its password would go (host, port, database,
 * user) or how well it is protected on the way (a weaker sslmode): each needs the password entered again.
 */
function destinationChanges(from: PostgresConnection, to: PostgresConnection): string[] {
  const changed: string[] = [];
  if (from.host !== to.host) changed.push("host");
  if (from.port !== to.port) changed.push("port");
  if (from.database !== to.database) changed.push("database");
  if (from.user !== to.user) changed.push("user");
  if (SSL_STRENGTH[to.sslmode] < SSL_STRENGTH[from.sslmode]) changed.push(`sslmode (${from.sslmode} to ${to.sslmode})`);
  return changed;
}

/**
 * A database store's new connection (an item update's `text`): the same type and name, the connection held to
 * the rules; a password given replaces the secret (the redacted one sent back as read keeps it, for the same
 * destination only: a changed host, port, database or user, or a weaker sslmode, must come with the password,
 * so a kept password never goes where it was not entered for). The revision advances, so describe and
 * publishing use it at once; published layers on `refreshServer`.
 */
export async function changeConnection(store: DataStore, text: string): Promise<DataStore> {
  const next = await readDataStoreJson(text);
  const current = dataStoreJson(store);
  if (!next.database || !store.connection)
    throw new DataStoreInputError("Only a database's connection changes; register another data store for the rest.");
  if (`${PORTAL_TYPES[next.type].folder}${next.name}` !== current.path)
    throw new DataStoreInputError("A data store's type and path do not change.");
  const keep = next.database.password === "" || next.database.password === REDACTED;
  const changed = destinationChanges(store.connection, next.database.connection);
  if (keep && changed.length > 0)
    throw new DataStoreInputError(
      `The connection's ${changed.join(", ")} changed: enter the password again in the connection string (the kept password is only ever sent to the database and user it was entered for).`,
    );
  if (!keep) await writeDataStorePassword(store.datastoreId, next.database.password, next.database.connection);
  const revision = (store.connection.revision ?? 0) + 1;
  return updateDataStore(store, { connection: { ...next.database.connection, revision } });
}

/**
 * The refusal of an operation that needs a data store nothing is published from on the given servers (all its
 * servers by default), naming up to ten services: bulk-published layers and services published by reference
 * would be left reading a store that is no longer registered there.
 */
export async function publishedProblem(
  store: DataStore,
  serverIds: readonly string[] = store.serverIds,
): Promise<string | undefined> {
  const names: string[] = [];
  for (const serverId of serverIds) {
    for (const s of (await readCatalog(serverId)).services) {
      if (s.source?.datastoreId === store.datastoreId)
        names.push(`${s.folder ? `${s.folder}/` : ""}${s.name} (${s.type})`);
    }
  }
  // Bulk-published layers whose service is gone (a pair left behind) still hold the store.
  if (names.length === 0) {
    await forEachPairPage(store.datastoreId, (pairs) => {
      names.push(...pairs.map((p) => `${p.layer.title} (${p.layer.id})`));
      return names.length <= 10;
    });
  }
  if (names.length === 0) return undefined;
  const shown = names.slice(0, 10).join(", ");
  return `Services published from this data store exist: ${shown}${names.length > 10 ? ` and ${names.length - 10} more` : ""}. Delete them first (allDatasets/deleteLayers removes the bulk-published layers; delete the other services' items).`;
}

/**
 * Pushes a database store's connection (a new revision) to every layer published from it, with a new catalog
 * version of each server concerned: every warm function serving them sees the change on its next request and
 * opens a new pool, reading the secret again. Answers how many layers were changed.
 */
export async function refreshDataStore(store: DataStore): Promise<{ store: DataStore; layers: number }> {
  if (!store.connection) return { store, layers: 0 };
  const fresh = await updateDataStore(store, {
    connection: { ...store.connection, revision: (store.connection.revision ?? 0) + 1 },
  });
  const connection = { ...(fresh.connection as PostgresConnection) };
  const servers = new Set<string>();
  let layers = 0;
  const ids: string[][] = [];
  await forEachPairPage(store.datastoreId, (pairs) => {
    ids.push(pairs.map((p) => p.layer.id));
    return true;
  });
  for (const page of ids) {
    const items = await getItems(page);
    for (const item of items.values()) {
      if (!item.service) continue;
      try {
        await ddb.send(
          new UpdateCommand({
            TableName: tableName("services"),
            Key: serviceKey(item.service),
            UpdateExpression: "SET #s.#c = :c",
            ConditionExpression: "itemId = :id AND #s.datastoreId = :d",
            ExpressionAttributeNames: { "#s": "source", "#c": "connection" },
            ExpressionAttributeValues: { ":c": connection, ":id": item.itemId, ":d": store.datastoreId },
          }),
        );
        servers.add(item.service.serverId);
        layers++;
      } catch (err) {
        // A layer deleted meanwhile has nothing to refresh.
        if ((err as Error).name !== "ConditionalCheckFailedException") throw err;
      }
    }
  }
  for (const serverId of servers) await ddb.send(new UpdateCommand(catalogBump(serverId).Update));
  const { forgetPostGis } = await import("#shared/features/postgis.ts");
  await forgetPostGis(store.datastoreId);
  return { store: fresh, layers };
}

/**
 * Removes a data store with its item and secret. Refused while layers published from it exist: they would be
 * left reading a store that is gone.
 */
export async function removeDataStore(store: DataStore): Promise<void> {
  const problem = await publishedProblem(store);
  if (problem) throw new DataStoreInputError(problem);
  const item = await getItem(store.datastoreId);
  await deleteDataStore(store, item);
  if (store.connection) {
    await forgetSecret(store.datastoreId);
    const { forgetPostGis } = await import("#shared/features/postgis.ts");
    await forgetPostGis(store.datastoreId);
  }
}

export { DataStoreChangedError };
