// What an uploaded CSV or GeoJSON file holds, read once: its fields (names made safe, types inferred from every
// value), its rows, its geometry (CSV: points from the latitude and longitude columns found; GeoJSON: its features'
// geometry), and what could not be read, counted. `content/features/analyze` answers this as publishParameters;
// publishing writes the same rows into the layer's GeoPackage, so what analyze showed is what is published.
import type { Geometry } from "geojson";
import { parse } from "csv-parse/sync";
import { badRequest } from "#shared/http/errors.ts";
import type { ColumnSpec, GeometryTypeName, GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";

/** The most columns a file may have (ArcGIS stops well below SQLite's 2,000). */
export const MAX_FIELDS = 1000;
/** The longest text a field keeps; longer values are cut there, and counted. */
export const MAX_TEXT = 64_000;
/** How deep a GeoJSON file may nest (geometry and properties); a deeper file is refused. */
const MAX_DEPTH = 64;
/**
 * The most cells (rows × fields) a file may make: every cell is a value kept and written, so a few bytes of short
 * rows under a thousand-column header must not become a billion of them.
 */
export const MAX_CELLS = 3_000_000;

export function checkCells(rows: number, fields: number, what: string): void {
  if (rows * fields > MAX_CELLS)
    throw badRequest(what, [
      `The file has ${rows} rows of ${fields} fields: at most ${MAX_CELLS.toLocaleString("en")} values are published from one file.`,
    ]);
}

/** Names SQLite and GeoPackage keep for their own tables: a service (its table) may not take them. */
export const RESERVED_TABLE = /^(gpkg_|rtree_|sqlite_)/i;

export type FieldKind = "integer" | "double" | "date" | "string";

export interface TableField {
  /** The field's name in the layer: letters, digits and underscores, starting with a letter, unique. */
  readonly name: string;
  /** The column's name in the file, as written there (the field's alias). */
  readonly alias: string;
  readonly kind: FieldKind;
  /** The longest value, for text fields. */
  readonly length: number;
}

export interface Table {
  readonly fields: readonly TableField[];
  /** Each row's values by field name, and its geometry (in WGS 84) or null. */
  readonly rows: readonly GeoPackageRow[];
  /** Absent: a table without geometry. */
  readonly geometryType?: GeometryTypeName;
  /** CSV only: the delimiter its lines were split by. */
  readonly delimiter?: string;
  /** CSV only: the columns the points were made from. */
  readonly location?: { readonly latitude: string; readonly longitude: string };
  /** What was read but not kept, in words (rows without usable coordinates, names changed, values cut). */
  readonly notes: readonly string[];
}

/** A table and the name its layer takes from its source (a shapefile's, a GeoPackage table's). */
export interface NamedTable {
  readonly name: string;
  readonly table: Table;
}

/** Whether a geometry fits a layer of `type`: its own type, or the single kind of a multi layer's. */
export function fitsLayer(type: GeometryTypeName, geometry: Geometry): boolean {
  const own = geometry.type.toUpperCase();
  return own === type || (type.startsWith("MULTI") && `MULTI${own}` === type);
}

/** Names a GeoPackage and ArcGIS clients keep for themselves: a column named so is renamed (`OBJECTID_1`). */
export const RESERVED = new Set(["fid", "objectid", "geom", "shape", "shape_length", "shape_area", "globalid"]);

/**
 * Field names as ArcGIS makes them from a file's columns: every character but letters, digits and `_` becomes
 * `_`, a name starting with a digit gets `F` before it, an empty one is `Field<n>`, at most 64 characters, and a
 * reserved or repeated name gets `_1`, `_2`… (case-insensitively). Linear in the names' total length.
 */
export function fieldNames(columns: readonly string[], notes: string[]): string[] {
  const taken = new Set<string>();
  const renamed: string[] = [];
  const out = columns.map((raw, i) => {
    let base = raw
      .trim()
      .replace(/[^A-Za-z0-9_]/g, "_")
      .slice(0, 60);
    if (base === "" || /^_+$/.test(base)) base = `Field${i + 1}`;
    // A letter first (`__proto__` would otherwise name an object's prototype, `2nd` no SQL identifier).
    if (!/^[A-Za-z]/.test(base)) base = `F${base}`;
    let name = base;
    for (let n = 1; RESERVED.has(name.toLowerCase()) || taken.has(name.toLowerCase()); n++) name = `${base}_${n}`;
    taken.add(name.toLowerCase());
    if (name !== raw) renamed.push(`'${raw.slice(0, 64)}' → ${name}`);
    return name;
  });
  if (renamed.length > 0) {
    const shown = renamed.slice(0, 20).join(", ");
    notes.push(
      `Renamed ${renamed.length} field(s) to names a layer can hold: ${shown}${renamed.length > 20 ? ", …" : ""}.`,
    );
  }
  return out;
}

const INTEGER = /^[+-]?\d{1,15}$/;
/** More significant digits than a double keeps: such a number stays text rather than change. */
const TOO_PRECISE = /\d{16,}/;
const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d{1,3})?$/;
const DATE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$/;

