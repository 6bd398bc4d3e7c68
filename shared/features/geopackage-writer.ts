// A GeoPackage (OGC 12-128r18, version 1.3) writer for hosted layers, the demo data and test fixtures: feature and attribute
// tables written once, in one transaction, into a file that appears under its final name only when complete.
// It only writes: reading GeoPackage geometry (and everything else a layer needs) lives in shared/features, and
// the tests check what is written here against GDAL, so writer and reader cannot agree on a private dialect.
// Geometry is 2D (a position's z, if any, is dropped): the demo data and fixtures are 2D.
import { randomUUID } from "node:crypto";
import { closeSync, fsyncSync, openSync, renameSync, rmSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import type { Geometry } from "geojson";
import { encodeGeometry } from "#shared/features/geometry/wkb-write.ts";

/** 'GPKG' as a big-endian integer: what identifies a SQLite file as a GeoPackage. */
export const GPKG_APPLICATION_ID = 0x47504b47;
/**
 * GeoPackage 1.3: its R*Tree triggers (update1–update4) are the ones GDAL 3.6 and its validator know; 1.4 only
 * replaced those triggers, so nothing a reader needs differs.
 */
export const GPKG_USER_VERSION = 10300;

export const GEOMETRY_TYPE_NAMES = [
  "POINT",
  "LINESTRING",
  "POLYGON",
  "MULTIPOINT",
  "MULTILINESTRING",
  "MULTIPOLYGON",
] as const;
export type GeometryTypeName = (typeof GEOMETRY_TYPE_NAMES)[number];

/** The GeoPackage column types (Table 1 of the specification) other than geometry. */
export type ColumnType =
  | "BOOLEAN"
  | "TINYINT"
  | "SMALLINT"
  | "MEDIUMINT"
  | "INT"
  | "INTEGER"
  | "FLOAT"
  | "DOUBLE"
  | "REAL"
  | "TEXT"
  | "BLOB"
  | "DATE"
  | "DATETIME";

export interface ColumnSpec {
  readonly name: string;
  readonly type: ColumnType;
  readonly notNull?: boolean;
  /** TEXT only: declared as TEXT(n), which clients read as the field's length. */
  readonly maxLength?: number;
  /** A human-readable title (the field's alias), kept in gpkg_data_columns (the schema extension). */
  readonly title?: string;
}

/**
 * A cell as given: booleans are stored as 0/1, a Date in a DATE column as its UTC day (YYYY-MM-DD) and in a
 * DATETIME column as YYYY-MM-DDTHH:MM:SS.SSSZ, both as the specification says; strings are stored as given.
 */
export type CellValue = string | number | bigint | boolean | Date | Uint8Array | null | undefined;

export interface GeoPackageRow {
  /** The feature id (fid); numbered from 1 in order when absent. */
  readonly id?: number;
  /** By column name; a column left out is NULL. */
  readonly values?: Readonly<Record<string, CellValue>>;
  /** Feature tables only; null or absent for a feature without geometry. */
  readonly geometry?: Geometry | null;
}

/** The coordinate systems this writer can declare, with GDAL's single-line WKT 1 for the EPSG ones. */
export const SPATIAL_REF_SYS = {
  [-1]: {
    srsName: "Undefined cartesian SRS",
    organization: "NONE",
    definition: "undefined",
    description: "undefined cartesian coordinate reference system",
  },
  0: {
    srsName: "Undefined geographic SRS",
    organization: "NONE",
    definition: "undefined",
    description: "undefined geographic coordinate reference system",
  },
  4326: {
    srsName: "WGS 84 geodetic",
    organization: "EPSG",
    definition:
      'GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,298.257223563,AUTHORITY["EPSG","7030"]],' +
      'AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,AUTHORITY["EPSG","8901"]],' +
      'UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],AXIS["Latitude",NORTH],AXIS["Longitude",EAST],' +
      'AUTHORITY["EPSG","4326"]]',
    description: "longitude/latitude coordinates in decimal degrees on the WGS 84 spheroid",
  },
  3857: {
    srsName: "WGS 84 / Pseudo-Mercator",
    organization: "EPSG",
    definition:
      'PROJCS["WGS 84 / Pseudo-Mercator",GEOGCS["WGS 84",DATUM["WGS_1984",SPHEROID["WGS 84",6378137,' +
      '298.257223563,AUTHORITY["EPSG","7030"]],AUTHORITY["EPSG","6326"]],PRIMEM["Greenwich",0,' +
      'AUTHORITY["EPSG","8901"]],UNIT["degree",0.0174532925199433,AUTHORITY["EPSG","9122"]],' +
      'AUTHORITY["EPSG","4326"]],PROJECTION["Mercator_1SP"],PARAMETER["central_meridian",0],' +
      'PARAMETER["scale_factor",1],PARAMETER["false_easting",0],PARAMETER["false_northing",0],' +
      'UNIT["metre",1,AUTHORITY["EPSG","9001"]],AXIS["Easting",EAST],AXIS["Northing",NORTH],' +
      'EXTENSION["PROJ4","+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m ' +
      '+nadgrids=@null +wktext +no_defs"],AUTHORITY["EPSG","3857"]]',
    description: "Web Mercator (metres), as web maps tile the world",
  },
} as const;
export type SrsId = -1 | 0 | 4326 | 3857;

export interface GeoPackageLayer {
  /** The table name (and the layer's name in clients). */
  readonly name: string;
  /** gpkg_contents.identifier, a human-readable title; the table name when absent. */
  readonly identifier?: string;
  readonly description?: string;
  /** Absent: an attribute table (data_type 'attributes') with no geometry column. */
  readonly geometryType?: GeometryTypeName;
  /** The geometry column's name; `geom` when absent (as GDAL names it). */
  readonly geometryColumn?: string;
  /** 4326 when absent. */
  readonly srsId?: SrsId;
  /** The INTEGER PRIMARY KEY column (the object id); `fid` when absent (as GDAL names it). */
  readonly idColumn?: string;
  readonly columns: readonly ColumnSpec[];
  /**
   * Columns each given an index of its own once the rows are in (`<table>_<column>_idx`): queries filtering on
   * `column = value` with a spatial filter may then walk it instead of the R*Tree (shared/features/access.ts).
   */
  readonly indexes?: readonly string[];
  readonly rows: Iterable<GeoPackageRow>;
}

export interface GeoPackageOptions {
  /** gpkg_contents.last_change of every table; now when absent (give one for identical files on every run). */
  readonly lastChange?: Date;
}

/** [minx, miny, maxx, maxy] */
export type Extent = [number, number, number, number];

export interface WrittenLayer {
  readonly name: string;
  readonly count: number;
  /** The union of the geometries' envelopes; absent for attribute tables and tables of no non-empty geometry. */
  readonly extent?: Extent;
}

const DEFAULT_FID = "fid";

/** SQL identifier quoting: the names come from callers, and GeoPackage allows any table or column name. */
const q = (name: string) => `"${name.replaceAll('"', '""')}"`;

function checkLayer(layer: Omit<GeoPackageLayer, "rows">, seen: Set<string>): void {
  const lower = layer.name.toLowerCase();
  if (!layer.name || lower.startsWith("gpkg_") || lower.startsWith("sqlite_") || lower.startsWith("rtree_")) {
    throw new Error(`invalid GeoPackage table name: ${JSON.stringify(layer.name)}`);
  }
  if (seen.has(lower)) throw new Error(`duplicate GeoPackage table: ${layer.name}`);
  seen.add(lower);
  const columns = new Set([
    (layer.idColumn ?? DEFAULT_FID).toLowerCase(),
    ...(layer.geometryType ? [(layer.geometryColumn ?? "geom").toLowerCase()] : []),
  ]);
  for (const column of layer.columns) {
    if (!column.name || columns.has(column.name.toLowerCase())) {
      throw new Error(`invalid or duplicate column ${JSON.stringify(column.name)} in ${layer.name}`);
    }
    columns.add(column.name.toLowerCase());
  }
  if (layer.geometryType && !GEOMETRY_TYPE_NAMES.includes(layer.geometryType)) {
    throw new Error(`unsupported geometry type ${layer.geometryType} in ${layer.name}`);
  }
  if (!(String(layer.srsId ?? 4326) in SPATIAL_REF_SYS)) throw new Error(`unknown srs ${layer.srsId} in ${layer.name}`);
}

const SCHEMA = `
CREATE TABLE gpkg_spatial_ref_sys (
  srs_name TEXT NOT NULL,
  srs_id INTEGER NOT NULL PRIMARY KEY,
  organization TEXT NOT NULL,
  organization_coordsys_id INTEGER NOT NULL,
  definition TEXT NOT NULL,
  description TEXT
);
CREATE TABLE gpkg_contents (
  table_name TEXT NOT NULL PRIMARY KEY,
  data_type TEXT NOT NULL,
  identifier TEXT UNIQUE,
  description TEXT DEFAULT '',
  last_change DATETIME NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
  min_x DOUBLE,
  min_y DOUBLE,
  max_x DOUBLE,
  max_y DOUBLE,
  srs_id INTEGER,
  CONSTRAINT fk_gc_r_srs_id FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys(srs_id)
);
CREATE TABLE gpkg_geometry_columns (
  table_name TEXT NOT NULL,
  column_name TEXT NOT NULL,
  geometry_type_name TEXT NOT NULL,
  srs_id INTEGER NOT NULL,
  z TINYINT NOT NULL,
  m TINYINT NOT NULL,
  CONSTRAINT pk_geom_cols PRIMARY KEY (table_name, column_name),
  CONSTRAINT uk_gc_table_name UNIQUE (table_name),
  CONSTRAINT fk_gc_tn FOREIGN KEY (table_name) REFERENCES gpkg_contents(table_name),
  CONSTRAINT fk_gc_srs FOREIGN KEY (srs_id) REFERENCES gpkg_spatial_ref_sys (srs_id)
);
CREATE TABLE gpkg_extensions (
  table_name TEXT,
  column_name TEXT,
  extension_name TEXT NOT NULL,
  definition TEXT NOT NULL,
  scope TEXT NOT NULL,
  CONSTRAINT ge_tce UNIQUE (table_name, column_name, extension_name)
);
`;

/** The schema extension's table, where columns' titles (aliases) are kept. */
const DATA_COLUMNS = `
CREATE TABLE IF NOT EXISTS gpkg_data_columns (
  table_name TEXT NOT NULL,
  column_name TEXT NOT NULL,
  name TEXT,
  title TEXT,
  description TEXT,
  mime_type TEXT,
  constraint_name TEXT,
  CONSTRAINT pk_gdc PRIMARY KEY (table_name, column_name)
);
INSERT INTO gpkg_extensions (table_name, column_name, extension_name, definition, scope)
SELECT 'gpkg_data_columns', NULL, 'gpkg_schema', 'http://www.geopackage.org/spec/#extension_schema', 'read-write'
WHERE NOT EXISTS (SELECT 1 FROM gpkg_extensions WHERE table_name = 'gpkg_data_columns' AND extension_name = 'gpkg_schema');
`;

/** Makes gpkg_data_columns if the file has none (a title is about to be kept). */
export function ensureDataColumns(db: DatabaseSync): void {
  db.exec(DATA_COLUMNS);
}

/**
 * Adds tables to a GeoPackage open for writing (its caller's transaction): what writeGeoPackage writes for each
 * layer, with the coordinate systems they name declared if the file lacks them.
 */
export function addLayers(db: DatabaseSync, layers: readonly GeoPackageLayer[]): WrittenLayer[] {
  const existing = db.prepare("SELECT table_name FROM gpkg_contents").all() as { table_name: string }[];
  const seen = new Set(existing.map((r) => r.table_name.toLowerCase()));
  for (const layer of layers) checkLayer(layer, seen);
  const srs = db.prepare(
    "INSERT OR IGNORE INTO gpkg_spatial_ref_sys (srs_name, srs_id, organization, organization_coordsys_id, " +
      "definition, description) VALUES (?, ?, ?, ?, ?, ?)",
  );
  for (const id of new Set(layers.map((l) => (l.geometryType ? (l.srsId ?? 4326) : -1)))) {
    const def = SPATIAL_REF_SYS[id];
    srs.run(def.srsName, id, def.organization, id, def.definition, def.description);
  }
  const lastChange = new Date().toISOString();
  return layers.map((layer) => writeLayer(db, layer, lastChange));
}

/**
 * The triggers that keep an R*Tree in step with its table (the specification's 1.3 set). They call ST_IsEmpty
 * and ST_MinX…ST_MaxY, which GDAL and other GeoPackage libraries register but plain SQLite lacks, so they are
 * created after the index has been filled directly from the envelopes computed here, and never fire while
 * writing. A later edit through a GeoPackage library keeps the index right; one through bare SQLite fails with
 * "no such function" rather than leaving the index stale.
 */
function rtreeTriggers(table: string, column: string, idColumn: string): string {
  // A plain name as it is (the specification's text), any other quoted.
  const FID = /^[A-Za-z_][A-Za-z0-9_]*$/.test(idColumn) ? idColumn : q(idColumn);
  const rtree = `rtree_${table}_${column}`;
  const [t, c, r] = [q(table), q(column), q(rtree)];
  const values = `(NEW.${FID}, ST_MinX(NEW.${c}), ST_MaxX(NEW.${c}), ST_MinY(NEW.${c}), ST_MaxY(NEW.${c}))`;
  const nonEmpty = `(NEW.${c} NOTNULL AND NOT ST_IsEmpty(NEW.${c}))`;
  const empty = `(NEW.${c} ISNULL OR ST_IsEmpty(NEW.${c}))`;
  const trigger = (suffix: string) => q(`${rtree}_${suffix}`);
  return `
CREATE TRIGGER ${trigger("insert")} AFTER INSERT ON ${t} WHEN ${nonEmpty}
BEGIN INSERT OR REPLACE INTO ${r} VALUES ${values}; END;
CREATE TRIGGER ${trigger("update1")} AFTER UPDATE OF ${c} ON ${t} WHEN OLD.${FID} = NEW.${FID} AND ${nonEmpty}
BEGIN INSERT OR REPLACE INTO ${r} VALUES ${values}; END;
CREATE TRIGGER ${trigger("update2")} AFTER UPDATE OF ${c} ON ${t} WHEN OLD.${FID} = NEW.${FID} AND ${empty}
BEGIN DELETE FROM ${r} WHERE id = OLD.${FID}; END;
CREATE TRIGGER ${trigger("update3")} AFTER UPDATE ON ${t} WHEN OLD.${FID} != NEW.${FID} AND ${nonEmpty}
BEGIN DELETE FROM ${r} WHERE id = OLD.${FID}; INSERT OR REPLACE INTO ${r} VALUES ${values}; END;
CREATE TRIGGER ${trigger("update4")} AFTER UPDATE ON ${t} WHEN OLD.${FID} != NEW.${FID} AND ${empty}
BEGIN DELETE FROM ${r} WHERE id IN (OLD.${FID}, NEW.${FID}); END;
CREATE TRIGGER ${trigger("delete")} AFTER DELETE ON ${t} WHEN OLD.${c} NOT NULL
BEGIN DELETE FROM ${r} WHERE id = OLD.${FID}; END;
`;
}

function declaredType(column: ColumnSpec): string {
  const type = column.type === "TEXT" && column.maxLength !== undefined ? `TEXT(${column.maxLength})` : column.type;
  return `${q(column.name)} ${type}${column.notNull ? " NOT NULL" : ""}`;
}

type SqlValue = string | number | bigint | Uint8Array | null;

function cell(value: CellValue, column: ColumnSpec): SqlValue {
  if (value === undefined || value === null) return null;
  if (typeof value === "boolean") return value ? 1 : 0;
  if (value instanceof Date) {
    const iso = value.toISOString();
    return column.type === "DATE" ? iso.slice(0, 10) : iso;
  }
  return value;
}

/**
 * Writes a GeoPackage at `path` (replacing any file there) holding `layers`, each a table with an INTEGER
 * PRIMARY KEY `fid`, and for feature tables a geometry column with an R*Tree spatial index. Synchronous, as
 * node:sqlite is: 171,000 points with four attributes take about 1.5 s, most of it filling the R*Tree.
 */
export function writeGeoPackage(
  path: string,
  layers: readonly GeoPackageLayer[],
  options: GeoPackageOptions = {},
): WrittenLayer[] {
  const file = beginFile(path, layers, options);
  try {
    const written = layers.map((layer) => {
      const writer = new LayerWriter(file.db, layer, file.lastChange);
      for (const row of layer.rows) writer.add(row);
      return writer.finish();
    });
    file.commit();
    return written;
  } catch (err) {
    file.abandon();
    throw err;
  }
}

/** A layer whose rows arrive as they are read (an upload parsed as a stream): never all in memory. */
export interface StreamedLayer extends Omit<GeoPackageLayer, "rows"> {
  readonly rows: AsyncIterable<GeoPackageRow>;
}

/**
 * writeGeoPackage for rows read as they come: the same file, written in the same one transaction, each row inserted
 * as it arrives and the R*Tree filled a batch at a time, so memory holds a batch of envelopes whatever the rows'
 * number.
 */
export async function writeGeoPackageStreaming(
  path: string,
  layers: readonly StreamedLayer[],
  options: GeoPackageOptions = {},
): Promise<WrittenLayer[]> {
  const file = beginFile(path, layers, options, 32_768);
  try {
    const written: WrittenLayer[] = [];
    for (const layer of layers) {
      const writer = new LayerWriter(file.db, layer, file.lastChange);
      for await (const row of layer.rows) writer.add(row);
      written.push(writer.finish());
    }
    file.commit();
    return written;
  } catch (err) {
    file.abandon();
    throw err;
  }
}

/** A GeoPackage being written at a temporary name beside `path`: its schema made, its one transaction open. */
function beginFile(
  path: string,
  layers: readonly Omit<GeoPackageLayer, "rows">[],
  options: GeoPackageOptions,
  cacheKiB = 65_536,
) {
  const seen = new Set<string>();
  for (const layer of layers) checkLayer(layer, seen);
  // Same folder, so the rename is atomic; the name is unique so two writers never share a temporary file.
  const temp = join(dirname(path), `.${basename(path)}.${process.pid}-${randomUUID()}.tmp`);
  const db = new DatabaseSync(temp);
  const abandon = () => {
    if (db.isOpen) db.close();
    rmSync(temp, { force: true });
  };
  try {
    // Nothing to roll back to: on any failure the temporary file is removed, so a journal would be wasted work.
    // The larger page cache (up to 64 MiB, used only as needed) keeps R*Tree inserts from rereading nodes: it
    // halves the time a large point layer takes. A streamed layer's R*Tree is filled a batch at a time, which
    // rereads fewer nodes: half of it, 32 MiB, keeps a publishing function's memory bounded at a small cost.
    db.exec(`PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -${cacheKiB};`);
    db.exec(`PRAGMA application_id = ${GPKG_APPLICATION_ID}; PRAGMA user_version = ${GPKG_USER_VERSION};`);
    db.exec("BEGIN");
    db.exec(SCHEMA);
    const srs = db.prepare(
      "INSERT INTO gpkg_spatial_ref_sys (srs_name, srs_id, organization, organization_coordsys_id, definition, " +
        "description) VALUES (?, ?, ?, ?, ?, ?)",
    );
    const srsIds = new Set<number>([-1, 0, 4326, ...layers.map((l) => (l.geometryType ? (l.srsId ?? 4326) : -1))]);
    for (const id of [...srsIds].sort((a, b) => a - b)) {
      const def = SPATIAL_REF_SYS[id as SrsId];
      srs.run(def.srsName, id, def.organization, id, def.definition, def.description);
    }
  } catch (err) {
    abandon();
    throw err;
  }
  return {
    db,
    lastChange: (options.lastChange ?? new Date()).toISOString(),
    abandon,
    commit() {
      db.exec("COMMIT");
      db.close();
      // Durable before it is visible: after a crash the final name holds the whole file or nothing new.
      const fd = openSync(temp, "r");
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, path);
    },
  };
}

