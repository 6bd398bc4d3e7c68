// Hosted layers' data in a PostgreSQL + PostGIS database mapgate owns: one schema per hosted service, named from its
// item id (`h_<32 hex>`), one table per layer named after the layer (quoted through the emitters' identifier code),
// an identity `fid` as primary key, a `geom` column in EPSG:4326 with a GiST index. A service is made in one
// transaction (schema, tables, rows in parameterized multi-row INSERTs, indexes) and dropped with its schema, so a
// failure leaves nothing. Its layers are read by the PostGIS reader that serves by-reference database layers.
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
import { DatasetError } from "#shared/features/errors.ts";
import { EDITING_TABLE, editingOf, type LayerEditing, withEditing } from "#shared/features/schema.ts";
import { type ColumnSpec, type ColumnType, type Extent, toWkb } from "#shared/features/geopackage-writer.ts";
import { classifyPgError, endedWhileIdle, PostGisDatabase, STATEMENT_TIMEOUT_MS } from "#shared/features/postgis.ts";
import { type OpenDataset, postGisDataset } from "#shared/features/sources.ts";
import { quoteIdentifier } from "#shared/features/sql/emitter.ts";
import { checkedItemId, HOSTED_STORE_ID } from "#shared/hosted/source-id.ts";
import { AmbiguousKeyError, keyOf } from "#shared/hosted/append-keys.ts";
import { applyEdits, EditsRolledBack } from "#shared/hosted/edit-apply.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import { editingTableDdl, recordLayerEditing } from "#shared/features/sql/write.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import type {
  AppendCounts,
  AppendRow,
  BeforeCommit,
  EditOutcome,
  EditRequest,
  DefinitionChange,
  HostedColumn,
  HostedDefinitions,
  HostedLayer,
  HostedStore,
  KeptData,
  KeptService,
  LayerAppend,
} from "#shared/hosted/store.ts";
import { itemId as newDataId } from "#shared/ids.ts";
import type { FieldKind } from "#shared/hosted/tables.ts";
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
/** PostgreSQL binds at most 65,535 parameters to one statement; rows per INSERT stay well below it. */
const MAX_PARAMETERS = 60_000;
const MAX_ROWS_PER_INSERT = 1000;
/** PostgreSQL keeps identifiers of at most 63 bytes (longer ones are cut, silently). */
const MAX_IDENTIFIER = 63;

/** How long a reader waits for a definition change it saw in the service record to be committed in the database. */
const REVISION_PATIENCE_MS = 2_000;
const REVISION_PAUSE_MS = 50;

const SCHEMA_PREFIX = "h_";
const GEOMETRY_COLUMN = "geom";
const OID_COLUMN = "fid";

const COLUMN_TYPES: Readonly<Record<FieldKind, (c: HostedColumn) => string>> = {
  integer: () => "integer",
  double: () => "double precision",
  date: () => "timestamptz",
  string: (c) => (c.length !== undefined ? `varchar(${Math.max(1, Math.floor(c.length))})` : "text"),
};

const GEOMETRY_TYPES: Readonly<Record<string, string>> = {
  POINT: "Point",
  MULTIPOINT: "MultiPoint",
  LINESTRING: "LineString",
  MULTILINESTRING: "MultiLineString",
  POLYGON: "Polygon",
  MULTIPOLYGON: "MultiPolygon",
};

/** A service's schema. */
export const schemaOf = (serviceItemId: string) => `${SCHEMA_PREFIX}${checkedItemId(serviceItemId)}`;

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

// --- the connection ---------------------------------------------------------------------------------------------

interface Hosting {
  readonly connection: PostgresConnection;
  readonly pool: Pool;
  readonly db: PostGisDatabase;
}

let hosting: Promise<Hosting> | undefined;

