// A shapefile writer for exports (ESRI Shapefile Technical Description, 1998; dBASE III tables): the .shp, .shx and
// .dbf of one layer written record by record to files, their headers (counts, lengths, extent) filled in once the
// last record is written, so a layer is never held whole in memory. Text is UTF-8, which the .cpg beside them says.
// @mapbox/shp-write is not used: its tables keep three decimals of a number, write text as UTF-16 code units cut to
// one byte, and are built whole in memory.
import type { FileHandle } from "node:fs/promises";
import { open } from "node:fs/promises";
import type { Geometry, Position } from "geojson";
import type { EsriGeometryType, Field } from "#shared/features/schema.ts";

export const SHAPE_TYPES: Readonly<Record<EsriGeometryType, number>> = {
  esriGeometryPoint: 1,
  esriGeometryPolyline: 3,
  esriGeometryPolygon: 5,
  esriGeometryMultipoint: 8,
};

/** dBASE's limits: a field name is at most 10 bytes, a text field 254, a record 65,535; GDAL reads 255 fields well. */
export const DBF_NAME_LENGTH = 10;
const TEXT_WIDTH = 254;
const MAX_RECORD_BYTES = 65_535;
export const MAX_DBF_FIELDS = 255;

/** A .dbf column: the layer's field, the name the table gives it, and how its values are written. */
export interface DbfColumn {
  readonly field: Field;
  readonly name: string;
  readonly type: "C" | "N" | "D";
  readonly width: number;
  readonly decimals: number;
}

/**
 * The field names a .dbf can hold, at most 10 ASCII letters, digits and underscores each, unique without regard to
 * case (as readers compare them): a longer name is cut to its first 10 characters, and one already taken ends in
 * `_1`, `_2`… instead, cut further to make room (`population_2020` and `population_2021` become `population`
 * and `populati_1`).
 */
export function dbfNames(names: readonly string[]): string[] {
  const taken = new Set<string>();
  return names.map((raw) => {
    const base = raw.replace(/[^A-Za-z0-9_]/g, "_") || "field";
    let name = base.slice(0, DBF_NAME_LENGTH);
    for (let n = 1; taken.has(name.toLowerCase()); n++) {
      const suffix = `_${n}`;
      name = base.slice(0, DBF_NAME_LENGTH - suffix.length) + suffix;
    }
    taken.add(name.toLowerCase());
    return name;
  });
}

/** How each field is kept in dBASE: numbers as N (the shortest text that reads back as the same number), text as C. */
export function dbfColumns(fields: readonly Field[]): DbfColumn[] {
  const names = dbfNames(fields.map((f) => f.name));
  return fields.map((field, i) => {
    const name = names[i] as string;
    switch (field.type) {
      case "esriFieldTypeOID":
      case "esriFieldTypeSmallInteger":
      case "esriFieldTypeInteger":
        return { field, name, type: "N", width: 11, decimals: 0 };
      case "esriFieldTypeBigInteger":
        return { field, name, type: "N", width: 20, decimals: 0 };
      case "esriFieldTypeSingle":
      case "esriFieldTypeDouble":
        // 24 characters hold any double's shortest round-tripping form (-1.2345678901234567e-308).
        return { field, name, type: "N", width: 24, decimals: 15 };
      case "esriFieldTypeDate":
      case "esriFieldTypeDateOnly":
        return { field, name, type: "D", width: 8, decimals: 0 };
      case "esriFieldTypeGUID":
        return { field, name, type: "C", width: 38, decimals: 0 };
      default:
        return {
          field,
          name,
          type: "C",
          width: Math.min(TEXT_WIDTH, Math.max(1, field.length ?? TEXT_WIDTH)),
          decimals: 0,
        };
    }
  });
}

/** Why a layer's fields cannot make a .dbf (too many, or records too wide), or undefined when they can. */
export function dbfProblem(columns: readonly DbfColumn[]): string | undefined {
  if (columns.length > MAX_DBF_FIELDS)
    return `A shapefile's table holds at most ${MAX_DBF_FIELDS} fields; the layer has ${columns.length}: export it as a GeoPackage, CSV or GeoJSON.`;
  const width = 1 + columns.reduce((sum, c) => sum + c.width, 0);
  if (width > MAX_RECORD_BYTES)
    return `A shapefile's records hold at most ${MAX_RECORD_BYTES} bytes; the layer's fields take ${width}: export it as a GeoPackage, CSV or GeoJSON.`;
  return undefined;
}

/** Text cut to at most `width` UTF-8 bytes, never inside a character, padded with spaces. */
function textCell(value: string, width: number): Buffer {
  const out = Buffer.alloc(width, 0x20);
  let used = 0;
  for (const ch of value) {
    const bytes = Buffer.byteLength(ch);
    if (used + bytes > width) break;
    out.write(ch, used);
    used += bytes;
  }
  return out;
}

