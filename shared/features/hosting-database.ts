// The hosting database's read side: the connection to the PostgreSQL + PostGIS database mapgate keeps hosted layers in
// (one schema `h_<service item id>` per hosted service, a table per layer) and the opening of a layer for queries.
// Serving a hosted layer loads this module alone (shared/features/sources.ts imports it when it meets one); what makes,
// changes and drops a service's data is shared/hosted/postgis-store.ts, which builds on this connection.
//
// On AWS the database is Aurora Serverless v2 reached through RDS Proxy, which the connection is made for:
// - the proxy refuses startup `options` (the by-reference pool's `-c default_transaction_read_only=on`) and pins a
//   session on session-level SET: nothing is set at startup or per session; every statement runs in a transaction
//   of its own, BEGIN READ ONLY for reads, with SET LOCAL for its time bound (both end with the transaction);
// - named prepared statements, temporary tables and advisory locks pin too: node-postgres sends unnamed statements
//   when a query has no `name` (none here has), and none of the others is used;
// - Aurora resuming from 0 capacity takes up to ~15 s: connecting waits up to HOSTED_CONNECT_TIMEOUT_MS, and a
//   connection refused while the cluster starts is tried again until HOSTED_CONNECT_PATIENCE_MS has passed.
import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import type { Pool, PoolClient } from "pg";
import { config } from "#shared/config.ts";
import { type OpenDataset, postGisDataset } from "#shared/features/dataset.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { EDITING_TABLE, editingOf, type LayerEditing, withEditing } from "#shared/features/schema.ts";
import { quoteIdentifier } from "#shared/features/sql/emitter.ts";
import { attachTableName } from "#shared/features/sql/attachments.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import { classifyPgError, endedWhileIdle, PostGisDatabase, STATEMENT_TIMEOUT_MS } from "#shared/features/postgis.ts";
import { logger } from "#shared/log.ts";
import { parseConnectionString } from "#shared/stores/connection-string.ts";
import type { PostgresConnection } from "#shared/stores/datastores.ts";

/** How long one connection attempt may wait: past the ~15 s an Aurora cluster paused at 0 capacity takes to resume. */
export const HOSTED_CONNECT_TIMEOUT_MS = 20_000;
/** How long connecting is tried again after a refusal (a cluster starting up), within API Gateway's 29 s. */
export const HOSTED_CONNECT_PATIENCE_MS = 24_000;
const RETRY_PAUSE_MS = 500;
/** Connections per pool: a function answers one request at a time on AWS; the local engine shares it. */
const POOL_MAX = 4;
/** PostgreSQL keeps identifiers of at most 63 bytes (longer ones are cut, silently). */
const MAX_IDENTIFIER = 63;

/** How long a reader waits for a definition change it saw in the service record to be committed in the database. */
const REVISION_PATIENCE_MS = 2_000;
const REVISION_PAUSE_MS = 50;

/**
 * A layer's table: its name, or (past PostgreSQL's 63 bytes) its start, cut between characters, and a digest, so no
 * two names meet.
 */
export function tableOf(layerName: string): string {
  if (Buffer.byteLength(layerName) <= MAX_IDENTIFIER) return layerName;
  const digest = createHash("sha256").update(layerName).digest("hex").slice(0, 8);
  let start = "";
  let bytes = 0;
  for (const ch of layerName) {
    bytes += Buffer.byteLength(ch);
    if (bytes > MAX_IDENTIFIER - 9) break;
    start += ch;
  }
  return `${start}_${digest}`;
}

/**
 * A hosted layer's path: its service's schema and its layer's name (a published layer's letters, digits and `_`, or
 * a defined one's: any characters but control characters and `/`, shared/hosted/define.ts).
 */
// eslint-disable-next-line no-control-regex -- control characters are exactly what a layer's name may not hold
const LAYER_PATH = /^\/(h_[0-9a-f]{32})\/([^/\u0000-\u001f\u007f]{1,120})$/;

/**
 * A service schema's comment: when it was made (which PostgreSQL's catalogs do not keep: the sweeper of data no
 * service names reads it) and its definition revision (which readers wait for). Numbers mapgate formats: no text of a
 * request reaches it.
 */
