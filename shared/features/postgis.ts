// PostgreSQL databases with PostGIS, read where they lie with node-postgres: the datasets a database holds
// (tables and views, with their geometry column from geometry_columns), each one's schema (its columns, its
// single-column integer key), and the statements the query plan emits for the PostgreSQL dialect.
//
// One small pool per data store per warm function. Every session is read-only (default_transaction_read_only)
// and every statement bounded (statement_timeout on the server, a query timeout on the client for a server
// that stops answering). The password is read from the data store's secret when a pool is made, and a refused
// login drops the pool, so a changed password is read again by the next request.
import { isIP } from "node:net";
import type { Pool, PoolConfig } from "pg";
import {
  ARGUMENT_FAULTS,
  DataExceptionError,
  DatasetError,
  GeometryTopologyError,
  QueryTimeoutError,
} from "#shared/features/errors.ts";
import {
  type Bounds,
  type EsriFieldType,
  esriGeometryTypeOf,
  type Field,
  type GeometryColumn,
  type LayerSchema,
} from "#shared/features/schema.ts";
import { config } from "#shared/config.ts";
import { logger } from "#shared/log.ts";
import { databaseAddress } from "#shared/features/database-address.ts";
import { readDataStorePassword, SecretDestinationError } from "#shared/stores/datastore-secrets.ts";
import type { PostgresConnection } from "#shared/stores/datastores.ts";

/** How long one statement may run (the feature query's own bound; listing and describing are far quicker). */
export const STATEMENT_TIMEOUT_MS = 10_000;
/** How long connecting may take: a black-holed host is answered within seconds, not at the function's timeout. */
export const CONNECT_TIMEOUT_MS = 5_000;
/**
 * The earliest a check of a connection (validate, describe, publishLayers) answers that no PostgreSQL server could
 * be reached: past the connect timeout, so a closed port, a port where something else answers and a silent one are
 * answered alike, in the same time (else `validate` maps a host's ports by how fast each fails).
 */
export const UNREACHABLE_FLOOR_MS = CONNECT_TIMEOUT_MS + 500;
/** Connections per pool: a function answers one request at a time on AWS; the local engine shares it. */
const POOL_MAX = 4;
/** A database's tables change: what was learnt of them is kept this long. */
const SCHEMA_TTL_MS = 60_000;
/** The most datasets a database lists (beyond it, describe and bulk publishing see the first ones). */
const MAX_DATASETS = 10_000;

/** What a database holds, as a data store's describe lists it: `schema.table`. */
export interface PostGisDataset {
  readonly name: string;
  readonly kind: "featureClass" | "table";
  readonly unpublishable?: string;
}

type Pg = typeof import("pg").default;
let pg: Promise<Pg> | undefined;
/** node-postgres is loaded by the first function that meets a database store, never by the others. */
const loadPg = () => {
  pg ??= import("pg").then((m) => m.default);
  return pg;
};

// SQLSTATEs (PostgreSQL appendix A) that say something of the data source rather than of mapgate.
const LOGIN_REFUSED = new Set(["28P01", "28000"]);
const GONE = new Set(["3D000", "42P01", "42703", "42501"]);
const NETWORK = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "ENOTFOUND",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "EPIPE",
]);
/**
 * What node-postgres says when no PostgreSQL server answered: its connect timeouts, a connection closed before the
 * server spoke, an answer to its TLS request that is neither yes nor no, bytes that are not the protocol.
 */
const NOT_POSTGRES =
  /timeout exceeded when trying to connect|timeout expired|Connection terminated|error establishing an SSL connection|received invalid response|Unknown authenticationOk message/;
/** Node's names for a TLS certificate it does not trust (unknown issuer, self-signed, expired, another host's). */
const UNTRUSTED_CERTIFICATE =
  /^(?:ERR_TLS_CERT_ALTNAME_INVALID|HOSTNAME_MISMATCH|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|INVALID_CA|INVALID_PURPOSE|PATH_LENGTH_EXCEEDED|UNABLE_TO_[A-Z_]+|CERT_[A-Z_]+)$/;

