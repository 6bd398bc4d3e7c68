// What a zipped shapefile holds, as hosted layers: one layer per shapefile in the zip (as ArcGIS publishes them),
// each from its .shp (geometry, read with the `shapefile` package), .dbf (attributes, read here from the field
// descriptors and fixed-width records, so an empty date or number is no value rather than a made-up one) and .prj (its coordinate system, known to proj4 by EPSG code or by its WKT), with .cpg naming the
// attributes' encoding. Geometry is projected to WGS 84, as hosted layers keep it, and polygon rings turned as
// GeoJSON wants them (exterior counter-clockwise, holes clockwise).
import { createReadStream } from "node:fs";
import { type FileHandle, mkdtemp, open, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Geometry, Position } from "geojson";
import proj4 from "proj4";
import * as shapefile from "shapefile";
import type { GeometryTypeName, GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import { hasCrs, mapPositions, transformer, WGS84 } from "#shared/features/geometry/projection.ts";
import { orient } from "#shared/features/geometry/rings.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { extractZip } from "#shared/hosted/zip.ts";
import { type FileSource, withLocalCopy } from "#shared/hosted/file-source.ts";
import {
  checkFileValues,
  checkValues,
  type FieldKind,
  fieldNames,
  fitsLayer,
  MAX_FIELDS,
  type NamedTable,
  type Table,
  type TableField,
} from "#shared/hosted/tables.ts";

/** The most layers (shapefiles, GeoPackage tables) one file publishes. */
export const MAX_LAYERS = 32;
/**
 * The most work assembling polygons may take in one file, counted as the vertices of holes times the vertices of
 * the exterior rings they are tested against: a hole is placed in the exterior that contains it, which costs both
 * rings' sizes, so a crafted record of many rings would otherwise take time quadratic in its size.
 */
export const MAX_RING_WORK = 200_000_000;
/**
 * The most vertices the shapefiles of one zip may hold: what bounds the work of reading them, and the largest
 * shape held at a time (shapes are read one by one from the inflated files).
 */
export const MAX_VERTICES = 4_000_000;

const PART = /^(.*)\.(shp|dbf|prj|cpg|shx)$/i;
const shown = (name: string) => JSON.stringify(name.slice(0, 120));

/** Shape types (ESRI Shapefile Technical Description, 1998) by the layer geometry they make; 0 is a null shape. */
const SHAPE_TYPES: Readonly<Record<number, GeometryTypeName | null>> = {
  0: null,
  1: "POINT",
  11: "POINT",
  21: "POINT",
  8: "MULTIPOINT",
  18: "MULTIPOINT",
  28: "MULTIPOINT",
  3: "MULTILINESTRING",
  13: "MULTILINESTRING",
  23: "MULTILINESTRING",
  5: "MULTIPOLYGON",
  15: "MULTIPOLYGON",
  25: "MULTIPOLYGON",
};
const POLYGON_TYPES = new Set([5, 15, 25]);
const PARTS_TYPES = new Set([3, 13, 23, 5, 15, 25]);
const MULTIPOINT_TYPES = new Set([8, 18, 28]);

/** A file the zip held, inflated into the private temporary folder. */
interface Part {
  readonly path: string;
  readonly size: number;
}

/**
 * The zip's shapefiles, one table each, in the order of their names. The zip is copied to a private temporary file
 * and its entries inflated into a private temporary folder (on AWS the function's /tmp), both removed once `use` is
 * done: shapes and records are read from those files a record at a time, never whole.
 */
export async function shapefileTables<T>(
  source: FileSource,
  what: string,
  use: (tables: NamedTable[]) => Promise<T>,
): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), "mapgate-shapefile-"));
  try {
    const files = await withLocalCopy(source, "upload.zip", (path) => extractZip(path, dir, what));
    return await use(await tablesOf(files, what));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function tablesOf(files: Map<string, string>, what: string): Promise<NamedTable[]> {
  let dbfBytes = 0;
  const sets = new Map<string, { base: string; parts: Map<string, Part> }>();
  for (const [name, path] of files) {
    if (name.startsWith("__MACOSX/")) continue;
    const m = PART.exec(name);
    if (!m) continue;
    const base = m[1] as string;
    const key = base.toLowerCase();
    let set = sets.get(key);
    if (!set) sets.set(key, (set = { base, parts: new Map() }));
    const ext = (m[2] as string).toLowerCase();
    const { size } = await stat(path);
    set.parts.set(ext, { path, size });
    if (ext === "dbf") dbfBytes += size;
  }
  const shapefiles = [...sets.entries()].filter(([, s]) => s.parts.has("shp") || s.parts.has("dbf"));
  if (shapefiles.length === 0) throw badRequest(what, ["The zip file holds no shapefile (.shp and .dbf)."]);
  if (shapefiles.length > MAX_LAYERS)
    throw badRequest(what, [
      `The zip file holds ${shapefiles.length} shapefiles; at most ${MAX_LAYERS} are published.`,
    ]);
  shapefiles.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const out: NamedTable[] = [];
  let cells = 0;
  const vertices = { count: 0 };
  for (const [, { base, parts }] of shapefiles) {
    for (const ext of ["shp", "dbf", "prj"])
      if (!parts.has(ext))
        throw badRequest(what, [`The shapefile ${shown(base)} has no ${shown(`${base}.${ext}`)} in the zip file.`]);
    const table = await oneShapefile(base, parts, vertices, what);
    cells += table.count * Math.max(table.fields.length, 1);
    checkFileValues(cells, dbfBytes, what, { holds: "The shapefiles hold", of: "their .dbf files" });
    out.push({ name: base.split("/").at(-1) as string, table });
  }
  return out;
}

/** The most a .prj or .cpg may hold: they name a coordinate system or an encoding, in a few hundred bytes. */
const MAX_SMALL_PART = 64 * 1024;

/** A small part's bytes (.prj, .cpg); undefined when it is larger than any such file is. */
async function smallPart(part: Part | undefined): Promise<Buffer | undefined> {
  if (!part || part.size > MAX_SMALL_PART) return undefined;
  return readFile(part.path);
}

/**
 * A file read in order by positioned reads through one window (1 MiB, or the record asked for): what reads a .shp's
 * records and a .dbf's without holding either whole.
 */
class FileWindow {
  readonly #handle: FileHandle;
  readonly size: number;
  #start = 0;
  #bytes = Buffer.alloc(0);

  private constructor(handle: FileHandle, size: number) {
    this.#handle = handle;
    this.size = size;
  }

  static async open(part: Part): Promise<FileWindow> {
    return new FileWindow(await open(part.path, "r"), part.size);
  }

  /** `length` bytes from `at` (fewer at the file's end). */
  async bytes(at: number, length: number): Promise<Buffer> {
    if (at >= this.#start && at + length <= this.#start + this.#bytes.length)
      return this.#bytes.subarray(at - this.#start, at - this.#start + length);
    const want = Math.min(Math.max(length, WINDOW), Math.max(this.size - at, 0));
    const buffer = Buffer.allocUnsafe(want);
    const { bytesRead } = await this.#handle.read(buffer, 0, want, at);
    this.#start = at;
    this.#bytes = buffer.subarray(0, bytesRead);
    return this.#bytes.subarray(0, Math.min(length, bytesRead));
  }

  async close(): Promise<void> {
    await this.#handle.close();
  }
}

const WINDOW = 1024 * 1024;

/** The encoding a .cpg names, as TextDecoder knows it (code page numbers as their Windows or ISO names). */
function encodingOf(base: string, cpg: Buffer | undefined, what: string): string {
  if (!cpg) return "windows-1252";
  const label = cpg.toString("latin1").trim();
  const name = /^125\d$/.test(label)
    ? `windows-${label}`
    : /^(?:iso[-_ ]?)?8859[-_]?(\d{1,2})$/i.test(label)
      ? `iso-8859-${/(\d{1,2})$/.exec(label)?.[1]}`
      : label;
  try {
    new TextDecoder(name);
    return name;
  } catch {
    throw badRequest(what, [
      `The shapefile ${shown(base)} names an encoding its .cpg no decoder knows: ${shown(label)}.`,
    ]);
  }
}

type Transform = (p: Position) => Position;

/** A position transformer from the .prj's system to WGS 84: by its EPSG code when it names one, else by its WKT. */
function fromPrj(base: string, prj: Buffer, what: string): Transform {
  const wkt = prj
    .toString("utf8")
    .replace(/^\uFEFF/, "")
    .trim();
  const unknown = () =>
    badRequest(what, [
      `The shapefile ${shown(base)} has a .prj that no projection library knows: ${shown(wkt.slice(0, 80))}.`,
    ]);
  if (wkt === "" || wkt.length > 64 * 1024) throw unknown();
  // The outermost authority closes the WKT (WKT 1: AUTHORITY["EPSG","n"]]; WKT 2: ID["EPSG",n]]).
  const code = /(?:AUTHORITY|ID)\[\s*"EPSG"\s*,\s*"?(\d{1,6})"?\s*\]\s*\]\s*$/i.exec(wkt)?.[1];
  if (code && hasCrs(Number(code))) return transformer(Number(code), WGS84, { from: ".prj", to: "WGS 84" });
  try {
    const converter = proj4(wkt, "EPSG:4326");
    return (p) => {
      const out = converter.forward([p[0] as number, p[1] as number]) as [number, number];
      return p.length > 2 ? [out[0], out[1], p[2] as number] : out;
    };
  } catch {
    throw unknown();
  }
}

interface DbfField {
  readonly name: string;
  readonly type: string;
  readonly length: number;
  readonly decimals: number;
  /** Where the field's bytes start in a record (after the deletion flag). */
  readonly offset: number;
}

interface Dbf {
  readonly fields: DbfField[];
  readonly headerLength: number;
  readonly recordLength: number;
  readonly count: number;
}

/**
 * The .dbf's header and field descriptors (dBASE III: 32 bytes each after the 32-byte header, ending at 0x0D), from
 * its first bytes (`dbf`, which hold the whole header: at most 65,535 bytes); `size` is the file's.
 */
function dbfOf(base: string, dbf: Buffer, size: number, encoding: string, what: string): Dbf {
  const damaged = () => badRequest(what, [`The shapefile ${shown(base)} has a damaged .dbf file.`]);
  if (dbf.length < 33) throw damaged();
  const count = dbf.readUInt32LE(4);
  const headerLength = dbf.readUInt16LE(8);
  const recordLength = dbf.readUInt16LE(10);
  if (headerLength > dbf.length) throw damaged();
  const decoder = new TextDecoder(encoding);
  const fields: DbfField[] = [];
  let offset = 1;
  for (let at = 32; ; at += 32) {
    if (at >= headerLength || at >= dbf.length) throw damaged();
    if (dbf[at] === 0x0d) break;
    if (at + 32 > dbf.length) throw damaged();
    const nameBytes = dbf.subarray(at, at + 11);
    const end = nameBytes.indexOf(0);
    fields.push({
      name: decoder.decode(nameBytes.subarray(0, end < 0 ? 11 : end)).trim(),
      type: String.fromCharCode(dbf[at + 11] as number),
      length: dbf[at + 16] as number,
      decimals: dbf[at + 17] as number,
      offset,
    });
    offset += dbf[at + 16] as number;
    if (fields.length > MAX_FIELDS)
      throw badRequest(what, [
        `The shapefile ${shown(base)} has more than ${MAX_FIELDS} fields; a layer holds at most ${MAX_FIELDS}.`,
      ]);
  }
  if (offset > recordLength || recordLength === 0 || headerLength + count * recordLength > size) throw damaged();
  return { fields, headerLength, recordLength, count };
}

/**
 * A dBASE field's kind: text; numbers with decimals (or too wide for a 32-bit integer) as doubles, others as
 * integers; dates; logicals as integers 1/0 (as GDAL reads them). Memo, binary and general fields hold pointers
 * into a .dbt file a shapefile does not have: left out. Any other type is refused.
 */
function kindOf(base: string, f: DbfField, what: string): FieldKind | undefined {
  switch (f.type.toUpperCase()) {
    case "C":
      return "string";
    case "N":
      return f.decimals > 0 || f.length > 9 ? "double" : "integer";
    case "F":
      return "double";
    case "D":
      return "date";
    case "L":
      return "integer";
    case "M":
    case "B":
    case "G":
      return undefined;
    default:
      throw badRequest(what, [
        `The shapefile ${shown(base)} has a field ${shown(f.name)} of dBASE type ${shown(f.type)}, which a layer cannot hold.`,
      ]);
  }
}

/** The .shp's layer geometry type, after walking its records once: their bounds, and the polygons' ring work. */
async function scanShp(
  base: string,
  part: Part,
  vertices: { count: number },
  what: string,
): Promise<GeometryTypeName | undefined> {
  const shp = await FileWindow.open(part);
  try {
    return await scanRecords(base, shp, vertices, what);
  } finally {
    await shp.close();
  }
}

/** The most bytes one shape's record may hold: MAX_VERTICES positions, and room for its parts' indexes. */
const MAX_RECORD = 16 * MAX_VERTICES + 1024 * 1024;

async function scanRecords(
  base: string,
  shp: FileWindow,
  vertices: { count: number },
  what: string,
): Promise<GeometryTypeName | undefined> {
  const damaged = () => badRequest(what, [`The shapefile ${shown(base)} has a damaged .shp file.`]);
  const head = await shp.bytes(0, 100);
  if (head.length < 100 || head.readInt32BE(0) !== 9994) throw damaged();
  const shapeType = head.readInt32LE(32);
  if (!(shapeType in SHAPE_TYPES))
    throw badRequest(what, [
      `The shapefile ${shown(base)} holds shapes of type ${shapeType} (multipatches), which a layer cannot hold.`,
    ]);
  let work = 0;
  for (let at = 100; at + 8 <= shp.size;) {
    const length = (await shp.bytes(at, 8)).readInt32BE(4) * 2;
    const content = at + 8;
    if (length < 4 || content + length > shp.size) throw damaged();
    if (length > MAX_RECORD)
      throw badRequest(what, [
        `The shapefiles hold more than ${MAX_VERTICES.toLocaleString("en")} vertices: at most that many are published from one file.`,
      ]);
    // One record at a time, its offsets from its start.
    const rec = await shp.bytes(content, length);
    const type = rec.readInt32LE(0);
    if (type !== 0 && type !== shapeType) throw damaged();
    if (type !== 0) {
      const offset = PARTS_TYPES.has(type) ? 40 : MULTIPOINT_TYPES.has(type) ? 36 : -1;
      if (offset > 0 && length < offset + 4) throw damaged();
      vertices.count += offset > 0 ? Math.max(rec.readInt32LE(offset), 0) : 1;
      if (vertices.count > MAX_VERTICES)
        throw badRequest(what, [
          `The shapefiles hold more than ${MAX_VERTICES.toLocaleString("en")} vertices: at most that many are published from one file.`,
        ]);
    }
    if (POLYGON_TYPES.has(type)) {
      if (length < 44) throw damaged();
      const parts = rec.readInt32LE(36);
      const points = rec.readInt32LE(40);
      const xy = 44 + 4 * parts;
      if (parts < 0 || points < 0 || 44 + 4 * parts + 16 * points > length) throw damaged();
      let outer = 0;
      let holes = 0;
      for (let i = 0; i < parts; i++) {
        const from = rec.readInt32LE(44 + 4 * i);
        const to = i + 1 < parts ? rec.readInt32LE(48 + 4 * i) : points;
        if (from < 0 || to > points || from > to) throw damaged();
        // Shoelace: a clockwise ring (negative area, y up) is an exterior in a shapefile.
        let area = 0;
        for (let k = from; k < to; k++) {
          const j = k + 1 < to ? k + 1 : from;
          area +=
            rec.readDoubleLE(xy + 16 * k) * rec.readDoubleLE(xy + 16 * j + 8) -
            rec.readDoubleLE(xy + 16 * j) * rec.readDoubleLE(xy + 16 * k + 8);
        }
        if (area < 0) outer += to - from;
        else holes += to - from;
      }
      work += outer * holes;
      if (work > MAX_RING_WORK)
        throw badRequest(what, [
          `The shapefile ${shown(base)} has polygons of too many rings to assemble (more than ${MAX_RING_WORK.toLocaleString("en")} vertex tests).`,
        ]);
    }
    at = content + length;
  }
  return SHAPE_TYPES[shapeType] ?? undefined;
}

/** RFC 7946's winding: exteriors counter-clockwise, holes clockwise (the shapefile's is the other way). */
function rewound(g: Geometry): Geometry {
  if (g.type === "Polygon") return { type: "Polygon", coordinates: g.coordinates.map((r, i) => orient(r, i > 0)) };
  if (g.type === "MultiPolygon")
    return { type: "MultiPolygon", coordinates: g.coordinates.map((p) => p.map((r, i) => orient(r, i > 0))) };
  return g;
}

const finite = (p: Position) => Number.isFinite(p[0]) && Number.isFinite(p[1]);

async function oneShapefile(
  base: string,
  parts: Map<string, Part>,
  vertices: { count: number },
  what: string,
): Promise<Table> {
  const cpg = parts.get("cpg");
  const cpgBytes = await smallPart(cpg);
  if (cpg && !cpgBytes)
    throw badRequest(what, [`The shapefile ${shown(base)} has a .cpg of ${cpg.size} bytes: it names an encoding.`]);
  const encoding = encodingOf(base, cpgBytes, what);
  const project = fromPrj(base, (await smallPart(parts.get("prj"))) ?? Buffer.alloc(0), what);
  const shp = parts.get("shp") as Part;
  const dbf = parts.get("dbf") as Part;
  const geometryType = await scanShp(base, shp, vertices, what);
  const dbfHead = await FileWindow.open(dbf);
  let header: Dbf;
  try {
    header = dbfOf(base, await dbfHead.bytes(0, 65_536 + 32), dbf.size, encoding, what);
  } finally {
    await dbfHead.close();
  }
  const kinds = header.fields.map((f) => kindOf(base, f, what));
  const kept = header.fields.flatMap((f, i) => (kinds[i] ? [{ f, kind: kinds[i] }] : []));
  const notes: string[] = [];
  const names = fieldNames(
    kept.map(({ f }) => f.name),
    notes,
  );
  const fields: TableField[] = kept.map(({ f, kind }, i) => ({
    name: names[i] as string,
    alias: f.name,
    kind,
    length: kind === "string" ? f.length : 0,
  }));
  const left = header.fields.length - kept.length;
  if (left > 0)
    notes.push(
      `${left} memo, binary or general field(s) of ${base}.dbf were left out (a shapefile has no .dbt to read).`,
    );
  checkValues(header.count, Math.max(fields.length, 1), dbf.size, what);
  const decoder = new TextDecoder(encoding);
  /** The shapefile's rows, a shape and its record at a time; `seen` counts the shapes not projected. */
  async function* rowsOf(seen: { unprojected: number }): AsyncGenerator<GeoPackageRow> {
    let source: Awaited<ReturnType<typeof shapefile.openShp>>;
    try {
      // Read from its file as a stream, a shape at a time.
      source = await shapefile.openShp(createReadStream(shp.path));
    } catch {
      throw badRequest(what, [`The shapefile ${shown(base)} cannot be read.`]);
    }
    let i = 0;
    const records = await FileWindow.open(dbf);
    try {
      for (; ; i++) {
        const { done, value } = await source.read();
        if (done) break;
        if (i >= header.count)
          throw badRequest(what, [`The shapefile ${shown(base)} has more shapes than its .dbf has records.`]);
        const record = await records.bytes(header.headerLength + i * header.recordLength, header.recordLength);
        const values: Record<string, string | number | Date | null> = Object.create(null);
        kept.forEach(({ f, kind }, k) => {
          values[names[k] as string] = cellOf(
            decoder.decode(record.subarray(f.offset, f.offset + f.length)),
            f.type,
            kind,
          );
        });
        let geometry: Geometry | null = value ? rewound(mapPositions(value as Geometry, project)) : null;
        if (geometry && (!geometryType || !fitsLayer(geometryType, geometry)))
          throw new Error("a shape of another type");
        if (geometry && !positions(geometry).every(finite)) {
          seen.unprojected++;
          geometry = null;
        }
        yield { values, geometry };
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw badRequest(what, [`The shapefile ${shown(base)} cannot be read: its .shp or .dbf is damaged.`]);
    } finally {
      await source.cancel?.().catch(() => undefined);
      await records.close();
    }
    if (i !== header.count)
      throw badRequest(what, [`The shapefile ${shown(base)} has ${i} shapes for ${header.count} records.`]);
  }
  // A first reading checks every shape and record and counts what cannot be kept; each rows() reads them again.
  const seen = { unprojected: 0 };
  for await (const _ of rowsOf(seen));
  if (seen.unprojected > 0)
    notes.push(`${seen.unprojected} shape(s) of ${base} could not be projected to WGS 84: kept without geometry.`);
  return {
    fields,
    count: header.count,
    rows: () => rowsOf({ unprojected: 0 }),
    ...(geometryType ? { geometryType } : {}),
    notes,
  };
}

function positions(g: Geometry): Position[] {
  switch (g.type) {
    case "Point":
      return [g.coordinates];
    case "MultiPoint":
    case "LineString":
      return g.coordinates;
    case "MultiLineString":
    case "Polygon":
      return g.coordinates.flat();
    case "MultiPolygon":
      return g.coordinates.flat(2);
    default:
      return [];
  }
}

/**
 * A dBASE value as its field keeps it: text without its padding, numbers as written (blank or `*****`, an
 * overflow, is no value), a date (YYYYMMDD) as its UTC day when it is a real one, a logical as 1/0 (`?` unknown).
 */
function cellOf(text: string, type: string, kind: FieldKind): string | number | Date | null {
  const t = text.trim();
  if (t === "") return null;
  // Text keeps its leading spaces: only the padding after it is dBASE's.
  if (kind === "string") return text.replace(/[\s\0]+$/, "");
  if (type.toUpperCase() === "L") return /^[TtYy]$/.test(t) ? 1 : /^[FfNn]$/.test(t) ? 0 : null;
  if (kind === "integer" || kind === "double") {
    const n = Number(t);
    return Number.isFinite(n) && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(t) ? n : null;
  }
  if (kind === "date") {
    const m = /^(\d{4})(\d{2})(\d{2})$/.exec(t);
    if (!m) return null;
    const day = new Date(Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])));
    return day.toISOString().slice(0, 10) === `${m[1]}-${m[2]}-${m[3]}` ? day : null;
  }
  return null;
}
