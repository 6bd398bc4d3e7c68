// What an uploaded CSV or GeoJSON file holds, read as a stream and never whole: a first reading learns its fields
// (names made safe, types inferred from every value), its geometry (CSV: points from the latitude and longitude
// columns found; GeoJSON: its features' geometry) and what cannot be kept, counted; each later reading (`rows()`)
// makes its rows one at a time. `content/features/analyze` answers the first as publishParameters; publishing
// writes the rows of the second into the layer's store, so what analyze showed is what is published.
import { pipeline } from "node:stream";
import type { Geometry } from "geojson";
import { parse } from "csv-parse";
import { parser as jsonParser } from "stream-json";
import Assembler from "stream-json/assembler.js";
import { ApiError, badRequest } from "#shared/errors.ts";
import type { GeometryTypeName, GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import type { FileSource } from "#shared/hosted/file-source.ts";

/** The most columns a file may have (ArcGIS stops well below SQLite's 2,000). */
export const MAX_FIELDS = 1000;
/** The longest text a field keeps; longer values are cut there, and counted. */
export const MAX_TEXT = 64_000;
/** How deep a GeoJSON file may nest (geometry and properties); a deeper file is refused. */
const MAX_DEPTH = 64;
/**
 * The longest string, number or key a GeoJSON file may hold, in characters: one is held whole while it is read (a
 * text value is then cut at MAX_TEXT), so a file of one endless string must not fill the function's memory.
 */
export const MAX_JSON_TOKEN = 16 * 1024 * 1024;
/**
 * Values (rows × fields) a file may make per byte of it, beyond MIN_VALUES. Every value is a cell written (a NULL
 * for a field a row lacks), so a few bytes of short rows under a thousand-column header must not become billions
 * of them: a file whose rows carry their values spends at least a byte on each (its delimiter), and this leaves
 * room for sparse GeoJSON properties. What a file may make thus grows with its size, which the item file limit
 * (MAX_ITEM_FILE_MB) bounds, and never with what a parser keeps in memory (nothing but the row at hand).
 */
export const VALUES_PER_BYTE = 4;
/** The values any file may make, however small (a thousand fields of three thousand rows). */
export const MIN_VALUES = 3_000_000;

/** The most values a file of `bytes` bytes may make. */
export const maxValues = (bytes: number) => Math.max(MIN_VALUES, VALUES_PER_BYTE * bytes);

/** Refuses a file whose rows × fields pass what its size allows (checked as rows are counted, so it stops early). */
export function checkValues(rows: number, fields: number, bytes: number, what: string): void {
  const most = maxValues(bytes);
  if (rows * fields > most)
    throw badRequest(what, [
      `The file has ${rows} rows of ${fields} fields: at most ${most.toLocaleString("en")} values are published from a file of ${bytes.toLocaleString("en")} bytes (${VALUES_PER_BYTE} a byte, and ${MIN_VALUES.toLocaleString("en")} from any file).`,
    ]);
}

/**
 * The same bound over every layer of one file (the shapefiles of a zip, the tables of a GeoPackage), checked as
 * each layer is read so a file past it is refused before the rest is: `holds` opens the message ("The GeoPackage
 * has") and `of` says whose bytes count ("the file").
 */
export function checkFileValues(
  values: number,
  bytes: number,
  what: string,
  said: { holds: string; of: string },
): void {
  const most = maxValues(bytes);
  if (values > most)
    throw badRequest(what, [
      `${said.holds} more than ${most.toLocaleString("en")} values: at most ${VALUES_PER_BYTE} a byte of ${said.of} are published (and ${MIN_VALUES.toLocaleString("en")} from any file).`,
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
  /** How many rows the file holds (counted by the first reading). */
  readonly count: number;
  /**
   * The rows, read again from the file at each call, one at a time: each row's values by field name, and its
   * geometry (in WGS 84) or null. Nothing but the row at hand is held.
   */
  rows(): AsyncIterable<GeoPackageRow>;
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
export const RESERVED = new Set([
  "fid",
  "objectid",
  "geom",
  "shape",
  "shape_length",
  "shape_area",
  // The global id and editor-tracking fields the server adds to a hosted layer (shared/hosted/tracking.ts).
  "globalid",
  "creationdate",
  "creator",
  "editdate",
  "editor",
]);

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
  /** Values longer than MAX_TEXT (only text is ever that long): each is cut when kept. */
  cut = 0;
  /** GeoJSON: its values are typed already (a string "007" is text); CSV: every value is text to be read. */
  readonly #typed: boolean;

  constructor(typed = false) {
    this.#typed = typed;
  }

  see(value: unknown): void {
    if (value === null || value === undefined || value === "") return;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (text.length > MAX_TEXT) this.cut++;
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
  // A plain day (the common case, once per value in each reading) is made from its numbers, not parsed as text.
  if (text.length === 10 && text.charCodeAt(4) === 45 && text.charCodeAt(7) === 45) {
    const y = Number(text.slice(0, 4));
    const m = Number(text.slice(5, 7));
    const d = Number(text.slice(8, 10));
    if (!(m >= 1 && m <= 12 && d >= 1 && d <= 31)) return undefined;
    // setUTCFullYear, not Date.UTC: a year below 100 stays that year. It rolls 2024-02-30 over to March: a day
    // that does not exist is no date.
    const ms = new Date(0).setUTCFullYear(y, m - 1, d);
    return new Date(ms).getUTCDate() === d ? new Date(ms) : undefined;
  }
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

/** A CSV file's records, parsed as they are read (csv-parse's streaming parser), a read error a 400. */
async function* csvRecords(source: FileSource, delimiter: string, what: string): AsyncGenerator<string[]> {
  const parser = parse({
    delimiter,
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: 1024 * 1024,
  });
  // Either end failing (or the reader stopping early: analyze reads ten rows) ends both.
  pipeline(await source.stream(), parser, () => undefined);
  try {
    for await (const record of parser) yield record as string[];
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // The parser's errors (CsvError, code CSV_…) are the file's; any other (the store failing to give the file) is
    // mapgate's, answered without its detail.
    if (!String((err as { code?: unknown }).code ?? "").startsWith("CSV_")) throw err;
    throw badRequest(what, [`The CSV file could not be read: ${(err as Error).message.slice(0, 200)}`]);
  } finally {
    parser.destroy();
  }
}

/**
 * A CSV file's table, read twice and never whole: first to learn its header, its fields' kinds and what cannot be
 * kept; then, at each `rows()`, to make its rows. The first line names the columns; points come from the latitude
 * and longitude columns when both are found (given, or known by name), and a row whose coordinates are missing or
 * out of range keeps its attributes without a point (counted in `notes`). Without such columns it is a table.
 */
export async function csvTable(
  source: FileSource,
  what: string,
  given: { latitude?: string | undefined; longitude?: string | undefined; delimiter?: string | undefined } = {},
): Promise<Table> {
  const delimiter = given.delimiter ?? delimiterOf(await source.head(64 * 1024));
  let header: string[] | undefined;
  let names: string[] = [];
  let kinds: KindOf[] = [];
  let lat: number | undefined;
  let lon: number | undefined;
  let located = false;
  let count = 0;
  let unlocated = 0;
  const notes: string[] = [];
  for await (const record of csvRecords(source, delimiter, what)) {
    if (!header) {
      header = record;
      if (header.length > MAX_FIELDS)
        throw badRequest(what, [`The CSV file has ${header.length} columns; a layer holds at most ${MAX_FIELDS}.`]);
      names = fieldNames(header, notes);
      const columns = header;
      const byName = (wanted: string | undefined) => {
        if (wanted === undefined || wanted === "") return undefined;
        const i = columns.findIndex((h, j) => h === wanted || names[j] === wanted);
        if (i < 0) throw badRequest(what, [`The CSV file has no column '${wanted.slice(0, 64)}'.`]);
        return i;
      };
      lat = byName(given.latitude) ?? columnNamed(header, LATITUDE);
      lon = byName(given.longitude) ?? columnNamed(header, LONGITUDE);
      located = lat !== undefined && lon !== undefined && lat !== lon;
      kinds = header.map(() => new KindOf());
      continue;
    }
    count++;
    checkValues(count, header.length, source.size, what);
    const n = Math.min(record.length, kinds.length);
    for (let i = 0; i < n; i++) (kinds[i] as KindOf).see(record[i]);
    if (located && pointOf(record, lat as number, lon as number) === null) unlocated++;
  }
  if (!header || header.length === 0) throw badRequest(what, ["The CSV file has no header line naming its columns."]);
  const fields = fieldsOf(header, names, kinds);
  if (unlocated > 0)
    notes.push(`${unlocated} row(s) had no coordinates that parse as a latitude and longitude: kept without a point.`);
  const cut = kinds.reduce((n, k) => n + k.cut, 0);
  if (cut > 0) notes.push(`${cut} value(s) longer than ${MAX_TEXT} characters were cut.`);
  const columns = header;
  return {
    fields,
    count,
    async *rows() {
      const ignored = { count: 0 };
      let first = true;
      for await (const record of csvRecords(source, delimiter, what)) {
        if (first) {
          first = false;
          continue;
        }
        // No prototype: a field's name is only ever a key (and a short row's missing cells stay absent: NULL).
        const values: Record<string, string | number | Date | null> = Object.create(null);
        const n = Math.min(record.length, fields.length);
        for (let i = 0; i < n; i++) {
          const f = fields[i] as TableField;
          values[f.name] = cellOf(record[i], f.kind, ignored);
        }
        yield located ? { values, geometry: pointOf(record, lat as number, lon as number) } : { values };
      }
    },
    delimiter,
    ...(located
      ? {
          geometryType: "POINT" as const,
          location: { latitude: columns[lat as number] as string, longitude: columns[lon as number] as string },
        }
      : {}),
    notes,
  };
}

/** A row's point from its latitude and longitude cells, or null when they do not parse or are out of range. */
function pointOf(record: readonly string[], lat: number, lon: number): Geometry | null {
  const y = Number(record[lat]?.trim() || Number.NaN);
  const x = Number(record[lon]?.trim() || Number.NaN);
  if (!Number.isFinite(x) || !Number.isFinite(y) || Math.abs(y) > 90 || Math.abs(x) > 180) return null;
  return { type: "Point", coordinates: [x, y] };
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

/** A GeoJSON file's top-level members that say what it is (a FeatureCollection's, or a single Feature's own). */
interface GeoJsonTop {
  type?: unknown;
  crs?: unknown;
  properties?: unknown;
  geometry?: unknown;
}
const TOP_MEMBERS = new Set(["type", "crs", "properties", "geometry"]);

type JsonToken = { name: string; value?: unknown };

/**
 * A GeoJSON file's features, one at a time, from a streaming JSON parser (stream-json): the members of the top
 * object's `features` array are assembled and yielded each as it ends, the members naming the file's kind (`type`,
 * `crs`, a lone Feature's `properties` and `geometry`) are kept in `top`, and anything else is skipped unread. So
 * one feature is in memory at a time, nesting is counted as it opens (MAX_DEPTH), and a string, number or key is
 * bounded as its chunks arrive (MAX_JSON_TOKEN). A lone Feature is yielded after its file ends.
 */
async function* geoJsonFeatures(source: FileSource, what: string, top: GeoJsonTop): AsyncGenerator<unknown> {
  const tokens = jsonParser.asStream({ packValues: true, streamValues: true });
  pipeline(await source.stream(), tokens, () => undefined);
  let depth = 0;
  let key: string | undefined;
  /** The top-level member, or the feature, being assembled. */
  let value: Assembler | undefined;
  let inFeatures = false;
  let chars = 0;
  try {
    for await (const token of tokens as AsyncIterable<JsonToken>) {
      const name = token.name;
      if (name === "stringChunk" || name === "numberChunk") {
        chars += (token.value as string).length;
        if (chars > MAX_JSON_TOKEN)
          throw badRequest(what, [
            `The GeoJSON file holds a string, number or name longer than ${MAX_JSON_TOKEN.toLocaleString("en")} characters.`,
          ]);
        continue;
      }
      if (name === "startString" || name === "startNumber" || name === "startKey") {
        chars = 0;
        continue;
      }
      if (name === "endString" || name === "endNumber" || name === "endKey" || name === "whitespace") continue;
      const opens = name === "startObject" || name === "startArray";
      if (opens && ++depth > MAX_DEPTH)
        throw badRequest(what, [`The GeoJSON file nests more than ${MAX_DEPTH} levels deep.`]);
      if (depth === 0 || (depth === 1 && opens && key === undefined)) {
        // The document itself: an object, or no GeoJSON this reader knows.
        if (name !== "startObject")
          throw badRequest(what, ["The GeoJSON file is neither a FeatureCollection nor a Feature."]);
        continue;
      }
      if (value) {
        value.consume(token as Parameters<Assembler["consume"]>[0]);
        if (name === "endObject" || name === "endArray") depth--;
        if (value.done) {
          const done = value.current;
          value = undefined;
          if (inFeatures) yield done;
          else if (key !== undefined) (top as Record<string, unknown>)[key] = done;
          if (!inFeatures) key = undefined;
        }
        continue;
      }
      if (name === "endObject" || name === "endArray") {
        depth--;
        if (inFeatures && depth === 1) {
          inFeatures = false;
          key = undefined;
        }
        continue;
      }
      if (depth === 1 && name === "keyValue") {
        key = token.value as string;
        continue;
      }
      if (inFeatures) {
        // A member of `features`: assembled (an object), or yielded as it is (for the caller to refuse).
        value = new Assembler();
        value.consume(token as Parameters<Assembler["consume"]>[0]);
        if (value.done) {
          yield value.current;
          value = undefined;
        }
        continue;
      }
      if (key === "features" && name === "startArray" && depth === 2 && top.type !== "Feature") {
        inFeatures = true;
        continue;
      }
      if (key !== undefined && TOP_MEMBERS.has(key) && (depth === 1 || (opens && depth === 2))) {
        value = new Assembler();
        value.consume(token as Parameters<Assembler["consume"]>[0]);
        if (value.done) {
          (top as Record<string, unknown>)[key] = value.current;
          value = undefined;
          key = undefined;
        }
        continue;
      }
      // Another member: skipped, its nesting still counted.
      if (!opens && depth === 1) key = undefined;
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    // The parser's errors ("Parser …") are the file's; any other (the store failing to give the file) is mapgate's.
    if (!(err instanceof Error && err.message.startsWith("Parser "))) throw err;
    throw badRequest(what, ["The GeoJSON file is not valid JSON."]);
  } finally {
    tokens.destroy();
  }
  if (top.type === "Feature") yield { type: "Feature", properties: top.properties, geometry: top.geometry };
}
/** A feature checked as a layer's row must be: a Feature whose properties are an object or null. */
function featureOf(f: unknown, what: string): { properties?: Record<string, unknown> | null; geometry?: unknown } {
  const feature = f as { type?: unknown; properties?: unknown; geometry?: unknown };
  if (feature === null || typeof feature !== "object" || feature.type !== "Feature")
    throw badRequest(what, ["Every member of 'features' must be a Feature."]);
  const props = feature.properties;
  if (props !== null && props !== undefined && (typeof props !== "object" || Array.isArray(props)))
    throw badRequest(what, ["A feature's 'properties' must be an object or null."]);
  return feature as { properties?: Record<string, unknown> | null; geometry?: unknown };
}

/**
 * A GeoJSON file's table, read twice and never whole: a FeatureCollection (or one Feature) in WGS 84 (RFC 7946).
 * Properties become fields (a property holding an object or array is kept as its JSON text); features without
 * geometry keep their properties.
 */
export async function geoJsonTable(source: FileSource, what: string): Promise<Table> {
  const top: GeoJsonTop = {};
  const columns: string[] = [];
  const index = new Map<string, number>();
  const kinds: KindOf[] = [];
  const seen = new Set<GeometryTypeName>();
  let count = 0;
  for await (const f of geoJsonFeatures(source, what, top)) {
    const feature = featureOf(f, what);
    count++;
    for (const [k, v] of Object.entries(feature.properties ?? {})) {
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
    const g = feature.geometry as { type?: unknown; coordinates?: unknown } | null | undefined;
    if (g === null || g === undefined) continue;
    const type = FAMILIES[String(g.type)];
    if (!type)
      throw badRequest(what, [
        `A feature's geometry has type '${String(g.type).slice(0, 32)}', which a layer cannot hold.`,
      ]);
    if (!wellFormed(type, g.coordinates))
      throw badRequest(what, [
        `A feature's ${String(g.type)} does not have the coordinates its type needs (RFC 7946 §3.1).`,
      ]);
    seen.add(type);
  }
  if (top.type !== "FeatureCollection" && top.type !== "Feature")
    throw badRequest(what, ["The GeoJSON file is neither a FeatureCollection nor a Feature."]);
  // RFC 7946 coordinates are WGS 84 longitude, latitude; the old `crs` member may name only that.
  const crs = top.crs as { properties?: { name?: unknown } } | null | undefined;
  if (crs !== undefined && crs !== null) {
    const name = String(crs.properties?.name ?? "");
    if (!/^(urn:ogc:def:crs:OGC:1\.3:CRS84|urn:ogc:def:crs:EPSG::4326|EPSG:4326|CRS84)$/i.test(name))
      throw badRequest(what, [
        `The GeoJSON file names the coordinate system '${name.slice(0, 64)}': give its coordinates in WGS 84 longitude and latitude (RFC 7946).`,
      ]);
  }
  checkValues(count, columns.length, source.size, what);
  const geometryType = layerGeometryType(seen, what);
  const notes: string[] = [];
  const names = fieldNames(columns, notes);
  const fields = fieldsOf(columns, names, kinds);
  const cut = kinds.reduce((n, k) => n + k.cut, 0);
  if (cut > 0) notes.push(`${cut} value(s) longer than ${MAX_TEXT} characters were cut.`);
  return {
    fields,
    count,
    async *rows() {
      const ignored = { count: 0 };
      for await (const f of geoJsonFeatures(source, what, {})) {
        const feature = featureOf(f, what);
        const values: Record<string, string | number | Date | null> = Object.create(null);
        // Only the feature's own properties: one it lacks stays absent (NULL), so short features cost what they hold.
        for (const [key, value] of Object.entries(feature.properties ?? {})) {
          const field = fields[index.get(key) ?? -1];
          if (field) values[field.name] = cellOf(value, field.kind, ignored);
        }
        yield { values, geometry: (feature.geometry as Geometry | null | undefined) ?? null };
      }
    },
    ...(geometryType ? { geometryType } : {}),
    notes,
  };
}
