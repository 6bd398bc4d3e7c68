// GeoPackage files read where they lie, with Node's built-in SQLite (read-only, no native addon): the
// datasets a file holds (gpkg_contents), each one's schema (its columns, its single-column integer key, its
// geometry column and R*Tree), and the statements a query plan emits for the SQLite dialect.
//
// SQLite runs on the function's own thread. What bounds it: every statement is read-only (an authorizer
// refuses anything but reading, whatever the SQL), a statement with a filter calls a deadline function on
// each row it examines (and before each exact spatial test), which aborts it past its time, and the text it hands
// the query's functions is counted against a bound on its memory; an unfiltered statement is bounded by the
// table's size.
import type { AggregateOptions, DatabaseSync, SQLInputValue, SQLOutputValue, StatementSync } from "node:sqlite";

import type { LayerStatistics, SampledRow } from "#shared/features/access.ts";
import { DatasetError, QueryTimeoutError } from "#shared/features/errors.ts";
import { SQLITE_DEADLINE, sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import { attachTableName } from "#shared/features/sql/attachments.ts";
import { SQLITE_AGGREGATES, SQLITE_FUNCTIONS } from "#shared/features/sqlite-functions.ts";
import {
  type Bounds,
  EDITING_TABLE,
  editingOf,
  type EsriFieldType,
  type LayerEditing,
  withEditing,
  esriGeometryTypeOf,
  type Field,
  type GeometryColumn,
  type LayerSchema,
} from "#shared/features/schema.ts";

type SqlFunction = (...args: SQLOutputValue[]) => SQLInputValue;

/** What a GeoPackage holds, as a data store's describe lists it. */
export interface GeoPackageDataset {
  readonly table: string;
  readonly kind: "featureClass" | "table";
  /** Why the dataset cannot be published (no single-column integer key, an unknown geometry type…). */
  readonly unpublishable?: string;
}

/**
 * A statement that handed the query's functions more text than MAX_FUNCTION_TEXT: an expression carrying a long
 * text into a function on every row (the caller answers that the expression is too costly).
 */
export class QueryTextError extends Error {
  constructor() {
    super("The query hands its functions more text than it may.");
    this.name = "QueryTextError";
  }
}

/**
 * The most text (in characters, arguments and results) one statement may hand the query's JavaScript functions.
 * Node keeps every value a function received or returned until the statement ends, so this bounds a statement's
 * memory as the deadline bounds its time: a 16,000-character pattern tested on 171,000 rows would hold 2.7 GB.
 */
export const MAX_FUNCTION_TEXT = 128 * 1024 * 1024;

type Sqlite = typeof import("node:sqlite");
let sqlite: Sqlite | undefined;
/** node:sqlite is loaded by the first query, so functions that never read a GeoPackage never pay for it. */
async function loadSqlite(): Promise<Sqlite> {
  sqlite ??= await import("node:sqlite");
  return sqlite;
}

// The authorizer's action codes (sqlite3.h) a read-only query needs; anything else is denied.
const SQLITE_OK = 0;
const SQLITE_DENY = 1;
const SQLITE_DELETE = 9;
const SQLITE_INSERT = 18;
const SQLITE_UPDATE = 23;
/** The R*Tree module prepares (never runs, on a read-only file) writes of its shadow tables when it connects. */
const RTREE_SHADOW = /^rtree_.+_(node|rowid|parent)$/;
const SQLITE_PRAGMA = 19;
const SQLITE_READ = 20;
const SQLITE_SELECT = 21;
const SQLITE_FUNCTION = 31;
const SQLITE_RECURSIVE = 33;
const ALLOWED_PRAGMAS = new Set([
  "table_info",
  "table_xinfo",
  "application_id",
  "user_version",
  // The layer's statistics (access.ts): which indexes a table has, and their columns.
  "index_list",
  "index_info",
]);

/** Rows a layer's statistics sample, spread evenly over its object ids. */
export const STATISTICS_SAMPLE = 1024;
/** Values whose row count a layer's statistics keep (each counted once through its index). */
const MAX_COUNTED_VALUES = 4096;

/** An R*Tree node's header (its depth, its count of cells) and each cell: an id and a float32 box. */
const NODE_HEADER = 4;
const NODE_CELL = 8 + 4 * 4;

/**
 * The extent of a GeoPackage's R*Tree `index` (rtree(id, minx, maxx, miny, maxy)), undefined when it holds no box:
 * the union of its root node's cells, whose boxes are the union of everything beneath them (SQLite tightens them on
 * every insert, update and delete), so a table of millions of rows answers in one read of one row instead of a scan
 * of the index. The boxes are the index's own float32 values, the very ones a scan's min() and max() would return;
 * a root node that does not read as one (a file another tool wrote oddly) is scanned instead.
 */
export function rtreeExtent(db: DatabaseSync, index: string): Bounds | undefined {
  const root = db.prepare(`SELECT data FROM ${quote(`${index}_node`)} WHERE nodeno = 1`).get() as
    { data?: unknown } | undefined;
  const data = root?.data;
  if (data instanceof Uint8Array && data.length >= NODE_HEADER) {
    const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
    const cells = view.getUint16(2);
    if (cells === 0) return undefined;
    if (NODE_HEADER + cells * NODE_CELL <= data.length) {
      const box = [Infinity, Infinity, -Infinity, -Infinity];
      for (let i = 0, at = NODE_HEADER + 8; i < cells; i++, at += NODE_CELL) {
        const [minx, maxx, miny, maxy] = [0, 4, 8, 12].map((o) => view.getFloat32(at + o));
        box[0] = Math.min(box[0] as number, minx as number);
        box[1] = Math.min(box[1] as number, miny as number);
        box[2] = Math.max(box[2] as number, maxx as number);
        box[3] = Math.max(box[3] as number, maxy as number);
      }
      if (box.every(Number.isFinite)) return box as unknown as Bounds;
    }
  }
  const row = db.prepare(`SELECT min(minx), min(miny), max(maxx), max(maxy) FROM ${quote(index)}`).get() as Record<
    string,
    number | null
  >;
  const v = Object.values(row);
  if (v.every((x) => typeof x === "number" && Number.isFinite(x))) return v as unknown as Bounds;
  return undefined;
}

/** One open GeoPackage: a read-only connection and what was learnt of it while it is unchanged. */
export class GeoPackage {
  readonly db: DatabaseSync;
  readonly version: string;
  readonly #schemas = new Map<string, LayerSchema | DatasetError>();
  /** Per table, what the access path is chosen by: kept with the open file, so per version of it. */
  readonly #statistics = new Map<string, LayerStatistics>();
  readonly #statements = new Map<string, StatementSync>();
  #deadline = Number.POSITIVE_INFINITY;
  #examined = 0;
  #text = 0;
  /** The exact spatial test of the running statement (set by the caller around each run). */
  spatialTest: ((blob: Uint8Array | null) => boolean) | undefined;

  private constructor(db: DatabaseSync, version: string) {
    this.db = db;
    this.version = version;
  }

  /**
   * `untrusted`: a file an uploader made (publishing copies rows out of it): SQLite's defensive mode, and nothing in
   * its schema (views, triggers, defaults) may call a function not marked innocuous.
   */
  static async open(
    file: string,
    version: string,
    options: { untrusted?: boolean; recover?: boolean } = {},
  ): Promise<GeoPackage> {
    try {
      return await GeoPackage.#open(file, version, options);
    } catch (err) {
      // A journal a writer killed mid-transaction left behind ("hot"): SQLite rolls it back on the first read of a
      // connection that may write, and a read-only one cannot read the file until then. Mapgate's own files (hosted
      // data: `recover`) are recovered here, by the first reader after the crash; a data store's are never written.
      if (!options.recover || !(err instanceof HotJournalError)) throw err;
      await recoverJournal(file);
      return GeoPackage.#open(file, version, options.untrusted ? { untrusted: true } : {});
    }
  }

  static async #open(file: string, version: string, options: { untrusted?: boolean }): Promise<GeoPackage> {
    const { DatabaseSync } = await loadSqlite();
    let db: DatabaseSync;
    try {
      db = new DatabaseSync(file, {
        readOnly: true,
        enableForeignKeyConstraints: false,
        allowExtension: false,
        ...(options.untrusted ? { defensive: true } : {}),
      });
    } catch {
      throw new DatasetError("The file cannot be opened as a GeoPackage.");
    }
    const gpkg = new GeoPackage(db, version);
    try {
      if (options.untrusted) db.exec("PRAGMA trusted_schema = OFF");
      const app = db.prepare("PRAGMA application_id").get() as { application_id?: number } | undefined;
      // 'GPKG' (1.2 and later) or 'GP10'/'GP11' (1.0, 1.1); a plain SQLite file with the tables is read too.
      const known = [0x47504b47, 0x47503130, 0x47503131, 0];
      if (!known.includes(app?.application_id ?? 0)) throw new DatasetError("The file is not a GeoPackage.");
      db.prepare("SELECT 1 FROM gpkg_contents LIMIT 1").all();
    } catch (err) {
      db.close();
      if (err instanceof DatasetError) throw err;
      if ((err as { errcode?: number }).errcode === SQLITE_READONLY_ROLLBACK) throw new HotJournalError();
      throw new DatasetError("The file is not a GeoPackage (it has no gpkg_contents table).");
    }
    // What the SQLite dialect's statements call beside SQLite's own (statistics, EXTRACT, LIKE as both dialects
    // read it…), once per connection.
    for (const f of SQLITE_FUNCTIONS) {
      const fn = f.fn as SqlFunction;
      // Counted on the way in and out. The wrapper takes any number of arguments, so it is registered as such:
      // the SQL of sql.ts calls each function with its own.
      db.function(f.name, { deterministic: true, directOnly: true, varargs: true }, (...args) =>
        gpkg.#counted(fn(...gpkg.#counted(args))),
      );
    }
    for (const a of SQLITE_AGGREGATES)
      db.aggregate(a.name, { ...(a.options as unknown as AggregateOptions), directOnly: true });
    db.function(SQLITE_DEADLINE, { deterministic: false, directOnly: true }, () => gpkg.#tick());
    db.function("mapgate_spatial", { deterministic: false, directOnly: true }, (blob) =>
      gpkg.#spatial(blob instanceof Uint8Array ? blob : null),
    );
    db.setAuthorizer((action, arg1) => {
      if (action === SQLITE_SELECT || action === SQLITE_READ || action === SQLITE_FUNCTION) return SQLITE_OK;
      if (action === SQLITE_RECURSIVE) return SQLITE_OK;
      if (
        (action === SQLITE_INSERT || action === SQLITE_DELETE || action === SQLITE_UPDATE) &&
        RTREE_SHADOW.test(arg1 ?? "")
      )
        return SQLITE_OK;
      if (action === SQLITE_PRAGMA && arg1 !== null && ALLOWED_PRAGMAS.has(arg1.toLowerCase())) return SQLITE_OK;
      return SQLITE_DENY;
    });
    return gpkg;
  }

  #spatial(blob: Uint8Array | null): number {
    // One exact test may cost far more than a row (a polygon of many vertices against another): the deadline is
    // checked before each, not every 256 rows.
    if (Date.now() > this.#deadline) throw new QueryTimeoutError();
    return this.spatialTest?.(blob) ? 1 : 0;
  }

  /** Counts the text of values passing to or from a function toward MAX_FUNCTION_TEXT. */
  #counted<T>(values: T): T {
    for (const v of Array.isArray(values) ? values : [values]) if (typeof v === "string") this.#text += v.length;
    if (this.#text > MAX_FUNCTION_TEXT) throw new QueryTextError();
    return values;
  }

  #tick(): number {
    // Date.now() every 256 rows: the check costs little beside the row it guards.
    if ((++this.#examined & 0xff) === 0 && Date.now() > this.#deadline) throw new QueryTimeoutError();
    return 1;
  }

  /** Runs a statement (cached by its text) with a deadline; rows as arrays, columns in SELECT order. */
  all(sql: string, params: readonly unknown[], deadline: number): unknown[][] {
    let statement = this.#statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      statement.setReturnArrays(true);
      if (this.#statements.size >= 64) this.#statements.delete(this.#statements.keys().next().value as string);
      this.#statements.set(sql, statement);
    }
    this.#deadline = deadline;
    this.#examined = 0;
    this.#text = 0;
    try {
      return statement.all(...(params as never[])) as unknown as unknown[][];
    } catch (err) {
      if (err instanceof QueryTextError) throw err;
      if (Date.now() > deadline || err instanceof QueryTimeoutError) throw new QueryTimeoutError();
      throw err;
    } finally {
      this.#deadline = Number.POSITIVE_INFINITY;
    }
  }

  /**
   * A feature table's statistics (access.ts), learnt on first use and kept while the file's version stands (a
   * reader is opened again when its file changes: geoPackageAt): its row count (sqlite_stat1's when the file was
   * analysed, else counted once), its single-column indexes, a sample of its rows' envelopes and indexed values,
   * and the rows of each value asked for, counted through the value's index.
   */
  statistics(schema: LayerSchema): LayerStatistics | undefined {
    const rtree = schema.geometry?.index;
    if (rtree === undefined) return undefined;
    const [table] = schema.table;
    if (table === undefined) return undefined;
    const known = this.#statistics.get(table);
    if (known) return known;
    const served = new Set(schema.fields.map((f) => f.column));
    const indexed = new Set<string>();
    const lists = this.db.prepare("SELECT name, partial FROM pragma_index_list(?)").all(table) as {
      name: string;
      partial: number;
    }[];
    for (const index of lists) {
      if (index.partial) continue;
      const keys = this.db.prepare("SELECT name FROM pragma_index_info(?)").all(index.name) as { name: unknown }[];
      const column = keys[0]?.name;
      if (keys.length === 1 && typeof column === "string" && served.has(column)) indexed.add(column);
    }
    const key = quote(schema.fields.find((f) => f.name === schema.objectIdField)?.column ?? "fid");
    // Without an index to choose, nothing more is needed (and nothing is counted).
    const rows =
      indexed.size === 0
        ? 0
        : (this.#rowCount(table) ?? Number(this.db.prepare(`SELECT count(*) AS n FROM ${quote(table)}`).get()?.n));
    const sample: SampledRow[] = [];
    if (indexed.size > 0) {
      const span = this.db.prepare(`SELECT min(${key}) AS lo, max(${key}) AS hi FROM ${quote(table)}`).get() as {
        lo: number | null;
        hi: number | null;
      };
      const ids: number[] = [];
      if (span.lo !== null && span.hi !== null) {
        const step = Math.max(1, (span.hi - span.lo) / STATISTICS_SAMPLE);
        for (let id = span.lo; id <= span.hi && ids.length < STATISTICS_SAMPLE; id += step) ids.push(Math.round(id));
      }
      const columns = [...indexed];
      const read = this.db.prepare(
        `SELECT r.minx, r.miny, r.maxx, r.maxy${columns.map((c) => `, t.${quote(c)}`).join("")} FROM ${quote(table)} AS t ` +
          `JOIN ${quote(rtree)} AS r ON r.id = t.${key} WHERE t.${key} IN (SELECT value FROM json_each(?))`,
      );
      read.setReturnArrays(true);
      for (const row of read.all(JSON.stringify([...new Set(ids)])) as unknown as unknown[][]) {
        const values: Record<string, unknown> = {};
        columns.forEach((c, i) => (values[c] = row[4 + i]));
        sample.push({ box: row.slice(0, 4) as unknown as Bounds, values });
      }
    }
    // Each value's count, or (capped) a count known to be at least this.
    const counts = new Map<string, { n: number; exact: boolean }>();
    const count = (column: string, value: string | number, atMost = Number.MAX_SAFE_INTEGER): number => {
      const id = `${column}\u0000${typeof value}\u0000${value}`;
      const known = counts.get(id);
      if (known && (known.exact || known.n >= atMost)) return Math.min(known.n, atMost);
      // Through the column's index: entries counted (at most `atMost` of them), no row read.
      const n = Number(
        this.db
          .prepare(`SELECT count(*) AS n FROM (SELECT 1 FROM ${quote(table)} WHERE ${quote(column)} = ? LIMIT ?)`)
          .get(value, BigInt(Math.max(0, Math.floor(atMost))))?.n ?? 0,
      );
      if (counts.size >= MAX_COUNTED_VALUES) counts.clear();
      counts.set(id, { n, exact: n < atMost });
      return n;
    };
    const statistics: LayerStatistics = { rows: Number.isFinite(rows) ? rows : 0, indexed, sample, count };
    this.#statistics.set(table, statistics);
    return statistics;
  }

  /** A table's row count as ANALYZE left it in sqlite_stat1 (its entries' first number), when the file has one. */
  #rowCount(table: string): number | undefined {
    if (!this.#hasTable("sqlite_stat1")) return undefined;
    const row = this.db.prepare("SELECT stat FROM sqlite_stat1 WHERE tbl = ? LIMIT 1").get(table) as
      { stat?: unknown } | undefined;
    const n = typeof row?.stat === "string" ? Number(row.stat.split(" ")[0]) : NaN;
    return Number.isSafeInteger(n) && n >= 0 ? n : undefined;
  }

  /** The datasets the file holds, by table name. */
  datasets(): GeoPackageDataset[] {
    const rows = this.db
      .prepare("SELECT table_name, data_type FROM gpkg_contents WHERE data_type IN ('features', 'attributes')")
      .all() as { table_name: string; data_type: string }[];
    return rows.map((r): GeoPackageDataset => {
      const schema = this.schema(r.table_name);
      const kind = r.data_type === "features" ? "featureClass" : "table";
      return schema instanceof DatasetError
        ? { table: r.table_name, kind, unpublishable: schema.message }
        : { table: r.table_name, kind };
    });
  }

  /** A dataset's schema, or why it cannot be served (a DatasetError); undefined when there is no such table. */
  schema(table: string): LayerSchema | DatasetError | undefined {
    const known = this.#schemas.get(table);
    if (known) return known;
    const content = this.db
      .prepare(
        "SELECT table_name, data_type, min_x, min_y, max_x, max_y FROM gpkg_contents WHERE table_name = ? AND data_type IN ('features', 'attributes')",
      )
      .get(table) as
      | {
          table_name: string;
          data_type: string;
          min_x: number | null;
          min_y: number | null;
          max_x: number | null;
          max_y: number | null;
        }
      | undefined;
    if (!content) return undefined;
    let schema: LayerSchema | DatasetError;
    try {
      schema = this.#describe(content.table_name, content.data_type === "features", content);
      schema = withEditing(schema, this.#editing(content.table_name));
      if (this.#hasTable(attachTableName(content.table_name, sqliteEmitter))) schema = { ...schema, attachments: true };
    } catch (err) {
      if (!(err instanceof DatasetError)) throw err;
      schema = err;
    }
    this.#schemas.set(table, schema);
    return schema;
  }

  #describe(
    table: string,
    features: boolean,
    content: { min_x: number | null; min_y: number | null; max_x: number | null; max_y: number | null },
  ): LayerSchema {
    const columns = this.db.prepare('SELECT name, type, "notnull", pk FROM pragma_table_info(?)').all(table) as {
      name: string;
      type: string;
      notnull: number;
      pk: number;
    }[];
    if (columns.length === 0) throw new DatasetError(`The table '${table}' does not exist in the file.`);
    let geometry: GeometryColumn | undefined;
    if (features) {
      const g = this.db
        .prepare("SELECT column_name, geometry_type_name, srs_id, z, m FROM gpkg_geometry_columns WHERE table_name = ?")
        .get(table) as
        { column_name: string; geometry_type_name: string; srs_id: number; z: number; m: number } | undefined;
      if (!g) throw new DatasetError(`The feature table '${table}' has no entry in gpkg_geometry_columns.`);
      const type = esriGeometryTypeOf(g.geometry_type_name);
      if (!type) {
        throw new DatasetError(
          `The geometry type ${g.geometry_type_name.slice(0, 32)} of '${table}' has no feature layer type (a GEOMETRY or collection column mixes types).`,
        );
      }
      const rtree = `rtree_${table}_${g.column_name}`;
      const hasIndex =
        this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(rtree) !== undefined;
      geometry = {
        column: g.column_name,
        type,
        hasZ: g.z === 1,
        hasM: g.m === 1,
        srid: this.#epsgOf(g.srs_id),
        ...(hasIndex ? { index: rtree } : {}),
      };
    }
    const keys = columns.filter((c) => c.pk > 0);
    const key = keys.length === 1 ? keys[0] : undefined;
    if (!key || !/^INTEGER$/i.test(key.type.trim())) {
      throw new DatasetError(`The table '${table}' has no single-column INTEGER PRIMARY KEY to serve as object ids.`);
    }
    const titles = this.#titles(table);
    const fields: Field[] = [];
    for (const c of columns) {
      if (geometry && c.name === geometry.column) continue;
      const type = c === key ? "esriFieldTypeOID" : fieldType(c.type);
      if (!type) continue;
      const length = /^\s*TEXT\s*\(\s*(\d+)\s*\)\s*$/i.exec(c.type)?.[1];
      fields.push({
        name: c.name,
        type,
        alias: titles.get(c.name) ?? c.name,
        ...(length ? { length: Number(length) } : {}),
        nullable: c !== key && c.notnull === 0,
        column: c.name,
      });
    }
    const firstString = fields.find((f) => f.type === "esriFieldTypeString");
    const extent = geometry ? this.#extent(geometry, content) : undefined;
    return {
      name: table,
      table: [table],
      fields,
      objectIdField: key.name,
      displayField: firstString?.name ?? key.name,
      ...(geometry ? { geometry } : {}),
      ...(extent ? { extent } : {}),
    };
  }

  /**
   * A layer's editing as a hosted GeoPackage records it (mapgate_editing: its global id and tracking fields, its last
   * edit), when the file has the table; names must be the table's columns to count.
   */
  #hasTable(name: string): boolean {
    return this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
  }

  #editing(table: string): LayerEditing | undefined {
    const has = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(EDITING_TABLE);
    if (!has) return undefined;
    const row = this.db
      .prepare(
        `SELECT global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit FROM ${quote(EDITING_TABLE)} WHERE table_name = ?`,
      )
      .get(table) as Record<string, unknown> | undefined;
    return row ? editingOf(row) : undefined;
  }

  /**
   * Columns' titles (aliases) from the schema extension's gpkg_data_columns, when the file has it: text of at most
   * 255 characters, else the column's name stands.
   */
  #titles(table: string): Map<string, string> {
    const titles = new Map<string, string>();
    const has = this.db
      .prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpkg_data_columns'")
      .get();
    if (!has) return titles;
    const rows = this.db
      .prepare("SELECT column_name, title FROM gpkg_data_columns WHERE table_name = ? LIMIT 2000")
      .all(table) as { column_name: unknown; title: unknown }[];
    for (const r of rows) {
      if (typeof r.column_name === "string" && typeof r.title === "string" && r.title !== "" && r.title.length <= 255)
        titles.set(r.column_name, r.title);
    }
    return titles;
  }

  /** The extent from the R*Tree when there is one (exact), else as gpkg_contents declares it. */
  #extent(
    g: GeometryColumn,
    content: { min_x: number | null; min_y: number | null; max_x: number | null; max_y: number | null },
  ): Bounds | undefined {
    if (g.index) return rtreeExtent(this.db, g.index);
    const { min_x, min_y, max_x, max_y } = content;
    if ([min_x, min_y, max_x, max_y].every((x) => typeof x === "number" && Number.isFinite(x)))
      return [min_x, min_y, max_x, max_y] as unknown as Bounds;
    return undefined;
  }

  /** The EPSG code of a GeoPackage srs_id (GeoPackage lets a file number its own systems). */
  #epsgOf(srsId: number): number {
    const row = this.db
      .prepare("SELECT organization, organization_coordsys_id FROM gpkg_spatial_ref_sys WHERE srs_id = ?")
      .get(srsId) as { organization: string; organization_coordsys_id: number } | undefined;
    if (!row) throw new DatasetError(`The spatial reference system ${srsId} is not in gpkg_spatial_ref_sys.`);
    if (row.organization.toUpperCase() === "EPSG") return row.organization_coordsys_id;
    // -1 and 0 are GeoPackage's undefined Cartesian and geographic systems.
    if (srsId === -1 || srsId === 0) return 0;
    return row.organization_coordsys_id;
  }

  /** The definition (WKT) the file gives a coordinate system, for projecting from a code no library knows. */
  definitionOf(epsg: number): string | undefined {
    const row = this.db
      .prepare(
        "SELECT definition FROM gpkg_spatial_ref_sys WHERE organization_coordsys_id = ? AND upper(organization) = 'EPSG'",
      )
      .get(epsg) as { definition?: string } | undefined;
    return row?.definition && row.definition !== "undefined" ? row.definition : undefined;
  }

  close(): void {
    this.db.close();
  }
}

