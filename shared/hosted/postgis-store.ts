// Hosted layers' data in a PostgreSQL + PostGIS database mapgate owns: one schema per hosted service, named from its
// item id (`h_<32 hex>`), one table per layer named after the layer (quoted through the emitters' identifier code),
// an identity `fid` as primary key, a `geom` column in EPSG:4326 with a GiST index. A service is made in one
// transaction (schema, tables, rows in parameterized multi-row INSERTs, indexes) and dropped with its schema, so a
// failure leaves nothing. Its layers are read by the PostGIS reader that serves by-reference database layers.
//
// The connection (made for RDS Proxy and a resuming Aurora cluster), its transactions and the opening of a layer for
// queries are the read side's, shared/features/hosting-database.ts, which serving loads without this module's write
// code; every statement here runs in one of its transactions.
import type { PoolClient } from "pg";
import { DatasetError } from "#shared/features/errors.ts";
import { EDITING_TABLE, type LayerEditing } from "#shared/features/schema.ts";
import type { ColumnSpec, ColumnType, Extent } from "#shared/features/geopackage-writer.ts";
import { toWkb } from "#shared/features/geometry/wkb-write.ts";
import { checkedItemId, HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import {
  hostingConnection,
  hostingDatabase,
  inTransaction,
  readNote,
  schemaNote,
  tableOf,
} from "#shared/features/hosting-database.ts";
import { classifyPgError } from "#shared/features/postgis.ts";
import { quoteIdentifier } from "#shared/features/sql/emitter.ts";
import { AmbiguousKeyError, keyOf } from "#shared/hosted/append-keys.ts";
import type { EditsRolledBack } from "#shared/hosted/edit-apply.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import {
  EDIT_LOG_TABLE,
  editingTableDdl,
  editLogDdl,
  findEdit,
  recordLayerEditing,
} from "#shared/features/sql/write.ts";
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
import { allAttachmentKeys, attachTableDdl, attachTableOf } from "#shared/features/sql/attachments.ts";
import { removeAttachmentBytes, removeServiceAttachments } from "#shared/hosted/attachment-charges.ts";
import type { FieldKind } from "#shared/hosted/tables.ts";
import { logger } from "#shared/log.ts";

/** PostgreSQL binds at most 65,535 parameters to one statement; rows per INSERT stay well below it. */
const MAX_PARAMETERS = 60_000;
const MAX_ROWS_PER_INSERT = 1000;
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
 * Edits rolled back on purpose (rollbackOnFailure), known by name: the edit code is loaded by the first edit only, so
 * the functions that make or drop hosted data (deleting an item) do not carry it.
 */
const rolledBack = (err: unknown): err is EditsRolledBack => err instanceof Error && err.name === "EditsRolledBack";

/** A write transaction on the hosting database, its errors as the reader's (classifyPgError). */
async function writing<T>(work: (client: PoolClient) => Promise<T>): Promise<T> {
  const { pool } = await hostingDatabase();
  try {
    return await inTransaction(pool, "BEGIN", work);
  } catch (err) {
    // A request's edits rolled back on purpose (rollbackOnFailure) carry their results to the caller.
    if (err instanceof DatasetError || rolledBack(err)) throw err;
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
  await indexGlobalId(client, table, layer);
  await recordEditing(client, schema, [layer]);
  // Statistics for the planner from the start (autovacuum would come to it later).
  await client.query(`ANALYZE ${table}`);
  return extent;
}

/**
 * A btree on the layer's global id column (beside its key's and its geometry's GiST): edits with useGlobalIds (and
 * attachments' global ids) find their feature by it, which would otherwise read the whole table per feature. Not
 * unique: a client's own global ids are taken as sent, and a repeat is answered by the edit, not by a constraint.
 */
async function indexGlobalId(
  client: PoolClient,
  table: string,
  layer: { readonly columns: readonly { name: string }[]; readonly editing?: LayerEditing | undefined },
): Promise<void> {
  const gid = layer.editing?.globalIdField;
  if (gid !== undefined && layer.columns.some((c) => c.name === gid))
    await client.query(`CREATE INDEX ON ${table} (${quoteIdentifier(gid)})`);
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
  // Made with the service, so the first concurrent edits never race to make it.
  await client.query(editLogDdl(schema));
  const now = Date.now();
  for (const l of tracked) {
    const q = recordLayerEditing(postgresEmitter, schema, tableOf(l.name), l.editing ?? {}, now);
    await client.query({ text: q.sql, values: q.params });
  }
}

const noteQuery = (schema: string) => ({
  text: "SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $1",
  values: [schema],
  rowMode: "array" as const,
});

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
        // The new rows keep no attachments: the old rows' table goes (their bytes once this commits).
        await dropAttachTable(client, to, layer.name);
        await client.query(`DROP TABLE IF EXISTS ${quoteIdentifier(to)}.${name}`);
        await client.query(`ALTER TABLE ${quoteIdentifier(from)}.${name} SET SCHEMA ${quoteIdentifier(to)}`);
      }
      // The new layers' editing records go with them; the staging schema's record table is dropped with it.
      await recordEditing(client, to, layers);
      // The staging schema's editing record and edit log are its own (the service keeps its edit log, which the
      // events of edits still awaiting their commit are settled by).
      await client.query(`DROP TABLE IF EXISTS ${quoteIdentifier(from)}.${quoteIdentifier(EDITING_TABLE)}`);
      await client.query(`DROP TABLE IF EXISTS ${quoteIdentifier(from)}.${quoteIdentifier(EDIT_LOG_TABLE)}`);
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
    await removeServiceAttachments(serviceItemId);
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
  // After the data: a crash between the two leaves bytes no row names (never a row naming no bytes).
  await removeServiceAttachments(serviceItemId);
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
        await indexGlobalId(client, table, layer);
        await setComments(client, table, layer.columns.filter(titledOtherwise));
        if (layer.attachments)
          for (const ddl of attachTableDdl(postgresEmitter, [schema, tableOf(layer.name)])) await client.query(ddl);
      }
      await recordEditing(client, schema, layers);
    }),
  deleteLayers: async (serviceItemId, tables, change) => {
    const keys: string[] = [];
    await defining(serviceItemId, change, async (client, schema) => {
      for (const t of new Set(tables)) keys.push(...(await dropAttachTable(client, schema, t)));
      const names = [...new Set(tables)].map((t) => tableIn(schema, t));
      if (names.length > 0) await client.query(`DROP TABLE IF EXISTS ${names.join(", ")}`);
    });
    await removeAttachmentBytes(serviceItemId, keys);
  },
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
  truncate: async (serviceItemId, table, change) => {
    const keys: string[] = [];
    // Object ids start again from 1, as a GeoPackage's do once its table is empty; its attachments go with its rows.
    await defining(serviceItemId, change, async (client, schema) => {
      const attach = attachTableOf([schema, tableOf(table)], postgresEmitter);
      if (await tableExists(client, attach)) {
        keys.push(...(await attachmentKeys(client, schema, table)));
        await client.query(`TRUNCATE ${attach.map(quoteIdentifier).join(".")}`);
      }
      await client.query(`TRUNCATE ${tableIn(schema, table)} RESTART IDENTITY`);
    });
    await removeAttachmentBytes(serviceItemId, keys);
  },
  addAttachments: (serviceItemId, tables, change) =>
    defining(serviceItemId, change, async (client, schema) => {
      for (const t of tables)
        for (const ddl of attachTableDdl(postgresEmitter, [schema, tableOf(t)])) await client.query(ddl);
    }),
};

