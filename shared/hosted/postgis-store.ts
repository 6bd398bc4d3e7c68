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
import { toWkb } from "#shared/features/geopackage-writer.ts";
import { classifyPgError, endedWhileIdle, PostGisDatabase, STATEMENT_TIMEOUT_MS } from "#shared/features/postgis.ts";
import { type OpenDataset, postGisDataset } from "#shared/features/sources.ts";
import { quoteIdentifier } from "#shared/features/sql/emitter.ts";
import { checkedItemId, HOSTED_STORE_ID } from "#shared/hosted/source-id.ts";
import type { HostedColumn, HostedLayer, HostedStore, KeptService } from "#shared/hosted/store.ts";
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

/** A layer's table: its name, or (past PostgreSQL's 63 bytes) its start and a digest, so no two names meet. */
export function tableOf(layerName: string): string {
  if (Buffer.byteLength(layerName) <= MAX_IDENTIFIER) return layerName;
  const digest = createHash("sha256").update(layerName).digest("hex").slice(0, 8);
  return `${layerName.slice(0, MAX_IDENTIFIER - 9)}_${digest}`;
}

const LAYER_PATH = /^\/(h_[0-9a-f]{32})\/([A-Za-z0-9_]{1,120})$/;

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
    if (err instanceof DatasetError) throw err;
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
  await insertRows(client, table, layer);
  let extent: [number, number, number, number] | undefined;
  if (type) {
    await client.query(`CREATE INDEX ON ${table} USING gist (${quoteIdentifier(GEOMETRY_COLUMN)})`);
    const out = await client.query({
      text: `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(${quoteIdentifier(GEOMETRY_COLUMN)}) AS e FROM ${table}) AS s`,
      rowMode: "array",
    });
    const v = (out.rows[0] ?? []) as unknown[];
    if (v.length === 4 && v.every((x) => typeof x === "number" && Number.isFinite(x)))
      extent = v as [number, number, number, number];
  }
  // Statistics for the planner from the start (autovacuum would come to it later).
  await client.query(`ANALYZE ${table}`);
  return extent;
}

/** Whether this warm function has seen PostGIS in the hosting database. */
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
    const extents: ([number, number, number, number] | undefined)[] = [];
    for (const layer of layers) extents.push(await createLayer(client, schema, layer));
    const size = await client.query({
      text: `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::float8 FROM pg_class c
        JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      values: [schema],
      rowMode: "array",
    });
    return {
      bytes: Number((size.rows[0] as unknown[] | undefined)?.[0] ?? 0),
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

async function drop(serviceItemId: string): Promise<void> {
  const schema = schemaOf(serviceItemId);
  await writing((client) => client.query(`DROP SCHEMA IF EXISTS ${quoteIdentifier(schema)} CASCADE`));
}

/** The hosted-data store on the deployment's PostgreSQL database (HOSTED_DATABASE). */
export function postGisStore(): HostedStore {
  // Checked at cold start: a wrong setting fails the first request loudly, never a publish half-way.
  hostingConnection();
  // Definitions (the admin wire) are not made in the database yet: no `definitions`, and the admin wire says so.
  return {
    kind: "postgis",
    create,
    drop,
    sourceOf: (serviceItemId, layers) => ({
      datastoreId: HOSTED_STORE_ID,
      connection: hostingConnection(),
      path: `/${schemaOf(serviceItemId)}/${layers.find((l) => l !== null) ?? ""}`,
      layers: [...layers],
    }),
  };
}

/** A hosted layer kept in the hosting database (its source's path: `/<schema>/<layer name>`), opened for queries. */
export async function openHostedLayer(path: string): Promise<OpenDataset> {
  const m = LAYER_PATH.exec(path);
  if (!m) throw new DatasetError("The hosted layer's path is not one mapgate makes.");
  const [, schemaName, layerName] = m as unknown as [string, string, string];
  const { db } = await hostingDatabase();
  const schema = await db.schema(`${schemaName}.${tableOf(layerName)}`);
  if (!schema) throw new DatasetError("The hosted layer's table is no longer in the hosting database.");
  if (schema instanceof DatasetError) throw schema;
  // Shown by the layer's name, as its GeoPackage table would be (the reader names a table `schema.table`).
  return postGisDataset(db, { ...schema, name: layerName });
}