/**
 * The Esri type of a GeoPackage column type (GeoPackage 1.3 table 1). INTEGER is 64-bit in GeoPackage, but
 * esriFieldTypeInteger is what every client reads (BigInteger is newer than GDAL 3.6 and many web maps);
 * DATE and DATETIME are both answered as dates in epoch milliseconds. Undefined: the column is not served.
 */
function fieldType(declared: string): EsriFieldType | undefined {
  const t = declared
    .trim()
    .toUpperCase()
    .replace(/\s*\(.*$/, "");
  switch (t) {
    case "BOOLEAN":
    case "TINYINT":
    case "SMALLINT":
      return "esriFieldTypeSmallInteger";
    case "MEDIUMINT":
    case "INT":
    case "INTEGER":
      return "esriFieldTypeInteger";
    case "FLOAT":
      return "esriFieldTypeSingle";
    case "DOUBLE":
    case "REAL":
      return "esriFieldTypeDouble";
    case "TEXT":
      return "esriFieldTypeString";
    case "DATE":
    case "DATETIME":
      return "esriFieldTypeDate";
    case "BLOB":
      return "esriFieldTypeBlob";
    default:
      // SQLite's own affinity rules for what GeoPackage does not name.
      if (t.includes("INT")) return "esriFieldTypeInteger";
      if (t.includes("CHAR") || t.includes("CLOB") || t.includes("TEXT")) return "esriFieldTypeString";
      if (t.includes("REAL") || t.includes("FLOA") || t.includes("DOUB")) return "esriFieldTypeDouble";
      return undefined;
  }
}

/** SQLite's answer to a read-only connection that meets a hot journal it may not roll back. */
const SQLITE_READONLY_ROLLBACK = 776;

/** A file a writer's crash left with a hot journal (told apart from a file that is no GeoPackage). */
class HotJournalError extends DatasetError {
  constructor() {
    super("The GeoPackage was left mid-transaction by a writer that stopped: it is read once recovered.");
  }
}

/**
 * Rolls back the hot journal of a file a writer's crash left (a connection that may write does it on its first read),
 * waiting for a live writer's commit if one holds the file.
 */
async function recoverJournal(file: string): Promise<void> {
  const { DatabaseSync } = await loadSqlite();
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: false, allowExtension: false });
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    db.prepare("SELECT count(*) FROM sqlite_master").get();
  } finally {
    db.close();
  }
}

export const quote = (identifier: string) => `"${identifier.replace(/"/g, '""')}"`;

// Open GeoPackages by file, while the function is warm: reopened when the file's version moves.
const opened = new Map<string, Promise<GeoPackage>>();
const MAX_OPEN = 16;

/** `recover`: the file is mapgate's own (hosted data), whose hot journal a crash left is rolled back by its reader. */
export async function geoPackageAt(file: string, version: string, recover = false): Promise<GeoPackage> {
  const held = opened.get(file);
  if (held) {
    const gpkg = await held.catch(() => undefined);
    if (gpkg && gpkg.version === version) return gpkg;
    opened.delete(file);
    gpkg?.close();
  }
  const next = GeoPackage.open(file, version, { recover });
  if (opened.size >= MAX_OPEN) {
    const [oldest, pending] = opened.entries().next().value as [string, Promise<GeoPackage>];
    opened.delete(oldest);
    void pending.then(
      (g) => g.close(),
      () => undefined,
    );
  }
  opened.set(file, next);
  next.catch(() => opened.delete(file));
  return next;
}