/** Any failure to reach a PostgreSQL server, answered alike; the finer reason goes to the log. */
export const UNREACHABLE = "The database cannot be reached: no PostgreSQL server answered at its host and port.";

/**
 * No PostgreSQL server could be reached (the port is closed, something else answers there, nothing answers):
 * one answer for all, so the answer does not tell what listens on a port of the host.
 */
export class DatabaseUnreachableError extends DatasetError {
  constructor() {
    super(UNREACHABLE);
    this.name = "DatabaseUnreachableError";
  }
}

/**
 * Runs a check that connects (validate, describe, publishLayers) so that "cannot be reached" is answered no earlier
 * than UNREACHABLE_FLOOR_MS after it began, whatever made it fail: a refused port then takes as long as a silent one.
 */
export async function withUnreachableFloor<T>(check: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await check();
  } catch (err) {
    const wait = started + UNREACHABLE_FLOOR_MS - Date.now();
    if (err instanceof DatabaseUnreachableError && wait > 0) await new Promise((r) => setTimeout(r, wait));
    throw err;
  }
}

/** The data exceptions (class 22) whose SQLite counterparts sqlite-functions.ts raises, by SQLSTATE. */
const DATA_FAULTS: Readonly<Record<string, string>> = {
  "22003": ARGUMENT_FAULTS.range,
  "2201F": ARGUMENT_FAULTS.power,
  "22025": ARGUMENT_FAULTS.likeEscape,
  "22011": ARGUMENT_FAULTS.substringLength,
};

/** Whether a statement failed because its connection had ended (not a connect timeout, nor the statement's own). */
export function endedWhileIdle(err: unknown): boolean {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === "string" ? e.code : "";
  // 57P01 admin_shutdown, 57P02 crash_shutdown: the server ended the session.
  if (code === "57P01" || code === "57P02" || code === "ECONNRESET" || code === "EPIPE") return true;
  return e.message === "Connection terminated unexpectedly";
}

/**
 * An error of node-postgres as mapgate answers it: a data source that cannot be read (DatasetError, which
 * serving turns into "unavailable" and the log explains), a statement past its time, a value the request's own
 * expression cannot take (400), or anything else (500 with no detail).
 */
export function classifyPgError(err: unknown): Error {
  const e = err as { code?: string; message?: string; severity?: string };
  const code = typeof e.code === "string" ? e.code : "";
  const message = typeof e.message === "string" ? e.message : "";
  // The server's statement_timeout (57014), or node-postgres' own query_timeout ("Query read timeout") for a
  // server that stopped answering.
  if (code === "57014" || /query read timeout/i.test(message)) return new QueryTimeoutError();
  if (code === "XX000" && /TopologyException/.test(message)) return new GeometryTopologyError();
  if (LOGIN_REFUSED.has(code)) return new DatasetError("The database refused the login (user or password).");
  if (code === "3D000") return new DatasetError("The database does not exist.");
  if (GONE.has(code))
    return new DatasetError("The layer's table or column is no longer in the database, or not readable.");
  if (UNTRUSTED_CERTIFICATE.test(code))
    return new DatasetError(
      `The database server's certificate is not trusted (${code}): sslmode=verify-full takes a certificate signed by an authority mapgate trusts and naming the host.`,
    );
  // A PostgreSQL server answered that it has no TLS: reached, but not as its sslmode requires.
  if (/does not support SSL/.test(message))
    return new DatasetError("The database server offers no TLS, which the connection's sslmode requires.");
  if (NETWORK.has(code) || NOT_POSTGRES.test(message)) {
    logger.warn("database unreachable", { reason: (code || message).slice(0, 120) });
    return new DatabaseUnreachableError();
  }
  if (code.startsWith("08") || code.startsWith("53") || code.startsWith("57"))
    return new DatasetError(`The database cannot serve the request now (SQLSTATE ${code}).`);
  // Class 22, data exception: the request's expression met a value it cannot take (a text cast to a number…);
  // those the SQLite functions raise too are worded alike, so both dialects answer the same 400.
  if (code.startsWith("22")) return new DataExceptionError(DATA_FAULTS[code]);
  // Any other error that ended the session (a login failing with XX000: a role's setting, a library that will not
  // load): the database's own fault, said by its SQLSTATE; its message (the server's words) goes to the log only.
  if ((e.severity === "FATAL" || e.severity === "PANIC") && /^[0-9A-Z]{5}$/.test(code)) {
    logger.warn("database ended the session", { code, reason: message.slice(0, 200) });
    return new DatasetError(`The database ended the session (SQLSTATE ${code}).`);
  }
  return err instanceof Error ? err : new Error(String(err));
}