function cell(column: DbfColumn, value: string | number | null | undefined): Buffer {
  if (value === null || value === undefined) return Buffer.alloc(column.width, 0x20);
  if (column.type === "N") {
    const text = typeof value === "number" ? String(value) : value;
    return Buffer.from(text.slice(0, column.width).padStart(column.width, " "), "latin1");
  }
  if (column.type === "D") {
    const day = new Date(typeof value === "number" ? value : Date.parse(value));
    if (Number.isNaN(day.getTime())) return Buffer.alloc(8, 0x20);
    return Buffer.from(day.toISOString().slice(0, 10).replace(/-/g, ""), "latin1");
  }
  return textCell(String(value), column.width);
}

type Box = [number, number, number, number];

/** Twice the signed area of a ring: positive when it turns counter-clockwise (x east, y north). */
function signedArea(ring: readonly Position[]): number {
  let sum = 0;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [x1 = 0, y1 = 0] = ring[j] ?? [];
    const [x2 = 0, y2 = 0] = ring[i] ?? [];
    sum += (x1 - x2) * (y1 + y2);
  }
  return sum;
}

/** A polygon's rings as a shapefile orders them: the outer ring clockwise, its holes counter-clockwise. */
function orientedRings(polygon: readonly (readonly Position[])[]): Position[][] {
  return polygon.map((ring, i) => {
    const clockwise = signedArea(ring) < 0;
    const wanted = i === 0;
    return clockwise === wanted ? [...ring] : [...ring].reverse();
  });
}

/** The parts and points of a geometry of the layer's shape type; undefined for no shape (a null record). */
function partsOf(geometry: Geometry | null | undefined, shapeType: number): Position[][] | undefined {
  if (!geometry) return undefined;
  switch (geometry.type) {
    case "Point":
      return shapeType === 1 || shapeType === 8 ? [[geometry.coordinates]] : undefined;
    case "MultiPoint":
      return shapeType === 8 && geometry.coordinates.length > 0 ? [geometry.coordinates] : undefined;
    case "LineString":
      return shapeType === 3 ? [geometry.coordinates] : undefined;
    case "MultiLineString":
      return shapeType === 3 ? geometry.coordinates.filter((l) => l.length > 0) : undefined;
    case "Polygon":
      return shapeType === 5 ? orientedRings(geometry.coordinates) : undefined;
    case "MultiPolygon":
      return shapeType === 5 ? geometry.coordinates.flatMap((p) => orientedRings(p)) : undefined;
    default:
      return undefined;
  }
}

/** One shape record's content (without its record header) and its box. */
function shapeContent(parts: Position[][] | undefined, shapeType: number): { bytes: Buffer; box?: Box } {
  const points = parts?.flat() ?? [];
  if (!parts || points.length === 0) {
    const bytes = Buffer.alloc(4);
    bytes.writeInt32LE(0, 0);
    return { bytes };
  }
  const box: Box = [Infinity, Infinity, -Infinity, -Infinity];
  for (const [x = 0, y = 0] of points) {
    box[0] = Math.min(box[0], x);
    box[1] = Math.min(box[1], y);
    box[2] = Math.max(box[2], x);
    box[3] = Math.max(box[3], y);
  }
  if (shapeType === 1) {
    const [x = 0, y = 0] = points[0] ?? [];
    const bytes = Buffer.alloc(20);
    bytes.writeInt32LE(1, 0);
    bytes.writeDoubleLE(x, 4);
    bytes.writeDoubleLE(y, 12);
    return { bytes, box };
  }
  const multipoint = shapeType === 8;
  const head = 4 + 32 + (multipoint ? 4 : 8 + 4 * parts.length);
  const bytes = Buffer.alloc(head + 16 * points.length);
  bytes.writeInt32LE(shapeType, 0);
  box.forEach((v, i) => bytes.writeDoubleLE(v, 4 + 8 * i));
  let at = 36;
  if (multipoint) {
    bytes.writeInt32LE(points.length, at);
    at += 4;
  } else {
    bytes.writeInt32LE(parts.length, at);
    bytes.writeInt32LE(points.length, at + 4);
    at += 8;
    let start = 0;
    for (const part of parts) {
      bytes.writeInt32LE(start, at);
      at += 4;
      start += part.length;
    }
  }
  for (const [x = 0, y = 0] of points) {
    bytes.writeDoubleLE(x, at);
    bytes.writeDoubleLE(y, at + 8);
    at += 16;
  }
  return { bytes, box };
}

function mainHeader(shapeType: number, fileBytes: number, box: Box | undefined): Buffer {
  const header = Buffer.alloc(100);
  header.writeInt32BE(9994, 0);
  header.writeInt32BE(fileBytes / 2, 24);
  header.writeInt32LE(1000, 28);
  header.writeInt32LE(shapeType, 32);
  (box ?? [0, 0, 0, 0]).forEach((v, i) => header.writeDoubleLE(v, 36 + 8 * i));
  return header;
}