function writeLayer(db: DatabaseSync, layer: GeoPackageLayer, lastChange: string): WrittenLayer {
  const writer = new LayerWriter(db, layer, lastChange);
  for (const row of layer.rows) writer.add(row);
  return writer.finish();
}

/** Envelopes held before they go into the R*Tree together (id and four doubles each: 2.6 MB). */
const INDEX_BATCH = 65_536;

/** One table written a row at a time, within its file's transaction; `finish` declares it. */
class LayerWriter {
  readonly #db: DatabaseSync;
  readonly #layer: Omit<GeoPackageLayer, "rows">;
  readonly #lastChange: string;
  readonly #table: string;
  readonly #fid: string;
  readonly #geometryColumn: string | undefined;
  readonly #srsId: number;
  readonly #insert: StatementSync;
  readonly #index: StatementSync | undefined;
  /** Envelopes not yet in the R*Tree: id, minx, maxx, miny, maxy (as the R*Tree's columns go). */
  readonly #pending = new Float64Array(INDEX_BATCH * 5);
  #pendingCount = 0;
  readonly #extent: Extent = [Infinity, Infinity, -Infinity, -Infinity];
  #count = 0;
  #nextId = 1;

  constructor(db: DatabaseSync, layer: Omit<GeoPackageLayer, "rows">, lastChange: string) {
    this.#db = db;
    this.#layer = layer;
    this.#lastChange = lastChange;
    const table = (this.#table = layer.name);
    const FID = (this.#fid = layer.idColumn ?? DEFAULT_FID);
    const geometryColumn = (this.#geometryColumn = layer.geometryType ? (layer.geometryColumn ?? "geom") : undefined);
    this.#srsId = layer.srsId ?? 4326;
    const columns = [
      // AUTOINCREMENT, as GDAL declares it: a deleted feature's id is never handed out again.
      `${q(FID)} INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL`,
      ...(geometryColumn ? [`${q(geometryColumn)} ${layer.geometryType}`] : []),
      ...layer.columns.map(declaredType),
    ];
    db.exec(`CREATE TABLE ${q(table)} (${columns.join(", ")})`);
    const names = [FID, ...(geometryColumn ? [geometryColumn] : []), ...layer.columns.map((c) => c.name)];
    this.#insert = db.prepare(
      `INSERT INTO ${q(table)} (${names.map(q).join(", ")}) VALUES (${names.map(() => "?").join(", ")})`,
    );
    if (geometryColumn) {
      const rtree = q(`rtree_${table}_${geometryColumn}`);
      db.exec(`CREATE VIRTUAL TABLE ${rtree} USING rtree(id, minx, maxx, miny, maxy)`);
      this.#index = db.prepare(`INSERT INTO ${rtree} VALUES (?, ?, ?, ?, ?)`);
    }
  }

  add(row: GeoPackageRow): void {
    const layer = this.#layer;
    const id = row.id ?? this.#nextId;
    this.#nextId = Math.max(this.#nextId, id + 1);
    const params: SqlValue[] = [id];
    if (this.#geometryColumn && layer.geometryType) {
      const geometry = row.geometry ? asDeclared(row.geometry, layer.geometryType, this.#table) : null;
      const blob = geometry ? encodeGeometry(geometry, this.#srsId) : null;
      params.push(blob?.bytes ?? null);
      const env = blob?.envelope;
      if (env) {
        const extent = this.#extent;
        extent[0] = Math.min(extent[0], env[0]);
        extent[1] = Math.min(extent[1], env[1]);
        extent[2] = Math.max(extent[2], env[2]);
        extent[3] = Math.max(extent[3], env[3]);
        const at = this.#pendingCount++ * 5;
        this.#pending.set([id, env[0], env[2], env[1], env[3]], at);
        if (this.#pendingCount === INDEX_BATCH) this.#flushIndex();
      }
    } else if (row.geometry) {
      throw new Error(`${this.#table} is an attribute table: row ${id} has a geometry`);
    }
    for (const column of layer.columns) params.push(cell(row.values?.[column.name], column));
    this.#insert.run(...params);
    this.#count++;
  }

  /**
   * The batch's envelopes into the R*Tree: filled apart from the table's rows, a batch at a time, so the two do
   * not take turns in the page cache row by row, and memory holds one batch whatever the layer's size.
   */
  #flushIndex(): void {
    const index = this.#index;
    const p = this.#pending;
    if (index)
      for (let i = 0; i < this.#pendingCount; i++)
        index.run(
          p[i * 5] as number,
          p[i * 5 + 1] as number,
          p[i * 5 + 2] as number,
          p[i * 5 + 3] as number,
          p[i * 5 + 4] as number,
        );
    this.#pendingCount = 0;
  }

  finish(): WrittenLayer {
    this.#flushIndex();
    const db = this.#db;
    const layer = this.#layer;
    const table = this.#table;
    const geometryColumn = this.#geometryColumn;
    const srsId = this.#srsId;
    const FID = this.#fid;
    const lastChange = this.#lastChange;
    const extent = this.#extent;
    const count = this.#count;
    const hasExtent = extent[0] <= extent[2];
    db.prepare(
      "INSERT INTO gpkg_contents (table_name, data_type, identifier, description, last_change, min_x, min_y, max_x, " +
        "max_y, srs_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    ).run(
      table,
      geometryColumn ? "features" : "attributes",
      layer.identifier ?? table,
      layer.description ?? "",
      lastChange,
      ...(hasExtent ? extent : [null, null, null, null]),
      geometryColumn ? srsId : null,
    );
    if (geometryColumn && layer.geometryType) {
      db.prepare(
        "INSERT INTO gpkg_geometry_columns (table_name, column_name, geometry_type_name, srs_id, z, m) " +
          "VALUES (?, ?, ?, ?, 0, 0)",
      ).run(table, geometryColumn, layer.geometryType, srsId);
      db.prepare(
        "INSERT INTO gpkg_extensions (table_name, column_name, extension_name, definition, scope) " +
          "VALUES (?, ?, 'gpkg_rtree_index', 'http://www.geopackage.org/spec120/#extension_rtree', 'write-only')",
      ).run(table, geometryColumn);
      db.exec(rtreeTriggers(table, geometryColumn, FID));
    }
    for (const column of layer.indexes ?? []) {
      if (!layer.columns.some((c) => c.name === column))
        throw new Error(`${table}: the index's column ${column} is not among the layer's columns`);
      // Index names share one namespace with tables: the first free one of <table>_<column>_idx, …_idx2, …
      const taken = db.prepare("SELECT 1 FROM sqlite_master WHERE lower(name) = lower(?)");
      let name = `${table}_${column}_idx`;
      for (let n = 2; taken.get(name) !== undefined; n++) name = `${table}_${column}_idx${n}`;
      db.exec(`CREATE INDEX ${q(name)} ON ${q(table)} (${q(column)})`);
    }
    const titled = layer.columns.filter((c) => c.title !== undefined && c.title !== c.name);
    if (titled.length > 0) {
      db.exec(DATA_COLUMNS);
      const title = db.prepare(
        "INSERT OR REPLACE INTO gpkg_data_columns (table_name, column_name, name, title) VALUES (?, ?, ?, ?)",
      );
      for (const c of titled) title.run(table, c.name, c.name, c.title ?? null);
    }
    return { name: table, count, ...(hasExtent ? { extent } : {}) };
  }
}

/**
 * The geometry as the column declares it: a single part where the column holds multis becomes a one-part multi,
 * as a GeoPackage column holds only its declared type (a Polygon is no MultiPolygon) and sources such as
 * Natural Earth mix the two.
 */
export function asDeclared(geometry: Geometry, declared: GeometryTypeName, table: string): Geometry {
  const wanted = declared.toLowerCase();
  if (geometry.type.toLowerCase() === wanted) return geometry;
  if (geometry.type === "Point" && declared === "MULTIPOINT") {
    return { type: "MultiPoint", coordinates: geometry.coordinates.length ? [geometry.coordinates] : [] };
  }
  if (geometry.type === "LineString" && declared === "MULTILINESTRING") {
    return { type: "MultiLineString", coordinates: [geometry.coordinates] };
  }
  if (geometry.type === "Polygon" && declared === "MULTIPOLYGON") {
    return { type: "MultiPolygon", coordinates: geometry.coordinates.length ? [geometry.coordinates] : [] };
  }
  throw new Error(`${table} holds ${declared}: cannot store a ${geometry.type}`);
}