function sslOf(c: PostgresConnection, plain: boolean): PoolConfig["ssl"] {
  if (c.sslmode === "disable" || plain) return false;
  // The name the certificate must bear (SNI too); an IP address is checked as the address connected to.
  if (c.sslmode === "verify-full")
    return isIP(c.host) === 0 ? { rejectUnauthorized: true, servername: c.host } : { rejectUnauthorized: true };
  // require and prefer: encrypted, the server's certificate not checked (libpq's meaning of both).
  return { rejectUnauthorized: false };
}

/**
 * Where the deployment requires TLS (DATASTORE_TLS=require), a store registered otherwise still never connects in
 * plain text: `disable` is refused and `prefer`, which would fall back to plain text, is held to `require`.
 */
function held(c: PostgresConnection, plain: boolean): PostgresConnection {
  if (!config().datastorePolicy.requireTls) return c;
  if (c.sslmode === "disable" || plain)
    throw new DatasetError("This deployment connects to databases over TLS only, and this one offers no TLS.");
  return c.sslmode === "prefer" ? { ...c, sslmode: "require" } : c;
}

async function makePool(
  datastoreId: string,
  given: PostgresConnection,
  password: string,
  plain = false,
): Promise<Pool> {
  const c = held(given, plain);
  const { Pool } = await loadPg();
  // The address checked against the deployment's rule, so the name cannot resolve elsewhere when connecting.
  const host = await databaseAddress(c.host);
  const pool = new Pool({
    host,
    port: c.port,
    database: c.database,
    user: c.user,
    password,
    ssl: sslOf(c, plain),
    max: POOL_MAX,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    statement_timeout: STATEMENT_TIMEOUT_MS,
    query_timeout: STATEMENT_TIMEOUT_MS + 2_000,
    application_name: "mapgate",
    options: "-c default_transaction_read_only=on",
    allowExitOnIdle: true,
  });
  // An idle connection the server closes emits here; without a listener it would end the process.
  pool.on("error", (err) =>
    logger.warn("database connection lost", { datastoreId, reason: classifyPgError(err).message }),
  );
  return pool;
}

/**
 * How a statement reaches the database: by default straight on the pool (its sessions read-only and bounded by
 * their startup options); the hosting database runs each in a read-only transaction of its own instead
 * (shared/features/hosting-database.ts), as RDS Proxy takes no startup options.
 */
export type StatementRunner = (pool: Pool, sql: string, params: readonly unknown[]) => Promise<unknown[][]>;

const onPool: StatementRunner = async (pool, sql, params) =>
  (await pool.query({ text: sql, values: params as unknown[], rowMode: "array" })).rows as unknown[][];

/** One database of a data store: its pool and what was learnt of its tables lately. */
export class PostGisDatabase {
  readonly #pool: Pool;
  readonly #onLoginRefused: () => void;
  readonly #run: StatementRunner;
  #datasets: { at: number; list: Promise<PostGisDataset[]> } | undefined;
  readonly #schemas = new Map<string, { at: number; schema: Promise<LayerSchema | DatasetError | undefined> }>();
  readonly #extents = new Map<string, Promise<Bounds | undefined>>();
  readonly #titled: boolean;