export const schemaNote = (note: { readonly made: number; readonly revision: number }) =>
  `mapgate: made ${Math.floor(note.made)} revision ${Math.floor(note.revision)}`;
const SCHEMA_NOTE = /^mapgate: made (\d{1,16})(?: revision (\d{1,16}))?$/;

/** A schema's comment read back (a bare number: a revision noted before the comment held both). */
export function readNote(text: string | null | undefined): { made?: number; revision: number } {
  const m = SCHEMA_NOTE.exec(text ?? "");
  if (m) return { made: Number(m[1]), revision: Number(m[2] ?? 0) };
  const bare = Number(text ?? "0");
  return { revision: Number.isSafeInteger(bare) && bare > 0 ? bare : 0 };
}

// --- the connection ---------------------------------------------------------------------------------------------

export interface Hosting {
  readonly connection: PostgresConnection;
  readonly pool: Pool;
  readonly db: PostGisDatabase;
}

let hosting: Promise<Hosting> | undefined;

/** The hosting database's connection, from HOSTED_DATABASE (the URI holds no password: config.ts refuses one). */
export function hostingConnection(): PostgresConnection {
  const setting = config().hostedDatabase;
  if (!setting) throw new DatasetError("This deployment keeps no hosted layers in a database (HOSTED_DATABASE).");
  try {
    return parseConnectionString(setting.uri).connection;
  } catch (err) {
    // The parser's words name the part that is wrong and never repeat the value.
    throw new Error(`HOSTED_DATABASE: ${(err as Error).message}`);
  }
}

/** The password, from the secret RDS keeps for the cluster (`{"password": …}`) or its copy in the data folder. */
async function hostingPassword(): Promise<string> {
  const setting = config().hostedDatabase;
  if (!setting) throw new DatasetError("This deployment keeps no hosted layers in a database (HOSTED_DATABASE).");
  let text: string | undefined;
  if ("file" in setting.secret) text = await readFile(setting.secret.file, "utf8");
  else {
    const m = await import("@aws-sdk/client-secrets-manager");
    const out = await new m.SecretsManagerClient({}).send(
      new m.GetSecretValueCommand({ SecretId: setting.secret.secretId }),
    );
    text = out.SecretString;
  }
  const value = JSON.parse(text ?? "{}") as { password?: unknown };
  if (typeof value.password !== "string") throw new Error("the hosting database's secret holds no password");
  return value.password;
}

function sslOf(c: PostgresConnection): false | { rejectUnauthorized: boolean; servername?: string } {
  if (c.sslmode === "disable") {
    if (config().datastorePolicy.requireTls)
      throw new DatasetError(
        "This deployment connects to databases over TLS only: HOSTED_DATABASE has sslmode=disable.",
      );
    return false;
  }
  if (c.sslmode === "verify-full")
    return isIP(c.host) === 0 ? { rejectUnauthorized: true, servername: c.host } : { rejectUnauthorized: true };
  // require, and prefer (taken as require: the hosting database is mapgate's own and never falls back to plain text).
  return { rejectUnauthorized: false };
}

/** Whether connecting failed in a way a cluster that is starting (or resuming) answers, worth another try. */
function startingUp(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  const message = typeof e.message === "string" ? e.message : "";
  // 57P03 cannot_connect_now (the database system is starting up), class 08 connection exceptions, a socket
  // refused or reset while the proxy finds its target, or a connect timeout.
  return (
    code === "57P03" ||
    code.startsWith("08") ||
    code === "ECONNREFUSED" ||
    code === "ECONNRESET" ||
    /timeout exceeded when trying to connect|Connection terminated/.test(message)
  );
}

/** A connection of the pool, waiting for a cluster that is resuming (see the file's head). */
async function connectPatiently(pool: Pool): Promise<PoolClient> {
  const deadline = Date.now() + HOSTED_CONNECT_PATIENCE_MS;
  for (;;) {
    try {
      return await pool.connect();
    } catch (err) {
      if (!startingUp(err) || Date.now() + RETRY_PAUSE_MS >= deadline) throw err;
      logger.info("hosting database not ready: connecting again", {
        reason: String((err as { code?: unknown }).code ?? "").slice(0, 16),
      });
      await new Promise((r) => setTimeout(r, RETRY_PAUSE_MS));
    }
  }
}