/** The hosting database's connection, from HOSTED_DATABASE (the URI holds no password: config.ts refuses one). */
function hostingConnection(): PostgresConnection {
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
async function inTransaction<T>(
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
function hostingDatabase(): Promise<Hosting> {
  if (!hosting) {
    const made = open();
    hosting = made;
    made.catch(() => {
      if (hosting === made) hosting = undefined;
    });
  }
  return hosting;
}

/** A write transaction on the hosting database, its errors as the reader's (classifyPgError). */
async function writing<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  const { pool } = await hostingDatabase();
  try {
    return await inTransaction(pool, "BEGIN", work);
  } catch (err) {
    // A request's edits rolled back on purpose (rollbackOnFailure) carry their results to the caller.
    if (err instanceof DatasetError || err instanceof EditsRolledBack) throw err;
    throw classifyPgError(err);
  }
}

// --- making and dropping a service's data -----------------------------------------------------------------------

/** Inserts a layer's rows in multi-row INSERTs, every value a parameter. */
async function insertRows(client: PoolClient, table: string, layer: HostedLayer): Promise<void> {
  const names = layer.columns.map((c) => c.name);
  const perRow = names.length + (layer.geometryType ? 1 : 0);
  const columns = [...names, ...(layer.geometryType ? [GEOMETRY_COLUMN] : [])].map(quoteIdentifier).join(", ");
  // A multi-part layer takes single parts (a Polygon among MultiPolygons) as one-part collections.
  const geometry = layer.geometryType?.startsWith("MULTI")
    ? (n: number) => `ST_Multi(ST_GeomFromWKB($${n}, 4326))`
    : (n: number) => `ST_GeomFromWKB($${n}, 4326)`;
  const batch = Math.max(1, Math.min(MAX_ROWS_PER_INSERT, Math.floor(MAX_PARAMETERS / Math.max(1, perRow))));
  let values: unknown[] = [];
  let tuples: string[] = [];
  const flush = async () => {
    if (tuples.length === 0) return;
    // A table of no columns but its key takes a row of defaults.
    const sql =
      perRow === 0
        ? `INSERT INTO ${table} SELECT FROM generate_series(1, ${tuples.length})`
        : `INSERT INTO ${table} (${columns}) VALUES ${tuples.join(", ")}`;
    await client.query({ text: sql, values });
    values = [];
    tuples = [];
  };
  for await (const row of layer.rows) {
    const cells: string[] = [];
    for (const name of names) {
      const v = row.values?.[name];
      values.push(v === undefined ? null : typeof v === "bigint" ? v.toString() : v);
      cells.push(`$${values.length}`);
    }
    if (layer.geometryType) {
      values.push(row.geometry ? Buffer.from(toWkb(row.geometry).wkb) : null);
      cells.push(geometry(values.length));
    }
    tuples.push(`(${cells.join(", ")})`);
    if (tuples.length >= batch) await flush();
  }
  await flush();
}

/** A table's extent in WGS 84 (none without rows with geometry). */
async function extentOf(client: PoolClient, table: string): Promise<Extent | undefined> {
  const g = quoteIdentifier(GEOMETRY_COLUMN);
  const out = await client.query({
    text: `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(${g}) AS e FROM ${table}) AS s`,
    rowMode: "array",
  });
  const v = (out.rows[0] ?? []) as unknown[];
  return v.length === 4 && v.every((x) => typeof x === "number" && Number.isFinite(x))
    ? (v as unknown as Extent)
    : undefined;
}

/** What a service's tables take (with their indexes and TOAST), as counted against its owner's quota. */
async function schemaBytes(client: PoolClient, schema: string): Promise<number> {
  const size = await client.query({
    text: `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::float8 FROM pg_class c
      JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
    values: [schema],
    rowMode: "array",
  });
  return Number((size.rows[0] as unknown[] | undefined)?.[0] ?? 0);
}

async function createLayer(client: PoolClient, schema: string, layer: HostedLayer) {
  const table = `${quoteIdentifier(schema)}.${quoteIdentifier(tableOf(layer.name))}`;
  const type = layer.geometryType ? GEOMETRY_TYPES[layer.geometryType] : undefined;
  if (layer.geometryType && !type) throw new Error(`no PostGIS type for ${layer.geometryType}`);
  const definitions = [
    `${quoteIdentifier(OID_COLUMN)} integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY`,
    ...layer.columns.map((c) => `${quoteIdentifier(c.name)} ${COLUMN_TYPES[c.kind](c)}`),
    ...(type ? [`${quoteIdentifier(GEOMETRY_COLUMN)} geometry(${type}, 4326)`] : []),
  ];
  await client.query(`CREATE TABLE ${table} (${definitions.join(", ")})`);
  // A field's alias (its column as the file named it) is the column's comment, as a GeoPackage keeps it as the
  // column's title.
  await setComments(client, table, layer.columns);
  await insertRows(client, table, layer);
  let extent: Extent | undefined;
  if (type) {
    await client.query(`CREATE INDEX ON ${table} USING gist (${quoteIdentifier(GEOMETRY_COLUMN)})`);
    extent = await extentOf(client, table);
  }
  await recordEditing(client, schema, [layer]);
  // Statistics for the planner from the start (autovacuum would come to it later).
  await client.query(`ANALYZE ${table}`);
  return extent;
}

/** New layers' editing records (their global id and tracking fields) in the service's mapgate_editing table. */
async function recordEditing(
  client: PoolClient,
  schema: string,
  layers: readonly { readonly name: string; readonly editing?: LayerEditing | undefined }[],
): Promise<void> {
  const tracked = layers.filter((l) => l.editing !== undefined);
  if (tracked.length === 0) return;
  await client.query(editingTableDdl(schema));
  const now = Date.now();
  for (const l of tracked) {
    const q = recordLayerEditing(postgresEmitter, schema, tableOf(l.name), l.editing ?? {}, now);
    await client.query({ text: q.sql, values: q.params });
  }
}

/** Whether this warm function has seen PostGIS in the hosting database. */
/**
 * A service schema's comment: when it was made (which PostgreSQL's catalogs do not keep: the sweeper of data no
 * service names reads it) and its definition revision (which readers wait for). Numbers mapgate formats: no text of a
 * request reaches it.
 */
const schemaNote = (note: { readonly made: number; readonly revision: number }) =>
  `mapgate: made ${Math.floor(note.made)} revision ${Math.floor(note.revision)}`;
const SCHEMA_NOTE = /^mapgate: made (\d{1,16})(?: revision (\d{1,16}))?$/;

/** A schema's comment read back (a bare number: a revision noted before the comment held both). */
function readNote(text: string | null | undefined): { made?: number; revision: number } {
  const m = SCHEMA_NOTE.exec(text ?? "");
  if (m) return { made: Number(m[1]), revision: Number(m[2] ?? 0) };
  const bare = Number(text ?? "0");
  return { revision: Number.isSafeInteger(bare) && bare > 0 ? bare : 0 };
}

const noteQuery = (schema: string) => ({
  text: "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
  values: [schema],
  rowMode: "array" as const,
});

let postgisChecked = false;

async function create(serviceItemId: string, layers: readonly HostedLayer[]): Promise<KeptService> {
  const schema = schemaOf(serviceItemId);
  const { connection } = await hostingDatabase();
  const tables = new Set(layers.map((l) => tableOf(l.name).toLowerCase()));
  if (tables.size !== layers.length) throw new Error("two layers of one service share a name");
  const kept = await writing(async (client) => {
    // A database the stack made has no PostGIS until mapgate asks for it (its login may: rds_superuser); one that
    // has it answers at once, whoever asks.
    if (!postgisChecked) await client.query("CREATE EXTENSION IF NOT EXISTS postgis");
    await client.query(`CREATE SCHEMA ${quoteIdentifier(schema)}`);
    // When it was made, which PostgreSQL's catalogs do not keep: the sweeper of data no service names reads it.
    await client.query(
      `COMMENT ON SCHEMA ${quoteIdentifier(schema)} IS '${schemaNote({ made: Date.now(), revision: 0 })}'`,
    );
    const extents: (Extent | undefined)[] = [];
    for (const layer of layers) extents.push(await createLayer(client, schema, layer));
    return {
      bytes: await schemaBytes(client, schema),
      layers: layers.map((l, i) => {
        const extent = extents[i];
        return {
          // The connection is kept for the record (where the data went); serving reads the deployment's setting.
          source: { datastoreId: HOSTED_STORE_ID, connection, path: `/${schema}/${l.name}` },
          ...(extent ? { extent } : {}),
        };
      }),
    };
  });
  // Committed: PostGIS is there from now on.
  postgisChecked = true;
  return kept;
}

/** The geometry of an appended row as the layer's column takes it (a single part in a multi layer made one-part). */
const geometrySql = (geometryType: string | undefined, n: number) =>
  geometryType?.startsWith("MULTI") ? `ST_Multi(ST_GeomFromWKB($${n}, 4326))` : `ST_GeomFromWKB($${n}, 4326)`;

const paramOf = (v: unknown) => (v === undefined ? null : typeof v === "bigint" ? v.toString() : v);

/** How an appended value is bound, so a VALUES list's columns have the layer's types. */
const CASTS: Readonly<Record<FieldKind, string>> = {
  integer: "integer",
  double: "double precision",
  date: "timestamptz",
  string: "text",
};

/**
 * Updates matched rows by object id, many a statement: `UPDATE … FROM (VALUES …) WHERE fid = v.fid`, every value a
 * parameter cast to its column's type (at most 60,000 parameters, 1,000 rows a statement).
 */
async function updateRows(
  client: PoolClient,
  table: string,
  change: LayerAppend,
  key: NonNullable<LayerAppend["key"]>,
  updates: readonly { id: number; row: AppendRow }[],
  idColumn: string,
): Promise<void> {
  const geometry = key.updateGeometry && change.geometryType !== undefined;
  const names = ["k", ...key.columns.map((_, i) => `c${i}`), ...(geometry ? ["g"] : [])].map(quoteIdentifier);
  const sets = [
    ...key.columns.map((c, i) => `${quoteIdentifier(c)} = v.${quoteIdentifier(`c${i}`)}`),
    ...(geometry ? [`${quoteIdentifier(GEOMETRY_COLUMN)} = v."g"`] : []),
  ];
  if (sets.length === 0 || updates.length === 0) return;
  const perRow = names.length;
  const batch = Math.max(1, Math.min(MAX_ROWS_PER_INSERT, Math.floor(MAX_PARAMETERS / perRow)));
  for (let start = 0; start < updates.length; start += batch) {
    const values: unknown[] = [];
    const tuples: string[] = [];
    for (const { id, row } of updates.slice(start, start + batch)) {
      values.push(id);
      const cells = [`$${values.length}::integer`];
      for (const c of key.columns) {
        values.push(paramOf(row.values[c]));
        cells.push(`$${values.length}::${CASTS[change.kinds[c] ?? "string"]}`);
      }
      if (geometry) {
        values.push(row.geometry ? Buffer.from(toWkb(row.geometry).wkb) : null);
        cells.push(geometrySql(change.geometryType, values.length));
      }
      tuples.push(`(${cells.join(", ")})`);
    }
    await client.query({
      text: `UPDATE ${table} SET ${sets.join(", ")} FROM (VALUES ${tuples.join(", ")}) AS v(${names.join(", ")}) WHERE ${table}.${quoteIdentifier(idColumn)} = v."k"`,
      values,
    });
  }
}

/**
 * Appends rows to a layer in one transaction: added in multi-row INSERTs (the identity numbers them after the
 * layer's highest), matched ones updated by their object id; the data's new size and the layer's extent settled
 * before COMMIT, so a refusal rolls everything back.
 */
/** A table's primary key column (`table` quoted as a statement names it, read by the server as a regclass). */
async function primaryKeyOf(client: PoolClient, table: string): Promise<string> {
  const out = await client.query({
    text: `SELECT a.attname::text FROM pg_index i
      JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
      WHERE i.indrelid = $1::regclass AND i.indisprimary`,
    values: [table],
    rowMode: "array",
  });
  const name = (out.rows[0] as unknown[] | undefined)?.[0];
  if (typeof name !== "string") throw new Error("a hosted table without a primary key");
  return name;
}

/** Rows held in memory (an append's, checked before any is written) as the writer takes them. */
async function* eachOf<T>(rows: readonly T[]): AsyncIterable<T> {
  yield* rows;
}

async function append(serviceItemId: string, change: LayerAppend, kept: DefinitionChange): Promise<AppendCounts> {
  const schema = schemaOf(serviceItemId);
  const table = `${quoteIdentifier(schema)}.${quoteIdentifier(tableOf(change.table))}`;
  const key = change.key;
  return writing(async (client) => {
    // The layer's rows by key, read in one pass (no index is needed): -1 marks a value two rows share.
    const rows = new Map<string, number>();
    // The object id's column: `fid` where publishing made the table, the definition's (OBJECTID) where it did.
    const idColumn = key ? await primaryKeyOf(client, table) : OID_COLUMN;
    if (key) {
      const out = await client.query({
        text: `SELECT ${quoteIdentifier(idColumn)}, ${quoteIdentifier(key.column)} FROM ${table} WHERE ${quoteIdentifier(key.column)} IS NOT NULL`,
        rowMode: "array",
      });
      for (const [id, k] of out.rows as [number, unknown][]) {
        const at = keyOf(k) as string;
        rows.set(at, rows.has(at) ? -1 : id);
      }
    }
    const inserts: AppendRow[] = [];
    const updates: { id: number; row: AppendRow }[] = [];
    for (const row of change.rows) {
      const at = key ? rows.get(keyOf(row.values[key.column]) ?? "") : undefined;
      if (at === -1) throw new AmbiguousKeyError(String(row.values[key?.column ?? ""]));
      if (key && at !== undefined) {
        if (!key.skipUpdates) updates.push({ id: at, row });
      } else if (!key?.skipInserts) inserts.push(row);
    }
    if (key) await updateRows(client, table, change, key, updates, idColumn);
    await insertRows(client, table, {
      name: change.table,
      title: change.table,
      ...(change.geometryType ? { geometryType: change.geometryType } : {}),
      columns: change.columns.map((name) => ({ name, kind: "string" as const })),
      rows: eachOf(inserts),
    });
    const extent = change.geometryType ? await extentOf(client, table) : undefined;
    await noteRevision(client, schema, kept.revision);
    await kept.settle(await schemaBytes(client, schema), extent);
    return { added: inserts.length, updated: updates.length };
  });
}

/**
 * Replaces a service's tables: the new ones are made and committed in a schema of their own first (a failure
 * drops it and leaves the kept tables serving), then one short transaction drops the kept tables, moves the new ones
 * into the service's schema and settles the new size before COMMIT.
 */
async function replace(serviceItemId: string, layers: readonly HostedLayer[], change: DefinitionChange): Promise<void> {
  const staging = newDataId();
  const kept = await create(staging, layers);
  const from = schemaOf(staging);
  const to = schemaOf(serviceItemId);
  try {
    await writing(async (client) => {
      for (const layer of layers) {
        const name = quoteIdentifier(tableOf(layer.name));
        await client.query(`DROP TABLE IF EXISTS ${quoteIdentifier(to)}.${name}`);
        await client.query(`ALTER TABLE ${quoteIdentifier(from)}.${name} SET SCHEMA ${quoteIdentifier(to)}`);
      }
      // The new layers' editing records go with them; the staging schema's record table is dropped with it.
      await recordEditing(client, to, layers);
      await client.query(`DROP TABLE IF EXISTS ${quoteIdentifier(from)}.${quoteIdentifier(EDITING_TABLE)}`);
      await client.query(`DROP SCHEMA ${quoteIdentifier(from)}`);
      let extent: Extent | undefined;
      for (const { extent: e } of kept.layers)
        if (e)
          extent = extent
            ? [
                Math.min(extent[0], e[0]),
                Math.min(extent[1], e[1]),
                Math.max(extent[2], e[2]),
                Math.max(extent[3], e[3]),
              ]
            : e;
      await noteRevision(client, to, change.revision);
      await change.settle(await schemaBytes(client, to), extent);
    });
  } catch (err) {
    await drop(staging).catch((e: unknown) =>
      logger.warn("staged hosted data not removed", { schema: from, error: String(e) }),
    );
    throw err;
  }
}

async function drop(serviceItemId: string): Promise<void> {
  const schema = schemaOf(serviceItemId);
  await writing((client) => client.query(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`));
}

// --- definitions (createService's services and the admin wire) --------------------------------------------------

/**
 * The column types of a definition's fields (shared/hosted/define.ts names them as GeoPackage types): each as wide as
 * its Esri type (SmallInteger 16 bits, Integer 32, Single and Double, a String's length, a Date with its zone).
 */
const DEFINED_TYPES: Partial<Record<ColumnType, (c: ColumnSpec) => string>> = {
  SMALLINT: () => "smallint",
  MEDIUMINT: () => "integer",
  INTEGER: () => "integer",
  FLOAT: () => "real",
  DOUBLE: () => "double precision",
  TEXT: (c) => (c.maxLength !== undefined ? `varchar(${Math.max(1, Math.floor(c.maxLength))})` : "text"),
  DATETIME: () => "timestamptz",
};

const tableIn = (schema: string, layerName: string) =>
  `${quoteIdentifier(schema)}.${quoteIdentifier(tableOf(layerName))}`;

function definedColumn(c: ColumnSpec): string {
  const type = DEFINED_TYPES[c.type];
  if (!type) throw new Error(`no PostgreSQL type for a defined ${c.type} field`);
  return `${quoteIdentifier(c.name)} ${type(c)}${c.notNull ? " NOT NULL" : ""}`;
}

/**
 * Keeps fields' aliases as their columns' comments (which the reader takes as aliases in this database alone). A
 * comment takes no parameter: each alias is quoted by the server (quote_literal) and only then put in the statement.
 */
async function setComments(
  client: PoolClient,
  table: string,
  columns: readonly { readonly name: string; readonly title?: string | undefined }[],
): Promise<void> {
  const titled = columns.filter((c): c is { name: string; title: string } => c.title !== undefined);
  if (titled.length === 0) return;
  const quoted = await client.query({
    text: "SELECT quote_literal(t) FROM unnest($1::text[]) WITH ORDINALITY AS u(t, n) ORDER BY n",
    values: [titled.map((c) => c.title)],
    rowMode: "array",
  });
  const statements = titled.map(
    (c, i) =>
      `COMMENT ON COLUMN ${table}.${quoteIdentifier(c.name)} IS ${String((quoted.rows[i] as unknown[] | undefined)?.[0])}`,
  );
  await client.query(statements.join("; "));
}

/** A new column's alias is kept when it says more than its name (as the GeoPackage writer keeps titles). */
const titledOtherwise = (c: ColumnSpec) => c.title !== undefined && c.title !== c.name;

/**
 * Makes a definition change in one transaction: `work` changes the service's schema, the schema records the change's
 * revision (its comment, which readers wait for: shared/features/postgis.ts), and the change is settled (the size
 * counted, the service record changed) before COMMIT, so a refused settle rolls the change back.
 */
async function defining(
  serviceItemId: string,
  change: DefinitionChange,
  work: (client: PoolClient, schema: string) => Promise<void>,
): Promise<void> {
  const schema = schemaOf(serviceItemId);
  await writing(async (client) => {
    await work(client, schema);
    await noteRevision(client, schema, change.revision);
    await change.settle(await schemaBytes(client, schema));
  });
}

/**
 * Records a change's revision in the schema's note, in the change's transaction (readers that see the revision in
 * the service record wait for it here). Numbers made here, never a client's text; when the schema was made is kept.
 */
async function noteRevision(client: PoolClient, schema: string, revision: number): Promise<void> {
  if (!Number.isSafeInteger(revision) || revision < 1) throw new Error("a revision is a positive whole number");
  const before = readNote((await client.query(noteQuery(schema))).rows[0]?.[0] as string | null | undefined);
  const note = schemaNote({ made: before.made ?? Date.now(), revision });
  await client.query(`COMMENT ON SCHEMA ${quoteIdentifier(schema)} IS '${note}'`);
}

/** The definition revision a service's schema holds (0 before its first change; undefined: no such schema). */
async function revisionOf(db: PostGisDatabase, schema: string): Promise<number | undefined> {
  const rows = await db.all("SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1", [
    schema,
  ]);
  if (rows.length === 0) return undefined;
  return readNote(rows[0]?.[0] as string | null | undefined).revision;
}

const definitions: HostedDefinitions = {
  addLayers: (serviceItemId, layers, change) =>
    defining(serviceItemId, change, async (client, schema) => {
      for (const layer of layers) {
        const table = tableIn(schema, layer.name);
        const type = layer.geometryType ? GEOMETRY_TYPES[layer.geometryType] : undefined;
        if (layer.geometryType && !type) throw new Error(`no PostGIS type for ${layer.geometryType}`);
        const definitions = [
          `${quoteIdentifier(layer.idColumn)} integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY`,
          ...layer.columns.map(definedColumn),
          ...(type ? [`${quoteIdentifier(GEOMETRY_COLUMN)} geometry(${type}, 4326)`] : []),
        ];
        await client.query(`CREATE TABLE ${table} (${definitions.join(", ")})`);
        if (type) await client.query(`CREATE INDEX ON ${table} USING gist (${quoteIdentifier(GEOMETRY_COLUMN)})`);
        await setComments(client, table, layer.columns.filter(titledOtherwise));
      }
      await recordEditing(client, schema, layers);
    }),
  deleteLayers: (serviceItemId, tables, change) =>
    defining(serviceItemId, change, async (client, schema) => {
      const names = [...new Set(tables)].map((t) => tableIn(schema, t));
      if (names.length > 0) await client.query(`DROP TABLE IF EXISTS ${names.join(", ")}`);
    }),
  addFields: (serviceItemId, table, columns, change) =>
    defining(serviceItemId, change, async (client, schema) => {
      const qualified = tableIn(schema, table);
      await client.query(`ALTER TABLE ${qualified} ${columns.map((c) => `ADD COLUMN ${definedColumn(c)}`).join(", ")}`);
      await setComments(client, qualified, columns.filter(titledOtherwise));
    }),
  deleteFields: (serviceItemId, table, names, change) =>
    defining(serviceItemId, change, async (client, schema) => {
      const drops = names.map((n) => `DROP COLUMN ${quoteIdentifier(n)}`);
      if (drops.length > 0) await client.query(`ALTER TABLE ${tableIn(schema, table)} ${drops.join(", ")}`);
    }),
  setTitles: (serviceItemId, table, titles, change) =>
    defining(serviceItemId, change, (client, schema) => setComments(client, tableIn(schema, table), titles)),
  truncate: (serviceItemId, table, change) =>
    // Object ids start again from 1, as a GeoPackage's do once its table is empty.
    defining(serviceItemId, change, async (client, schema) => {
      await client.query(`TRUNCATE ${tableIn(schema, table)} RESTART IDENTITY`);
    }),
};

const SERVICE_SCHEMA = /^h_([0-9a-f]{32})$/;

/**
 * Every service's schema with when it was made and what its tables take. A schema made before its making was noted
 * (an older mapgate) is noted now, so it is taken for young: swept an hour later if no service names it.
 */
async function inventory(): Promise<KeptData[]> {
  return writing(async (client) => {
    const found = await client.query({
      text: `SELECT n.nspname, obj_description(n.oid, 'pg_namespace'),
          COALESCE((SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c
            WHERE c.relnamespace = n.oid AND c.relkind = 'r'), 0)::float8
        FROM pg_namespace n WHERE n.nspname ~ '^h_[0-9a-f]{32}$'`,
      rowMode: "array",
    });
    const now = Date.now();
    const kept: KeptData[] = [];
    for (const row of found.rows as [string, string | null, number][]) {
      const [schema, note, bytes] = row;
      const id = SERVICE_SCHEMA.exec(schema)?.[1];
      if (id === undefined) continue;
      const { made, revision } = readNote(note);
      if (made === undefined)
        await client.query(`COMMENT ON SCHEMA ${quoteIdentifier(schema)} IS '${schemaNote({ made: now, revision })}'`);
      kept.push({ serviceItemId: id, created: made ?? now, bytes: Number(bytes) });
    }
    return kept;
  });
}

/**
 * A request's edits in one transaction of the hosting database (no service lock: the database orders concurrent
 * edits, each row's object id from its identity column), every value bound, every statement under the transaction's
 * statement timeout; `beforeCommit` runs in it after the rows are written.
 */
async function edit(serviceItemId: string, request: EditRequest, beforeCommit: BeforeCommit): Promise<EditOutcome> {
  const schema = schemaOf(serviceItemId);
  try {
    return await writing(async (client) => {
      const run = async (q: EmittedQuery) =>
        (await client.query({ text: q.sql, values: q.params, rowMode: "array" })).rows as unknown[][];
      const outcome = await applyEdits(run, postgresEmitter, request, schema);
      await beforeCommit(outcome);
      return outcome;
    });
  } catch (err) {
    if (err instanceof EditsRolledBack) return err.outcome;
    throw err;
  }
}

/** The hosted-data store on the deployment's PostgreSQL database (HOSTED_DATABASE). */
export function postGisStore(): HostedStore {
  // Checked at cold start: a wrong setting fails the first request loudly, never a publish half-way.
  hostingConnection();
  return {
    kind: "postgis",
    definitions,
    create,
    drop,
    inventory,
    append,
    replace,
    edit,
    sourceOf: (serviceItemId, layers) => ({
      datastoreId: HOSTED_STORE_ID,
      connection: hostingConnection(),
      path: `/${schemaOf(serviceItemId)}/${layers.find((l) => l !== null) ?? ""}`,
      layers: [...layers],
    }),
  };
}

/** Services' schemas known to hold an editing record table (one edited, or made with one), in this warm function. */
const withEditingTable = new Set<string>();

/** A layer's editing record (mapgate_editing in its service's schema), when the schema has the table and the row. */
async function editingRecord(db: PostGisDatabase, schema: string, table: string): Promise<LayerEditing | undefined> {
  const at = `${quoteIdentifier(schema)}.${quoteIdentifier(EDITING_TABLE)}`;
  if (!withEditingTable.has(schema)) {
    const found = await db.all("SELECT to_regclass($1) IS NOT NULL", [at]);
    if (found[0]?.[0] !== true) return undefined;
    withEditingTable.add(schema);
  }
  const [row] = await db.all(
    `SELECT global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit FROM ${at} WHERE table_name = $1`,
    [table],
  );
  if (!row) return undefined;
  const [global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit] = row;
  return editingOf({ global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit });
}

/**
 * A hosted layer kept in the hosting database (its source's path: `/<schema>/<layer name>`), opened for queries at
 * its service's definition revision: a schema described at an older one (a change settled, its COMMIT a moment away)
 * is waited for briefly, and never kept under the new revision.
 */
export async function openHostedLayer(path: string, revision = 0): Promise<OpenDataset> {
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
  // The layer's editing record, read on every open: an edit moves its last edit (and the rows' extent) without a
  // new revision, so the described schema is kept by both.
  const editing = await editingRecord(db, schemaName, tableOf(layerName));
  const schema = await db.schema(`${schemaName}.${tableOf(layerName)}`, {
    key: `${revision}:${editing?.lastEditDate ?? 0}`,
    ready,
  });
  if (!schema) throw new DatasetError("The hosted layer's table is no longer in the hosting database.");
  if (schema instanceof DatasetError) throw schema;
  // Shown by the layer's name, as its GeoPackage table would be (the reader names a table `schema.table`).
  return postGisDataset(db, withEditing({ ...schema, name: layerName }, editing));
}