  /**
   * `titled`: columns' comments are their fields' aliases (the hosting database, where mapgate writes them as a
   * definition's aliases; a database read by reference keeps descriptions there, not aliases).
   */
  constructor(pool: Pool, onLoginRefused: () => void, run: StatementRunner = onPool, titled = false) {
    this.#pool = pool;
    this.#onLoginRefused = onLoginRefused;
    this.#run = run;
    this.#titled = titled;
  }

  /** Runs a statement; rows as arrays, columns in SELECT order. Errors classified (classifyPgError). */
  async all(sql: string, params: readonly unknown[]): Promise<unknown[][]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.#run(this.#pool, sql, params);
      } catch (err) {
        // An idle connection the server ended (a restart, an administrator, a password change) can be handed out
        // before its end is read: the statement, read-only, runs once more on a new connection.
        if (attempt === 0 && endedWhileIdle(err)) continue;
        // A new connection of the pool was refused (the password changed): the next request makes a new pool,
        // reading the secret again.
        if (LOGIN_REFUSED.has(String((err as { code?: unknown }).code))) this.#onLoginRefused();
        throw classifyPgError(err);
      }
    }
  }

  /** The tables and views the login may read, in name order, each with why it cannot be published if so. */
  datasets(): Promise<PostGisDataset[]> {
    const held = this.#datasets;
    if (held && Date.now() - held.at < SCHEMA_TTL_MS) return held.list;
    const list = this.#listDatasets();
    this.#datasets = { at: Date.now(), list };
    list.catch(() => (this.#datasets = undefined));
    return list;
  }

  async #listDatasets(): Promise<PostGisDataset[]> {
    const rows = await this.all(`${RELATIONS} ORDER BY 1 LIMIT ${MAX_DATASETS}`, []);
    return rows.map((r) => {
      const [name, kind, key, geometryColumns] = r as [string, string, string | null, string[] | null];
      const dataset = { name, kind: geometryColumns && geometryColumns.length > 0 ? "featureClass" : "table" } as const;
      const problem = keyProblem(kind, key);
      return problem ? { ...dataset, unpublishable: problem } : dataset;
    });
  }

  /**
   * A dataset's schema, or why it cannot be served; undefined when the database has no such table. Kept a minute;
   * with `version`, kept by its key (a hosted layer's definition revision), and described only once `ready` says the
   * database holds that version (false: described as it is, and not kept). With `extentApart` (a hosted layer, whose
   * rows' extent moves with every edit, which no definition revision follows) it holds no extent: `extent` reads it,
   * kept by the edit.
   */
  schema(
    name: string,
    version?: { readonly key: number | string; readonly ready: () => Promise<boolean>; readonly extentApart?: boolean },
  ): Promise<LayerSchema | DatasetError | undefined> {
    const key = version ? `${name}\u0000${version.key}` : name;
    const held = this.#schemas.get(key);
    if (held && Date.now() - held.at < SCHEMA_TTL_MS) return held.schema;
    const withExtent = version?.extentApart !== true;
    if (!version) return this.#keep(key, this.#describe(name, withExtent));
    return version
      .ready()
      .then((ready) => (ready ? this.#keep(key, this.#describe(name, withExtent)) : this.#describe(name, withExtent)));
  }

  /** Whether the schema of `name` at version `key` is kept (described once its database held that version). */
  keeps(name: string, key: number | string): boolean {
    return this.#schemas.has(`${name}\u0000${key}`);
  }

  /**
   * The rows' extent of a layer described without one, kept by `key`, which the caller moves whenever the rows may
   * have changed (a hosted layer's last committed edit): an edit and the reads after it do not describe the table
   * again, and only a read that tells the extent scans the rows for it.
   */
  extent(schema: LayerSchema, key: string, keep = true): Promise<Bounds | undefined> {
    const [schemaName, table] = schema.table;
    if (!schema.geometry || schemaName === undefined || table === undefined) return Promise.resolve(undefined);
    const k = `${schemaName}.${table}\u0000${key}`;
    const held = this.#extents.get(k);
    if (held) return held;
    const read = this.#extent(schemaName, table, schema.geometry.column);
    if (!keep) return read;
    if (this.#extents.size >= 256) this.#extents.delete(this.#extents.keys().next().value as string);
    this.#extents.set(k, read);
    read.catch(() => this.#extents.delete(k));
    return read;
  }

  #keep(
    key: string,
    schema: Promise<LayerSchema | DatasetError | undefined>,
  ): Promise<LayerSchema | DatasetError | undefined> {
    if (this.#schemas.size >= 256) this.#schemas.delete(this.#schemas.keys().next().value as string);
    this.#schemas.set(key, { at: Date.now(), schema });
    schema.catch(() => this.#schemas.delete(key));
    return schema;
  }

  async #describe(name: string, withExtent: boolean): Promise<LayerSchema | DatasetError | undefined> {
    const found = await this.all(`${RELATIONS} AND n.nspname || '.' || c.relname = $1 LIMIT 2`, [name]);
    if (found.length === 0) return undefined;
    if (found.length > 1) return new DatasetError(`More than one relation is named ${name} (a name holds a dot).`);
    const [, kind, key, , oid, schemaName, tableName] = found[0] as [
      string,
      string,
      string | null,
      string[] | null,
      number,
      string,
      string,
    ];
    const problem = keyProblem(kind, key);
    if (problem || !key) return new DatasetError(problem ?? "no key");
    const columns = (await this.all(COLUMNS, [oid])) as [
      string,
      string,
      boolean,
      number,
      string,
      number,
      number,
      string | null,
    ][];
    const geometryRow = columns.find((c) => c[7] !== null);
    let geometry: GeometryColumn | undefined;
    if (geometryRow) {
      const [column, , , , , srid, dims, type] = geometryRow;
      const esri = esriGeometryTypeOf((type ?? "").replace(/M$/, ""));
      if (!esri)
        return new DatasetError(
          `The geometry type ${String(type).slice(0, 32)} of ${name} has no feature layer type (a GEOMETRY or collection column mixes types).`,
        );
      const hasM = (type ?? "").endsWith("M") || dims === 4;
      geometry = {
        column,
        type: esri,
        hasZ: dims === 4 || (dims === 3 && !hasM),
        hasM,
        srid: srid > 0 ? srid : 0,
        index: "gist",
      };
    }
    const fields: Field[] = [];
    for (const [column, typname, notNull, typmod, comment] of columns) {
      if (geometryRow && column === geometryRow[0]) continue;
      const type = column === key ? "esriFieldTypeOID" : FIELD_TYPES[typname];
      if (!type) continue;
      const convert = CONVERSIONS[typname];
      const length = (typname === "varchar" || typname === "bpchar") && typmod > 4 ? typmod - 4 : undefined;
      // An alias as the GeoPackage reader takes a title: text of at most 255 characters.
      const title = this.#titled && comment !== "" && comment.length <= 255 ? comment : undefined;
      fields.push({
        name: column,
        type,
        alias: title ?? column,
        ...(length ? { length } : {}),
        nullable: column !== key && !notNull,
        column,
        ...(convert ? { convert } : {}),
      });
    }
    const firstString = fields.find((f) => f.type === "esriFieldTypeString");
    const extent = geometry && withExtent ? await this.#extent(schemaName, tableName, geometry.column) : undefined;
    return {
      name,
      table: [schemaName, tableName],
      fields,
      objectIdField: key,
      displayField: firstString?.name ?? key,
      ...(geometry ? { geometry } : {}),
      ...(extent ? { extent } : {}),
    };
  }

  async #extent(schemaName: string, table: string, column: string): Promise<Bounds | undefined> {
    const q = (s: string) => `"${s.replaceAll('"', '""')}"`;
    const rows = await this.all(
      `SELECT ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e) FROM (SELECT ST_Extent(${q(column)}) AS e FROM ${q(schemaName)}.${q(table)}) AS s`,
      [],
    );
    const v = rows[0] ?? [];
    return v.length === 4 && v.every((x) => typeof x === "number" && Number.isFinite(x))
      ? (v as unknown as Bounds)
      : undefined;
  }

  /**
   * Runs `work` in one read-write transaction on one connection (the pool's sessions are read-only by default: only an
   * edit of a layer its publisher made editable writes), committed when `work` returns and rolled back when it throws.
   * `run`'s errors are node-postgres' own (their SQLSTATE read by the caller); the opening's and the commit's are
   * classified. A connection whose rollback failed is not given back to the pool.
   */
  async transaction<T>(
    work: (run: (sql: string, params: readonly unknown[]) => Promise<unknown[][]>) => Promise<T>,
  ): Promise<T> {
    const client = await this.#pool.connect().catch((err: unknown) => {
      throw classifyPgError(err);
    });
    let broken = false;
    try {
      await client.query("BEGIN READ WRITE; SET LOCAL lock_timeout = 5000").catch((err: unknown) => {
        throw classifyPgError(err);
      });
      const run = async (sql: string, params: readonly unknown[]) =>
        (await client.query({ text: sql, values: params as unknown[], rowMode: "array" })).rows as unknown[][];
      const result = await work(run);
      await client.query("COMMIT").catch((err: unknown) => {
        throw classifyPgError(err);
      });
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {
        broken = true;
      });
      throw err;
    } finally {
      client.release(broken);
    }
  }

  /** The definition (WKT) the database gives a coordinate system, for one no projection library knows. */
  async definitionOf(srid: number): Promise<string | undefined> {
    const rows = await this.all("SELECT srtext FROM spatial_ref_sys WHERE srid = $1", [srid]).catch(() => []);
    const text = rows[0]?.[0];
    return typeof text === "string" && text !== "" ? text : undefined;
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}

/**
 * The key of a view that keeps its table's rows one for one (PostgreSQL can update it: one table, no DISTINCT,
 * GROUP BY, UNION, LIMIT or aggregate) and shows that table's single-column integer primary key as one of its
 * columns. Which view column is which table column is read from the view's stored query: each output column
 * records the table column it reads as-is (`resorigtbl`/`resorigcol`), so a renamed key counts and an integer
 * renamed to the key's name does not. A view over a view has no key here (its origin is the inner view).
 */
const VIEW_KEY = `SELECT va.attname::text FROM pg_rewrite r
    CROSS JOIN LATERAL regexp_matches(r.ev_action::text,
      ':resname ((?:\\\\.|[^\\s\\\\])+) :ressortgroupref \\d+ :resorigtbl (\\d+) :resorigcol (\\d+)', 'g') AS m
    JOIN pg_index i ON i.indrelid = CAST(m[2] AS oid) AND i.indisprimary AND i.indnkeyatts = 1
      AND i.indkey[0] = CAST(m[3] AS int2)
    JOIN pg_attribute va ON va.attrelid = c.oid AND va.attname = regexp_replace(m[1], '\\\\(.)', '\\1', 'g')
      AND va.atttypid IN (21, 23, 20)
    WHERE r.ev_class = c.oid AND r.rulename = '_RETURN' AND pg_relation_is_updatable(c.oid, false) & 20 = 20
    LIMIT 1`;

/**
 * Tables, views and materialized views the login may read, not part of an extension (PostGIS's own tables
 * and views), not partitions: name, kind, single-column integer key, geometry columns, oid, schema, table.
 */
const RELATIONS = `SELECT n.nspname || '.' || c.relname AS name, c.relkind::text AS kind,
  CASE WHEN c.relkind = 'v' THEN (${VIEW_KEY}) ELSE
  (SELECT a.attname::text FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
    WHERE i.indrelid = c.oid AND i.indisprimary AND i.indnkeyatts = 1 AND a.atttypid IN (21, 23, 20)) END AS key,
  (SELECT array_agg(g.f_geometry_column::text) FROM geometry_columns g
    WHERE g.f_table_schema = n.nspname AND g.f_table_name = c.relname) AS geometry_columns,
  c.oid::int8::float8 AS oid, n.nspname::text AS schema_name, c.relname::text AS table_name
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
  AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'topology') AND n.nspname NOT LIKE 'pg\\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e')
  AND has_table_privilege(c.oid, 'SELECT')`;

/**
 * A relation's columns in order: name, type, not null, typmod, comment ("" for none), srid, dimensions, geometry
 * type (the last three from geometry_columns for a geometry column, else null).
 */
const COLUMNS = `SELECT a.attname::text, t.typname::text, a.attnotnull, a.atttypmod,
  COALESCE(col_description(a.attrelid, a.attnum), '') AS comment,
  COALESCE(g.srid, 0)::float8, COALESCE(g.coord_dimension, 2)::float8, g.type::text
FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid
  JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
  LEFT JOIN geometry_columns g ON g.f_table_schema = n.nspname AND g.f_table_name = c.relname
    AND g.f_geometry_column = a.attname
WHERE a.attrelid = CAST($1 AS float8)::int8::oid AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`;

/** Why a relation cannot be published, if it cannot: object ids need one integer key. */
function keyProblem(kind: string, key: string | null): string | undefined {
  if (key) return undefined;
  return kind === "r" || kind === "p"
    ? "The table has no single-column integer primary key to serve as object ids."
    : kind === "v"
      ? "The view does not show its table's single-column integer primary key as a column, or does not keep its table's rows one for one (a join, DISTINCT, GROUP BY, UNION or LIMIT)."
      : "A materialized view has no primary key: publish its source table, or a view, instead.";
}

/**
 * The Esri type of a PostgreSQL column type, as the GeoPackage reader maps its types (bigint is an Integer,
 * date and timestamps are Dates in epoch milliseconds; a boolean is a SmallInteger 0/1 and a uuid a GUID, as
 * ArcGIS maps them; JSON is served as its text). Undefined: the column is not served (arrays, ranges, intervals,
 * geography…: types with no field type of the wire to stand for them).
 */
const FIELD_TYPES: Readonly<Record<string, EsriFieldType>> = {
  int2: "esriFieldTypeSmallInteger",
  int4: "esriFieldTypeInteger",
  int8: "esriFieldTypeInteger",
  float4: "esriFieldTypeSingle",
  float8: "esriFieldTypeDouble",
  numeric: "esriFieldTypeDouble",
  text: "esriFieldTypeString",
  varchar: "esriFieldTypeString",
  bpchar: "esriFieldTypeString",
  name: "esriFieldTypeString",
  date: "esriFieldTypeDate",
  timestamp: "esriFieldTypeDate",
  timestamptz: "esriFieldTypeDate",
  bytea: "esriFieldTypeBlob",
  bool: "esriFieldTypeSmallInteger",
  uuid: "esriFieldTypeGUID",
  json: "esriFieldTypeString",
  jsonb: "esriFieldTypeString",
};

/** The conversions the types above need (read in SQL, so `where`, order and statistics see the same value). */
const CONVERSIONS: Readonly<Record<string, Field["convert"]>> = {
  bool: "boolean",
  uuid: "guid",
  json: "text",
  jsonb: "text",
};

// Open databases by data store, while the function is warm.
const opened = new Map<string, Promise<PostGisDatabase>>();
const MAX_OPEN = 16;
/** Past any request's deadline (API Gateway's 30 s): an evicted pool is closed after this. */
const EVICTED_GRACE_MS = 35_000;

/** The password of a store, for this connection only: never one entered for another destination. */
async function passwordFor(datastoreId: string, connection: PostgresConnection): Promise<string> {
  try {
    return await readDataStorePassword(datastoreId, connection);
  } catch (err) {
    if (!(err instanceof SecretDestinationError)) throw err;
    throw new DatasetError(
      "The data store's password was entered for another host, port, database or user than this connection: update the store's item with its connection and password, then refreshServer.",
    );
  }
}

async function open(datastoreId: string, connection: PostgresConnection, key: string): Promise<PostGisDatabase> {
  const password = await passwordFor(datastoreId, connection);
  let pool = await makePool(datastoreId, connection, password);
  try {
    // One round trip proves the pool (and settles libpq's "prefer": TLS if the server has it, else plain).
    await pool.query("SELECT 1");
  } catch (err) {
    await pool.end().catch(() => undefined);
    if (connection.sslmode === "prefer" && /does not support SSL/.test(String((err as Error).message))) {
      pool = await makePool(datastoreId, connection, password, true);
      try {
        await pool.query("SELECT 1");
      } catch (again) {
        await pool.end().catch(() => undefined);
        throw classifyPgError(again);
      }
    } else throw classifyPgError(err);
  }
  const db = new PostGisDatabase(pool, () => {
    if (opened.get(key) !== held) return;
    opened.delete(key);
    void db.close().catch(() => undefined);
  });
  const held = opened.get(key);
  return db;
}

/**
 * The database of a data store, connected. A failure to connect is not remembered: the next request tries
 * again (after a refused login, with the secret read again).
 */
export function postGisAt(datastoreId: string, connection: PostgresConnection): Promise<PostGisDatabase> {
  const key = `${datastoreId}\u0000${JSON.stringify(connection)}`;
  let db = opened.get(key);
  if (!db) {
    if (opened.size >= MAX_OPEN) {
      const [oldest, pending] = opened.entries().next().value as [string, Promise<PostGisDatabase>];
      opened.delete(oldest);
      // A request that took this database before it was forgotten may still be about to query it: its pool
      // closes once every such request has met its deadline.
      setTimeout(() => {
        void pending.then(
          (d) => d.close(),
          () => undefined,
        );
      }, EVICTED_GRACE_MS).unref();
    }
    db = open(datastoreId, connection, key);
    opened.set(key, db);
    db.catch(() => opened.delete(key));
  }
  return db;
}

/** Forgets a data store's open database (its connection or password changed, or a login was refused). */
export async function forgetPostGis(datastoreId: string): Promise<void> {
  for (const [key, db] of opened) {
    if (!key.startsWith(`${datastoreId}\u0000`)) continue;
    opened.delete(key);
    await db.then((d) => d.close()).catch(() => undefined);
  }
}

/**
 * Checks a connection before it is registered: it logs in, and PostGIS is installed. Throws a DatasetError
 * saying what is wrong (never the password); one that could not reach a server, no earlier than
 * UNREACHABLE_FLOOR_MS.
 */
export function checkPostGis(connection: PostgresConnection, password: string): Promise<{ postgis: string }> {
  return withUnreachableFloor(() => checkOnce(connection, password));
}

async function checkOnce(connection: PostgresConnection, password: string): Promise<{ postgis: string }> {
  const pool = await makePool("(new)", connection, password);
  try {
    const rows = await pool
      .query({ text: "SELECT extversion FROM pg_extension WHERE extname = 'postgis'", rowMode: "array" })
      .catch(async (err: unknown) => {
        if (connection.sslmode === "prefer" && /does not support SSL/.test(String((err as Error).message))) {
          await pool.end().catch(() => undefined);
          return checkOnce({ ...connection, sslmode: "disable" }, password).then((r) => ({ rows: [[r.postgis]] }));
        }
        throw classifyPgError(err);
      });
    const version = rows.rows[0]?.[0];
    if (typeof version !== "string")
      throw new DatasetError("PostGIS is not installed in the database (CREATE EXTENSION postgis).");
    return { postgis: version };
  } finally {
    await pool.end().catch(() => undefined);
  }
}