/**
 * Runs `work` in one transaction on one connection: committed when it returns, rolled back when it throws. `begin`
 * opens it with its time bounds as SET LOCAL (they end with it: nothing stays on the session for the proxy to pin).
 */
export async function inTransaction<T>(
  pool: Pool,
  begin: "BEGIN" | "BEGIN READ ONLY",
  work: (client: PoolClient) => Promise<T>,
): Promise<T> {
  let client = await connectPatiently(pool);
  let broken = false;
  try {
    // One round trip (the simple protocol takes the three statements).
    const opening = `${begin}; SET LOCAL statement_timeout = ${STATEMENT_TIMEOUT_MS}; SET LOCAL lock_timeout = 5000`;
    try {
      await client.query(opening);
    } catch (err) {
      // An idle connection the server (or the proxy) ended can be handed out before its end is read: nothing of the
      // work has run, so it starts again on a new connection.
      if (!endedWhileIdle(err)) throw err;
      client.release(true);
      client = await connectPatiently(pool);
      await client.query(opening);
    }
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {
      broken = true;
    });
    throw err;
  } finally {
    // A connection whose rollback failed is not handed out again.
    client.release(broken);
  }
}

/** The reader's statements: each in a read-only transaction of its own. */
const readInTransaction = (pool: Pool, sql: string, params: readonly unknown[]) =>
  inTransaction(pool, "BEGIN READ ONLY", async (client) => {
    const out = await client.query({ text: sql, values: params as unknown[], rowMode: "array" });
    return out.rows as unknown[][];
  });

async function open(): Promise<Hosting> {
  const connection = hostingConnection();
  const password = await hostingPassword();
  const { default: pg } = await import("pg");
  const pool = new pg.Pool({
    host: connection.host,
    port: connection.port,
    database: connection.database,
    user: connection.user,
    password,
    ssl: sslOf(connection),
    max: POOL_MAX,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: HOSTED_CONNECT_TIMEOUT_MS,
    // Client-side only: a server that stops answering. No statement_timeout and no options in the startup message.
    query_timeout: STATEMENT_TIMEOUT_MS + 2_000,
    application_name: "mapgate",
    allowExitOnIdle: true,
  });
  pool.on("error", (err) => logger.warn("hosting database connection lost", { reason: classifyPgError(err).message }));
  const db = new PostGisDatabase(
    pool,
    () => {
      // A refused login (a rotated password): the next request reads the secret again.
      if (hosting === held) hosting = undefined;
      void pool.end().catch(() => undefined);
    },
    readInTransaction,
    true,
  );
  const held = hosting;
  return { connection, pool, db };
}

/** The hosting database, connected lazily (the first statement waits for a resuming cluster). */
export function hostingDatabase(): Promise<Hosting> {
  if (!hosting) {
    const made = open();
    hosting = made;
    made.catch(() => {
      if (hosting === made) hosting = undefined;
    });
  }
  return hosting;
}

/** The definition revision a service's schema holds (0 before its first change; undefined: no such schema). */
async function revisionOf(db: PostGisDatabase, schema: string): Promise<number | undefined> {
  const rows = await db.all("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", [
    schema,
  ]);
  if (rows.length === 0) return undefined;
  return readNote(rows[0]?.[0] as string | null | undefined).revision;
}

/**
 * Services' schemas known to hold an editing record table (one edited, or made with one), in this warm function: at
 * most MAX_KNOWN, forgotten all at once past it (a forgotten schema costs one more catalog lookup).
 */
const withEditingTable = new Set<string>();
const MAX_KNOWN = 4096;

/**
 * A layer's editing record (mapgate_editing in its service's schema), when the schema has the table and the row, and
 * the row's version (its xmin: every transaction that changes the layer's rows moves its last edit, so a new one).
 */