/** The narrowest kind every non-empty value of a column fits (text when any value fits none). */
class KindOf {
  #kind: FieldKind | undefined;
  length = 0;
  /** GeoJSON: its values are typed already (a string "007" is text); CSV: every value is text to be read. */
  readonly #typed: boolean;

  constructor(typed = false) {
    this.#typed = typed;
  }

  see(value: unknown): void {
    if (value === null || value === undefined || value === "") return;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    this.length = Math.max(this.length, Math.min(text.length, MAX_TEXT));
    if (this.#kind === "string") return;
    const kind = kindOfValue(value, this.#typed);
    if (this.#kind === undefined || this.#kind === kind) this.#kind = kind;
    else if ((this.#kind === "integer" && kind === "double") || (this.#kind === "double" && kind === "integer"))
      this.#kind = "double";
    else this.#kind = "string";
  }

  get kind(): FieldKind {
    return this.#kind ?? "string";
  }
}

function kindOfValue(value: unknown, typed: boolean): FieldKind {
  if (typeof value === "number") return Number.isSafeInteger(value) && Math.abs(value) < 2 ** 31 ? "integer" : "double";
  if (typeof value !== "string" || typed) return "string";
  const t = value.trim();
  if (TOO_PRECISE.test(t)) return "string";
  if (INTEGER.test(t)) return Math.abs(Number(t)) < 2 ** 31 ? "integer" : "double";
  if (NUMBER.test(t) && Number.isFinite(Number(t))) return "double";
  if (DATE.test(t) && dateOf(t) !== undefined) return "date";
  return "string";
}

/**
 * A date or date-time as written (ISO 8601): one without an offset is UTC (never the reading machine's zone), and
 * a day that does not exist (2024-02-30) is no date rather than another day.
 */
function dateOf(text: string): Date | undefined {
  const iso = text.replace(" ", "T");
  const withZone = /T/.test(iso) && !/(Z|[+-]\d{2}:?\d{2})$/.test(iso) ? `${iso}Z` : iso;
  const ms = Date.parse(withZone);
  if (Number.isNaN(ms)) return undefined;
  // The calendar day must survive the round trip (Date.parse rolls 2024-02-30 over to March).
  return new Date(ms).toISOString().slice(0, 10) === iso.slice(0, 10) || /[+-]\d{2}:?\d{2}$/.test(iso)
    ? new Date(ms)
    : undefined;
}

/** A value as its field keeps it (numbers as numbers, dates as Dates, anything else as text, cut at MAX_TEXT). */
function cellOf(value: unknown, kind: FieldKind, cut: { count: number }): string | number | Date | null {
  if (value === null || value === undefined || value === "") return null;
  if (kind === "integer" || kind === "double") return typeof value === "number" ? value : Number(String(value).trim());
  if (kind === "date") return dateOf(String(value).trim()) ?? null;
  const text = typeof value === "string" ? value : JSON.stringify(value);
  if (text.length <= MAX_TEXT) return text;
  cut.count++;
  return text.slice(0, MAX_TEXT);
}

/** The fields of a file's columns: each column's safe name, its own name as alias, and what its values were. */
function fieldsOf(columns: readonly string[], names: readonly string[], kinds: readonly KindOf[]): TableField[] {
  return columns.map((alias, i) => ({
    name: names[i] as string,
    alias,
    kind: (kinds[i] as KindOf).kind,
    length: (kinds[i] as KindOf).length,
  }));
}

/**
 * The GeoPackage column type of each kind. An integer kind holds 32-bit values (what esriFieldTypeInteger is):
 * GeoPackage's 32-bit type is MEDIUMINT (its INTEGER is 64-bit, which GDAL reads as Integer64).
 */
export const COLUMN_TYPES: Readonly<Record<FieldKind, ColumnSpec["type"]>> = {
  integer: "MEDIUMINT",
  double: "DOUBLE",
  date: "DATETIME",
  string: "TEXT",
};

const LATITUDE = ["latitude", "lat", "y", "ycoord", "y_coord", "point_y", "lat_dd", "latitude_dd", "ycenter"];
const LONGITUDE = ["longitude", "lon", "lng", "long", "x", "xcoord", "x_coord", "point_x", "long_dd", "lon_dd"];

/** The first column whose name (case-insensitively, spaces as `_`) is one of `names`, in the order of `names`. */
function columnNamed(columns: readonly string[], names: readonly string[]): number | undefined {
  const normalized = columns.map((c) => c.trim().toLowerCase().replace(/\s+/g, "_"));
  for (const n of names) {
    const i = normalized.indexOf(n);
    if (i >= 0) return i;
  }
  return undefined;
}

/**
 * A CSV file's table: the first line names the columns; points come from the latitude and longitude columns when
 * both are found (given, or known by name), and a row whose coordinates are missing or out of range keeps its
 * attributes without a point (counted in `notes`). Without such columns it is a table (no geometry).
 */
export function csvTable(
  bytes: Buffer,
  what: string,
  given: { latitude?: string | undefined; longitude?: string | undefined; delimiter?: string | undefined } = {},
): Table {
  let records: string[][];
  const delimiter = given.delimiter ?? delimiterOf(bytes);
  try {
    records = parse(bytes, {
      delimiter,
      bom: true,
      relax_column_count: true,
      skip_empty_lines: true,
      max_record_size: 1024 * 1024,
    }) as string[][];
  } catch (err) {
    throw badRequest(what, [`The CSV file could not be read: ${(err as Error).message.slice(0, 200)}`]);
  }
  const [header, ...body] = records;
  if (!header || header.length === 0) throw badRequest(what, ["The CSV file has no header line naming its columns."]);
  if (header.length > MAX_FIELDS)
    throw badRequest(what, [`The CSV file has ${header.length} columns; a layer holds at most ${MAX_FIELDS}.`]);
  checkCells(body.length, header.length, what);
  const notes: string[] = [];
  const names = fieldNames(header, notes);
  const byName = (wanted: string | undefined) => {
    if (wanted === undefined || wanted === "") return undefined;
    const i = header.findIndex((h, j) => h === wanted || names[j] === wanted);
    if (i < 0) throw badRequest(what, [`The CSV file has no column '${wanted.slice(0, 64)}'.`]);
    return i;
  };
  const lat = byName(given.latitude) ?? columnNamed(header, LATITUDE);
  const lon = byName(given.longitude) ?? columnNamed(header, LONGITUDE);
  const located = lat !== undefined && lon !== undefined && lat !== lon;
  const kinds = header.map(() => new KindOf());
  for (const record of body) record.forEach((v, i) => kinds[i]?.see(v));
  const fields = fieldsOf(header, names, kinds);
  const cut = { count: 0 };
  let unlocated = 0;
  const rows: GeoPackageRow[] = body.map((record) => {
    // No prototype: a field's name is only ever a key (and a short row's missing cells stay absent: NULL).
    const values: Record<string, string | number | Date | null> = Object.create(null);
    record.forEach((v, i) => {
      const f = fields[i];
      if (f) values[f.name] = cellOf(v, f.kind, cut);
    });
    if (!located) return { values };
    const y = Number(record[lat]?.trim() || Number.NaN);
    const x = Number(record[lon]?.trim() || Number.NaN);
    if (!Number.isFinite(x) || !Number.isFinite(y) || Math.abs(y) > 90 || Math.abs(x) > 180) {
      unlocated++;
      return { values, geometry: null };
    }
    return { values, geometry: { type: "Point", coordinates: [x, y] } };
  });
  if (unlocated > 0)
    notes.push(`${unlocated} row(s) had no coordinates that parse as a latitude and longitude: kept without a point.`);
  if (cut.count > 0) notes.push(`${cut.count} value(s) longer than ${MAX_TEXT} characters were cut.`);
  return {
    fields,
    rows,
    delimiter,
    ...(located
      ? {
          geometryType: "POINT" as const,
          location: { latitude: header[lat] as string, longitude: header[lon] as string },
        }
      : {}),
    notes,
  };
}

/** How many array levels hold a type's positions: a Point's coordinates are a position, a Polygon's rings of them. */
const LEVELS: Readonly<Record<GeometryTypeName, number>> = {
  POINT: 0,
  MULTIPOINT: 1,
  LINESTRING: 1,
  MULTILINESTRING: 2,
  POLYGON: 2,
  MULTIPOLYGON: 3,
};

const isPosition = (p: unknown) =>
  Array.isArray(p) && p.length >= 2 && p.length <= 4 && p.every((n) => typeof n === "number" && Number.isFinite(n));

/** Whether coordinates nest as the type says, each position 2–4 finite numbers (linear in their size). */
function wellFormed(type: GeometryTypeName, coordinates: unknown): boolean {
  let level: unknown[] = [coordinates];
  for (let depth = LEVELS[type]; depth > 0; depth--) {
    const next: unknown[] = [];
    for (const a of level) {
      if (!Array.isArray(a)) return false;
      for (const b of a) next.push(b);
    }
    level = next;
  }
  return level.every(isPosition);
}

/** The delimiters a CSV may use: the given one, else the first line's most frequent of comma, semicolon, tab, bar. */
export const DELIMITERS = [",", ";", "\t", "|"] as const;

function delimiterOf(bytes: Buffer): string {
  const end = bytes.indexOf(0x0a);
  const first = bytes.subarray(0, end < 0 ? Math.min(bytes.length, 64 * 1024) : Math.min(end, 64 * 1024)).toString();
  let best = ",";
  let most = 0;
  for (const d of DELIMITERS) {
    const n = first.split(d).length - 1;
    if (n > most) [best, most] = [d, n];
  }
  return best;
}

const FAMILIES: Readonly<Record<string, GeometryTypeName>> = {
  Point: "POINT",
  MultiPoint: "MULTIPOINT",
  LineString: "LINESTRING",
  MultiLineString: "MULTILINESTRING",
  Polygon: "POLYGON",
  MultiPolygon: "MULTIPOLYGON",
};

/** One geometry type for the layer from its features' (a single and a multi type of one kind make the multi). */
function layerGeometryType(seen: ReadonlySet<GeometryTypeName>, what: string): GeometryTypeName | undefined {
  if (seen.size === 0) return undefined;
  const kinds = new Set([...seen].map((t) => t.replace(/^MULTI/, "")));
  if (kinds.size > 1) {
    throw badRequest(what, [
      `The GeoJSON file mixes geometry types (${[...seen].sort().join(", ")}): a layer holds one kind (points, lines or polygons). Split the file by geometry type.`,
    ]);
  }
  const [only] = seen;
  return seen.size === 1 ? only : (`MULTI${[...kinds][0]}` as GeometryTypeName);
}

/**
 * A GeoJSON file's table: a FeatureCollection (or one Feature) in WGS 84 (RFC 7946). Properties become fields (a
 * property holding an object or array is kept as its JSON text); features without geometry keep their properties.
 */
export function geoJsonTable(bytes: Buffer, what: string): Table {
  let doc: unknown;
  try {
    doc = JSON.parse(bytes.toString("utf8"));
  } catch {
    throw badRequest(what, ["The GeoJSON file is not valid JSON."]);
  }
  if (nestedDeeperThan(doc, MAX_DEPTH))
    throw badRequest(what, [`The GeoJSON file nests more than ${MAX_DEPTH} levels deep.`]);
  const top = doc as { type?: unknown; features?: unknown };
  const features: unknown[] =
    top?.type === "FeatureCollection" && Array.isArray(top.features)
      ? top.features
      : top?.type === "Feature"
        ? [top]
        : [];
  if (top?.type !== "FeatureCollection" && top?.type !== "Feature")
    throw badRequest(what, ["The GeoJSON file is neither a FeatureCollection nor a Feature."]);
  // RFC 7946 coordinates are WGS 84 longitude, latitude; the old `crs` member may name only that.
  const crs = (doc as { crs?: { properties?: { name?: unknown } } }).crs;
  if (crs !== undefined && crs !== null) {
    const name = String(crs.properties?.name ?? "");
    if (!/^(urn:ogc:def:crs:OGC:1\.3:CRS84|urn:ogc:def:crs:EPSG::4326|EPSG:4326|CRS84)$/i.test(name))
      throw badRequest(what, [
        `The GeoJSON file names the coordinate system '${name.slice(0, 64)}': give its coordinates in WGS 84 longitude and latitude (RFC 7946).`,
      ]);
  }
  const columns: string[] = [];
  const index = new Map<string, number>();
  const kinds: KindOf[] = [];
  const seen = new Set<GeometryTypeName>();
  for (const f of features) {
    const feature = f as { type?: unknown; properties?: unknown; geometry?: { type?: unknown } | null };
    if (feature?.type !== "Feature") throw badRequest(what, ["Every member of 'features' must be a Feature."]);
    const props = feature.properties;
    if (props !== null && props !== undefined && (typeof props !== "object" || Array.isArray(props)))
      throw badRequest(what, ["A feature's 'properties' must be an object or null."]);
    for (const [k, v] of Object.entries((props ?? {}) as Record<string, unknown>)) {
      let i = index.get(k);
      if (i === undefined) {
        if (columns.length >= MAX_FIELDS)
          throw badRequest(what, [
            `The features have more than ${MAX_FIELDS} properties; a layer holds at most ${MAX_FIELDS} fields.`,
          ]);
        i = columns.push(k) - 1;
        index.set(k, i);
        kinds.push(new KindOf(true));
      }
      kinds[i]?.see(v);
    }
    const g = feature.geometry;
    if (g === null || g === undefined) continue;
    const type = FAMILIES[String(g.type)];
    if (!type)
      throw badRequest(what, [
        `A feature's geometry has type '${String(g.type).slice(0, 32)}', which a layer cannot hold.`,
      ]);
    if (!wellFormed(type, (g as { coordinates?: unknown }).coordinates))
      throw badRequest(what, [
        `A feature's ${String(g.type)} does not have the coordinates its type needs (RFC 7946 §3.1).`,
      ]);
    seen.add(type);
  }
  checkCells(features.length, columns.length, what);
  const geometryType = layerGeometryType(seen, what);
  const notes: string[] = [];
  const names = fieldNames(columns, notes);
  const fields = fieldsOf(columns, names, kinds);
  const cut = { count: 0 };
  const rows: GeoPackageRow[] = features.map((f) => {
    const feature = f as { properties?: Record<string, unknown> | null; geometry?: Geometry | null };
    const values: Record<string, string | number | Date | null> = Object.create(null);
    // Only the feature's own properties: one it lacks stays absent (NULL), so short features cost what they hold.
    for (const [key, value] of Object.entries(feature.properties ?? {})) {
      const field = fields[index.get(key) ?? -1];
      if (field) values[field.name] = cellOf(value, field.kind, cut);
    }
    return { values, geometry: feature.geometry ?? null };
  });
  if (cut.count > 0) notes.push(`${cut.count} value(s) longer than ${MAX_TEXT} characters were cut.`);
  return { fields, rows, ...(geometryType ? { geometryType } : {}), notes };
}