async function tableExists(client: PoolClient, table: readonly string[]): Promise<boolean> {
  const found = await client.query({
    text: "SELECT to_regclass($1) IS NOT NULL",
    values: [table.map(quoteIdentifier).join(".")],
    rowMode: "array",
  });
  return (found.rows[0] as unknown[] | undefined)?.[0] === true;
}

/** Every attachment's bytes' key of a layer (its attachment table there). */
async function attachmentKeys(client: PoolClient, schema: string, layerName: string): Promise<string[]> {
  const out = await client.query({
    text: allAttachmentKeys(postgresEmitter, [schema, tableOf(layerName)]),
    rowMode: "array",
  });
  return (out.rows as unknown[][]).map((r) => String(r[0]));
}

/** Drops a layer's attachment table, when it has one, answering the keys of the bytes it named. */
async function dropAttachTable(client: PoolClient, schema: string, layerName: string): Promise<string[]> {
  const attach = attachTableOf([schema, tableOf(layerName)], postgresEmitter);
  if (!(await tableExists(client, attach))) return [];
  const keys = await attachmentKeys(client, schema, layerName);
  await client.query(`DROP TABLE ${attach.map(quoteIdentifier).join(".")}`);
  return keys;
}

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
  const { applyEdits } = await import("#shared/hosted/edit-apply.ts");
  try {
    return await writing(async (client) => {
      const run = async (q: EmittedQuery) =>
        (await client.query({ text: q.sql, values: q.params, rowMode: "array" })).rows as unknown[][];
      const written = await applyEdits(run, postgresEmitter, request, schema);
      // What the rows take now, measured in the edit's own transaction (its new pages included).
      const outcome = written.changed ? { ...written, bytes: await schemaBytes(client, schema) } : written;
      await beforeCommit(outcome);
      return outcome;
    });
  } catch (err) {
    if (rolledBack(err)) return err.outcome;
    throw err;
  }
}

/**
 * Whether an edit's id is in its service's edit log (read-only: the log is made by the first edit that logs, so a
 * schema without one logged none); undefined when the service's schema is gone.
 */
async function committed(serviceItemId: string, editId: string): Promise<boolean | undefined> {
  const schema = schemaOf(serviceItemId);
  const { pool } = await hostingDatabase();
  try {
    return await inTransaction(pool, "BEGIN READ ONLY", async (client) => {
      const found = await client.query({
        text: "SELECT to_regclass($1) IS NOT NULL, EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $2)",
        values: [`${quoteIdentifier(schema)}.${quoteIdentifier(EDIT_LOG_TABLE)}`, schema],
        rowMode: "array",
      });
      const [hasLog, hasSchema] = (found.rows[0] ?? []) as [boolean, boolean];
      if (!hasSchema) return undefined;
      if (!hasLog) return false;
      const q = findEdit(postgresEmitter, schema, editId);
      return (await client.query({ text: q.sql, values: q.params, rowMode: "array" })).rows.length > 0;
    });
  } catch (err) {
    throw classifyPgError(err);
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
    committed,
    transact: (serviceItemId, work) =>
      writing((client) =>
        work({
          run: async (q) =>
            (await client.query({ text: q.sql, values: q.params, rowMode: "array" })).rows as unknown[][],
          emitter: postgresEmitter,
          container: schemaOf(serviceItemId),
        }),
      ),
    sourceOf: (serviceItemId, layers) => ({
      datastoreId: HOSTED_STORE_ID,
      connection: hostingConnection(),
      path: `/${schemaOf(serviceItemId)}/${layers.find((l) => l !== null) ?? ""}`,
      layers: [...layers],
    }),
  };
}
