// What an uploaded GeoPackage holds, as hosted layers: an attacker's SQLite file, so it is copied to a private
// temporary file and opened there read-only (defensive mode, no extensions, an untrusted schema, and the reader's
// authorizer, which lets nothing but reading run), and only its real tables are read: gpkg_contents' `features` and
// `attributes` entries that sqlite_master lists as ordinary tables (no views, no virtual tables). Triggers cannot
// fire (nothing is written), and the rows are copied into the GeoPackage mapgate writes: the upload is never served.
import { open } from "node:fs/promises";
import type { Geometry } from "geojson";
import { DatasetError } from "#shared/features/errors.ts";
import { GeoPackage, quote } from "#shared/features/geopackage.ts";
import { GEOMETRY_TYPE_NAMES, type GeometryTypeName, type GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import { decodeGeoPackageGeometry } from "#shared/features/geometry/wkb.ts";
import { hasCrs, mapPositions, registerCrs, transformer, WGS84 } from "#shared/features/geometry/projection.ts";
import type { EsriFieldType } from "#shared/features/schema.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { type FileSource, withLocalCopy } from "#shared/hosted/file-source.ts";
import { MAX_LAYERS } from "#shared/hosted/shapefile.ts";
import {
  checkFileValues,
  type FieldKind,
  fieldNames,
  fitsLayer,
  MAX_FIELDS,
  MAX_TEXT,
  type NamedTable,
  RESERVED_TABLE,
  type TableField,
} from "#shared/hosted/tables.ts";

const SQLITE_MAGIC = Buffer.from("SQLite format 3\u0000");
const SIMPLE_TYPES = new Set<string>(GEOMETRY_TYPE_NAMES);
const shown = (name: string) => JSON.stringify(name.slice(0, 120));

const KINDS: Partial<Record<EsriFieldType, FieldKind>> = {
  esriFieldTypeSmallInteger: "integer",
  esriFieldTypeInteger: "integer",
  esriFieldTypeSingle: "double",
  esriFieldTypeDouble: "double",
  esriFieldTypeString: "string",
  esriFieldTypeGUID: "string",
  esriFieldTypeDate: "date",
};

/**
 * The GeoPackage's tables, one layer each: feature tables first, then attribute tables, each in gpkg_contents'
 * order. The upload is copied to a private temporary file (on AWS the function's /tmp) and read there while `use`
 * runs: each table's rows are read by SQLite iteration, a row at a time, and the copy is removed after.
 */
export async function geoPackageTables<T>(
  source: FileSource,
  what: string,
  use: (tables: NamedTable[]) => Promise<T>,
): Promise<T> {
  if (source.size < 100 || !(await source.head(16)).equals(SQLITE_MAGIC))
    throw badRequest(what, ["The file is not a GeoPackage: it is not an SQLite database."]);
  return withLocalCopy(source, "upload.gpkg", async (file) => {
    // A WAL database (header bytes 18 and 19 set to 2) would need -wal and -shm files beside it: read as the
    // rollback journal database it is without them. The change is to mapgate's private copy, never to the upload.
    const handle = await open(file, "r+");
    try {
      const versions = Buffer.alloc(2);
      await handle.read(versions, 0, 2, 18);
      if (versions[0] === 2 || versions[1] === 2)
        await handle.write(
          Buffer.from([
            versions[0] === 2 ? 1 : (versions[0] as number),
            versions[1] === 2 ? 1 : (versions[1] as number),
          ]),
          0,
          2,
          18,
        );
    } finally {
      await handle.close();
    }
    let gpkg: GeoPackage | undefined;
    try {
      try {
        gpkg = await GeoPackage.open(file, "upload", { untrusted: true });
      } catch (err) {
        if (err instanceof DatasetError) throw badRequest(what, [`${err.message}`]);
        throw err;
      }
      return await use(readTables(gpkg, source.size, what));
    } catch (err) {
      if (err instanceof ApiError) throw err;
      // A file SQLite finds malformed midway (a page that lies about its content) is the upload's fault.
      if ((err as { code?: unknown }).code === "ERR_SQLITE_ERROR")
        throw badRequest(what, [`The GeoPackage cannot be read: ${(err as Error).message.slice(0, 160)}`]);
      throw err;
    } finally {
      gpkg?.close();
    }
  });
}

interface Content {
  readonly table_name: string;
  readonly data_type: string;
}

function readTables(gpkg: GeoPackage, bytes: number, what: string): NamedTable[] {
  const contents = gpkg.db
    .prepare(
      "SELECT c.table_name, c.data_type, m.type AS kind, m.sql FROM gpkg_contents c " +
        "LEFT JOIN sqlite_master m ON m.name = c.table_name AND m.type IN ('table', 'view') " +
        "WHERE c.data_type IN ('features', 'attributes') ORDER BY c.data_type DESC, c.rowid",
    )
    .all() as unknown as (Content & { kind: string | null; sql: string | null })[];
  const notes: string[] = [];
  const real = contents.filter((c) => {
    // GeoPackage's and SQLite's own tables (gpkg_…, rtree_…, sqlite_…) are never a layer, whatever lists them.
    const own = RESERVED_TABLE.test(c.table_name);
    const isTable = c.kind === "table" && !own && !/^\s*CREATE\s+VIRTUAL/i.test(c.sql ?? "");
    if (!isTable)
      notes.push(
        `${shown(c.table_name)} is ${c.kind === "view" ? "a view" : own ? "a table GeoPackage keeps for itself" : "no ordinary table"}: only tables are published.`,
      );
    return isTable;
  });
  if (real.length === 0)
    throw badRequest(what, [
      "The GeoPackage holds no feature or attribute tables to publish (views and other entries are not published).",
    ]);
  if (real.length > MAX_LAYERS)
    throw badRequest(what, [`The GeoPackage holds ${real.length} tables; at most ${MAX_LAYERS} are published.`]);
  let cells = 0;
  return real.map((c, i) => {
    const table = readOne(gpkg, c, what, cells, bytes);
    cells += table.count * Math.max(table.fields.length, 1);
    return { name: c.table_name, table: i === 0 ? { ...table, notes: [...notes, ...table.notes] } : table };
  });
}

function readOne(
  gpkg: GeoPackage,
  c: Content,
  what: string,
  cellsBefore: number,
  bytes: number,
): Omit<NamedTable["table"], "notes"> & { notes: string[] } {
  const schema = gpkg.schema(c.table_name);
  if (!schema) throw badRequest(what, [`The GeoPackage table ${shown(c.table_name)} cannot be read.`]);
  if (schema instanceof DatasetError) throw badRequest(what, [schema.message]);
  const notes: string[] = [];
  let geometryType: GeometryTypeName | undefined;
  let project: ((g: Geometry) => Geometry) | undefined;
  const g = schema.geometry;
  if (g) {
    const declared = gpkg.db
      .prepare("SELECT geometry_type_name FROM gpkg_geometry_columns WHERE table_name = ?")
      .get(c.table_name) as { geometry_type_name: string } | undefined;
    const type = (declared?.geometry_type_name ?? "").toUpperCase();
    if (!SIMPLE_TYPES.has(type))
      throw badRequest(what, [
        `The GeoPackage table ${shown(c.table_name)} holds ${shown(type)} geometry, which a hosted layer cannot hold (points, lines or polygons).`,
      ]);
    geometryType = type as GeometryTypeName;
    if (g.srid !== 0 && g.srid !== WGS84) {
      const definition = gpkg.definitionOf(g.srid);
      if (!hasCrs(g.srid) && !(definition && registerCrs(g.srid, definition)))
        throw badRequest(what, [
          `The GeoPackage table ${shown(c.table_name)} is in spatial reference ${g.srid}, which no projection library knows.`,
        ]);
      const t = transformer(g.srid, WGS84, { from: "the table's spatial reference", to: "WGS 84" });
      project = (geometry) => mapPositions(geometry, t);
    } else if (g.srid === 0) {
      notes.push(`${shown(c.table_name)} has an undefined coordinate system: its coordinates are kept as WGS 84.`);
    }
  }
  const source = schema.fields.filter((f) => f.type !== "esriFieldTypeOID" && KINDS[f.type] !== undefined);
  const skipped = schema.fields.length - 1 - source.length;
  if (skipped > 0) notes.push(`${skipped} field(s) of ${shown(c.table_name)} hold blobs or other types: left out.`);
  if (source.length > MAX_FIELDS)
    throw badRequest(what, [
      `The GeoPackage table ${shown(c.table_name)} has ${source.length} fields; a layer holds at most ${MAX_FIELDS}.`,
    ]);
  const names = fieldNames(
    source.map((f) => f.name),
    notes,
  );
  const count = (gpkg.db.prepare(`SELECT count(*) AS n FROM ${quote(c.table_name)}`).get() as unknown as { n: number })
    .n;
  checkFileValues(cellsBefore + count * Math.max(source.length, 1), bytes, what, {
    holds: "The GeoPackage has",
    of: "the file",
  });
  const kinds = source.map((f) => KINDS[f.type] as FieldKind);
  const columns = [schema.objectIdField, ...(g ? [g.column] : []), ...source.map((f) => f.column)];
  const statement = gpkg.db.prepare(
    `SELECT ${columns.map(quote).join(", ")} FROM ${quote(c.table_name)} ORDER BY ${quote(schema.objectIdField)}`,
  );
  statement.setReturnArrays(true);
  const offset = g ? 2 : 1;
  /** A stored row as the layer keeps it; `seen` learns what could not be kept. */
  const rowOf = (
    row: unknown[],
    seen?: { unreadable: number; cut: number; longest: number[]; wide: boolean[] },
  ): GeoPackageRow => {
    const id = Number(row[0]);
    let geometry: Geometry | null = null;
    if (g) {
      const blob = row[1];
      if (blob instanceof Uint8Array) {
        try {
          geometry = decodeGeoPackageGeometry(blob).geometry ?? null;
          if (geometry && !fitsLayer(geometryType as GeometryTypeName, geometry)) throw new Error("mixed");
          if (geometry && project) geometry = project(geometry);
        } catch {
          if (seen) seen.unreadable++;
          geometry = null;
        }
      }
    }
    const values: Record<string, string | number | Date | null> = Object.create(null);
    for (let i = 0; i < kinds.length; i++) {
      const v = cellOf(row[i + offset], kinds[i] as FieldKind);
      // An integer field of a GeoPackage may hold 64-bit values (its INTEGER is), an Integer field 32 bits: a field
      // with a value past them (or a fraction, which SQLite lets an INTEGER column hold) is published as a Double, as
      // a CSV's is.
      if (
        seen &&
        kinds[i] === "integer" &&
        typeof v === "number" &&
        !(Number.isInteger(v) && v >= -(2 ** 31) && v < 2 ** 31)
      )
        seen.wide[i] = true;
      if (typeof v === "string" && seen) {
        seen.longest[i] = Math.max(seen.longest[i] as number, Math.min(v.length, MAX_TEXT));
        if (v.length > MAX_TEXT) seen.cut++;
      }
      values[names[i] as string] = typeof v === "string" && v.length > MAX_TEXT ? v.slice(0, MAX_TEXT) : v;
    }
    return { ...(Number.isSafeInteger(id) && id > 0 ? { id } : {}), values, geometry };
  };
  // A first reading learns the text fields' lengths and what cannot be kept; each rows() reads the table again.
  const seen = { unreadable: 0, cut: 0, longest: source.map(() => 0), wide: source.map(() => false) };
  for (const row of statement.iterate() as Iterable<unknown[]>) rowOf(row, seen);
  if (seen.unreadable > 0)
    notes.push(
      `${seen.unreadable} geometr(ies) of ${shown(c.table_name)} could not be read or are not of its declared type: kept without geometry.`,
    );
  if (seen.cut > 0) notes.push(`${seen.cut} value(s) longer than ${MAX_TEXT} characters were cut.`);
  const widened = names.filter((_, i) => seen.wide[i]);
  if (widened.length > 0)
    notes.push(
      `${widened.length} integer field(s) of ${shown(c.table_name)} hold values past 32 bits (an Integer's): published as Double: ${widened.slice(0, 10).join(", ")}${widened.length > 10 ? ", …" : ""}.`,
    );
  const fields: TableField[] = source.map((f, i) => ({
    name: names[i] as string,
    alias: f.alias,
    kind: seen.wide[i] ? "double" : (KINDS[f.type] as FieldKind),
    length: Math.max(f.length ?? 0, seen.longest[i] as number),
  }));
  return {
    fields,
    count,
    async *rows() {
      for (const row of statement.iterate() as Iterable<unknown[]>) yield rowOf(row);
    },
    ...(geometryType ? { geometryType } : {}),
    notes,
  };
}

/** A cell as its field keeps it: dates read as GeoPackage writes them (ISO 8601, UTC), blobs and bad values as null. */
function cellOf(value: unknown, kind: FieldKind): string | number | Date | null {
  if (value === null || value === undefined || value instanceof Uint8Array) return null;
  if (kind === "integer" || kind === "double") {
    const n = typeof value === "bigint" ? Number(value) : Number(value);
    return typeof value === "string" && value.trim() === "" ? null : Number.isFinite(n) ? n : null;
  }
  if (kind === "date") {
    const text = String(value);
    const ms = Date.parse(/T|\s/.test(text) && !/(Z|[+-]\d{2}:?\d{2})$/.test(text) ? `${text}Z` : text);
    return Number.isNaN(ms) ? null : new Date(ms);
  }
  return typeof value === "string" ? value : String(value);
}