async function editingRecord(
  db: PostGisDatabase,
  schema: string,
  table: string,
): Promise<{ editing: LayerEditing; version: string } | undefined> {
  const at = `${quoteIdentifier(schema)}.${quoteIdentifier(EDITING_TABLE)}`;
  const known = withEditingTable.has(schema);
  if (!known) {
    const found = await db.all("SELECT to_regclass($1) IS NOT NULL", [at]);
    if (found[0]?.[0] !== true) return undefined;
    if (withEditingTable.size >= MAX_KNOWN) withEditingTable.clear();
    withEditingTable.add(schema);
  }
  const read = () =>
    db.all(
      `SELECT global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit, xmin::text FROM ${at} WHERE table_name = $1`,
      [table],
    );
  let rows: unknown[][];
  try {
    rows = await read();
  } catch (err) {
    // Remembered, but gone since (the schema made again without it): forgotten, and asked again once.
    if (!known) throw err;
    withEditingTable.delete(schema);
    return editingRecord(db, schema, table);
  }
  const [row] = rows;
  if (!row) return undefined;
  const [global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit, xmin] = row;
  return {
    editing: editingOf({
      global_id_field,
      creator_field,
      creation_date_field,
      editor_field,
      edit_date_field,
      last_edit,
    }),
    version: `${String(last_edit)}.${String(xmin)}`,
  };
}

/**
 * A hosted layer kept in the hosting database (its source's path: `/<schema>/<layer name>`), opened for queries at
 * its service's definition revision: a schema described at an older one (a change settled, its COMMIT a moment away)
 * is waited for briefly, and never kept under the new revision. `extent: false` (an edit) leaves the rows' extent out.
 */
export async function openHostedLayer(
  path: string,
  revision = 0,
  options: { readonly extent?: boolean } = {},
): Promise<OpenDataset> {
  const m = LAYER_PATH.exec(path);
  if (!m) throw new DatasetError("The hosted layer's path is not one mapgate makes.");
  const [, schemaName, layerName] = m as unknown as [string, string, string];
  const { db } = await hostingDatabase();
  const ready = async () => {
    if (revision === 0) return true;
    for (let waited = 0; ; waited += REVISION_PAUSE_MS) {
      const held = await revisionOf(db, schemaName);
      if (held === undefined || held >= revision) return true;
      if (waited >= REVISION_PATIENCE_MS) return false;
      await new Promise((r) => setTimeout(r, REVISION_PAUSE_MS));
    }
  };
  // The layer's editing record, read on every open: an edit moves its last edit and the rows' extent without a new
  // revision, so the described schema (its fields) is kept by the revision, and the extent by the edit.
  const record = await editingRecord(db, schemaName, tableOf(layerName));
  const name = `${schemaName}.${tableOf(layerName)}`;
  const schema = await db.schema(name, { key: revision, ready, extentApart: true });
  if (!schema) throw new DatasetError("The hosted layer's table is no longer in the hosting database.");
  if (schema instanceof DatasetError) throw schema;
  // Kept only as the schema is: read while the database did not yet hold the revision (a change about to commit),
  // it is not kept under that revision.
  const extent =
    options.extent === false
      ? undefined
      : await db.extent(schema, `${revision}:${record?.version ?? ""}`, db.keeps(name, revision));
  const attachments = await hasAttachTable(db, schemaName, tableOf(layerName), revision);
  // Shown by the layer's name, as its GeoPackage table would be (the reader names a table `schema.table`).
  return postGisDataset(
    db,
    withEditing(
      { ...schema, name: layerName, ...(extent ? { extent } : {}), ...(attachments ? { attachments } : {}) },
      record?.editing,
    ),
  );
}

/**
 * Whether a layer keeps attachments (its attachment table is in its service's schema), known per definition revision
 * in this warm function (turning attachments on is a definition change: a new revision), at most MAX_KNOWN of them.
 */
const attachKnown = new Map<string, boolean>();
async function hasAttachTable(db: PostGisDatabase, schema: string, table: string, revision: number): Promise<boolean> {
  const key = `${schema}.${table}:${revision}`;
  const known = attachKnown.get(key);
  if (known !== undefined) return known;
  const at = `${quoteIdentifier(schema)}.${quoteIdentifier(attachTableName(table, postgresEmitter))}`;
  const found = (await db.all("SELECT to_regclass($1) IS NOT NULL", [at]))[0]?.[0] === true;
  if (attachKnown.size >= MAX_KNOWN) attachKnown.clear();
  attachKnown.set(key, found);
  return found;
}