function dbfHeader(columns: readonly DbfColumn[], records: number): Buffer {
  const header = Buffer.alloc(32 + 32 * columns.length + 1);
  const now = new Date();
  header.writeUInt8(0x03, 0);
  header.writeUInt8(now.getUTCFullYear() - 1900, 1);
  header.writeUInt8(now.getUTCMonth() + 1, 2);
  header.writeUInt8(now.getUTCDate(), 3);
  header.writeUInt32LE(records, 4);
  header.writeUInt16LE(header.length, 8);
  header.writeUInt16LE(1 + columns.reduce((sum, c) => sum + c.width, 0), 10);
  columns.forEach((c, i) => {
    const at = 32 + 32 * i;
    header.write(c.name, at, "latin1");
    header.write(c.type, at + 11, "latin1");
    header.writeUInt8(c.width, at + 16);
    header.writeUInt8(c.decimals, at + 17);
  });
  header.writeUInt8(0x0d, header.length - 1);
  return header;
}

export interface ShapefilePaths {
  readonly shp: string;
  readonly shx: string;
  readonly dbf: string;
}

/** A shapefile being written: `add` a page of rows at a time, then `close` fills in the headers. */
export class ShapefileWriter {
  readonly #files: { shp: FileHandle; shx: FileHandle; dbf: FileHandle };
  readonly #columns: readonly DbfColumn[];
  readonly #shapeType: number;
  #shpAt = 100;
  #shxAt = 100;
  #dbfAt: number;
  #records = 0;
  #box: Box | undefined;

  private constructor(
    files: { shp: FileHandle; shx: FileHandle; dbf: FileHandle },
    columns: readonly DbfColumn[],
    shapeType: number,
  ) {
    this.#files = files;
    this.#columns = columns;
    this.#shapeType = shapeType;
    this.#dbfAt = dbfHeader(columns, 0).length;
  }

  static async create(paths: ShapefilePaths, columns: readonly DbfColumn[], shapeType: number) {
    const shp = await open(paths.shp, "wx", 0o600);
    const shx = await open(paths.shx, "wx", 0o600).catch(async (e: unknown) => {
      await shp.close();
      throw e;
    });
    const dbf = await open(paths.dbf, "wx", 0o600).catch(async (e: unknown) => {
      await Promise.all([shp.close(), shx.close()]);
      throw e;
    });
    return new ShapefileWriter({ shp, shx, dbf }, columns, shapeType);
  }

  /** Writes a page of rows: attributes by field name (dates as epoch milliseconds) and geometry. */
  async add(rows: readonly { attributes: Record<string, string | number | null>; geometry?: Geometry | null }[]) {
    const shp: Buffer[] = [];
    const shx = Buffer.alloc(8 * rows.length);
    const dbf: Buffer[] = [];
    let shpAt = this.#shpAt;
    rows.forEach((row, i) => {
      const { bytes, box } = shapeContent(partsOf(row.geometry, this.#shapeType), this.#shapeType);
      const head = Buffer.alloc(8);
      head.writeInt32BE(this.#records + i + 1, 0);
      head.writeInt32BE(bytes.length / 2, 4);
      shp.push(head, bytes);
      shx.writeInt32BE(shpAt / 2, 8 * i);
      shx.writeInt32BE(bytes.length / 2, 8 * i + 4);
      shpAt += 8 + bytes.length;
      if (box) {
        const b = this.#box;
        this.#box = b
          ? [Math.min(b[0], box[0]), Math.min(b[1], box[1]), Math.max(b[2], box[2]), Math.max(b[3], box[3])]
          : box;
      }
      dbf.push(Buffer.from([0x20]), ...this.#columns.map((c) => cell(c, row.attributes[c.field.name])));
    });
    const shpBytes = Buffer.concat(shp);
    const dbfBytes = Buffer.concat(dbf);
    await this.#files.shp.write(shpBytes, 0, shpBytes.length, this.#shpAt);
    await this.#files.shx.write(shx, 0, shx.length, this.#shxAt);
    await this.#files.dbf.write(dbfBytes, 0, dbfBytes.length, this.#dbfAt);
    this.#shpAt = shpAt;
    this.#shxAt += shx.length;
    this.#dbfAt += dbfBytes.length;
    this.#records += rows.length;
  }

  /** Fills in the headers and the table's end, and closes the files; answers the records written. */
  async close(): Promise<number> {
    try {
      await this.#files.shp.write(mainHeader(this.#shapeType, this.#shpAt, this.#box), 0, 100, 0);
      await this.#files.shx.write(mainHeader(this.#shapeType, this.#shxAt, this.#box), 0, 100, 0);
      const header = dbfHeader(this.#columns, this.#records);
      await this.#files.dbf.write(header, 0, header.length, 0);
      await this.#files.dbf.write(Buffer.from([0x1a]), 0, 1, this.#dbfAt);
    } finally {
      await this.abandon();
    }
    return this.#records;
  }

  /** Closes the files without finishing them (their caller removes them). */
  async abandon(): Promise<void> {
    await Promise.allSettled([this.#files.shp.close(), this.#files.shx.close(), this.#files.dbf.close()]);
  }
}
