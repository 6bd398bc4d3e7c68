// Stored geometry → GeoJSON geometry: ISO WKB (2D, Z, M, ZM; types 1–7 and their 1000/2000/3000 variants), the
// EWKB PostGIS sends (high-bit Z/M/SRID flags) and GeoPackage geometry blobs (a `GP` header before ISO WKB).
//
// A blob comes from a dataset we do not control, so the decoder is linear and bounded: every declared count is
// checked against the bytes left before anything is allocated, and geometry collections may nest only
// MAX_COLLECTION_DEPTH levels (no stack to exhaust). A blob that breaks the format is a CorruptRecordError: the
// dataset's fault, never the caller's.
//
// M values are dropped: GeoJSON positions carry x, y and z only, and no output mapgate renders reads M. Z is kept
// as the third ordinate when the blob has it.
import type { Geometry, Position } from "geojson";
import { CorruptRecordError } from "#shared/errors.ts";
import type { Bounds } from "#shared/features/schema.ts";

/** Geometry collections inside geometry collections: deeper than this is refused, not recursed into. */
export const MAX_COLLECTION_DEPTH = 4;

const EWKB_Z = 0x80000000;
const EWKB_M = 0x40000000;
const EWKB_SRID = 0x20000000;

export interface DecodedWkb {
  /** null when the geometry is empty (an empty point, or any collection without members). */
  readonly geometry: Geometry | null;
  /** The SRID an EWKB blob carries (PostGIS), absent otherwise. */
  readonly srid?: number;
  readonly hasZ: boolean;
  readonly hasM: boolean;
}

const corrupt = (problem: string) => new CorruptRecordError("geometry", problem);

class Reader {
  readonly view: DataView;
  pos: number;
  little = true;

  constructor(bytes: Uint8Array, start: number) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.pos = start;
  }

  get left(): number {
    return this.view.byteLength - this.pos;
  }

  need(n: number): void {
    if (n > this.left) throw corrupt(`truncated WKB: ${n} bytes needed at offset ${this.pos}, ${this.left} left`);
  }

  u8(): number {
    this.need(1);
    return this.view.getUint8(this.pos++);
  }

  u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, this.little);
    this.pos += 4;
    return v;
  }

  f64(): number {
    // Bounds were checked for the whole run of ordinates by the caller.
    const v = this.view.getFloat64(this.pos, this.little);
    this.pos += 8;
    return v;
  }
}

interface Header {
  readonly type: number;
  readonly hasZ: boolean;
  readonly hasM: boolean;
  readonly srid?: number;
}

function readHeader(r: Reader): Header {
  const order = r.u8();
  if (order !== 0 && order !== 1) throw corrupt(`bad WKB byte order ${order}`);
  r.little = order === 1;
  const raw = r.u32();
  let hasZ = (raw & EWKB_Z) !== 0;
  let hasM = (raw & EWKB_M) !== 0;
  const srid = (raw & EWKB_SRID) !== 0 ? r.u32() : undefined;
  const code = raw & 0x0fffffff;
  const iso = Math.floor(code / 1000);
  if (iso > 3) throw corrupt(`unknown WKB geometry type ${code}`);
  if (iso === 1 || iso === 3) hasZ = true;
  if (iso === 2 || iso === 3) hasM = true;
  return { type: code % 1000, hasZ, hasM, ...(srid !== undefined ? { srid } : {}) };
}

function readPositions(r: Reader, count: number, h: Header): Position[] {
  const dims = 2 + (h.hasZ ? 1 : 0) + (h.hasM ? 1 : 0);
  r.need(count * dims * 8);
  const out: Position[] = new Array<Position>(count);
  for (let i = 0; i < count; i++) {
    const x = r.f64();
    const y = r.f64();
    if (h.hasZ) {
      const z = r.f64();
      out[i] = [x, y, z];
    } else out[i] = [x, y];
    if (h.hasM) r.pos += 8;
  }
  return out;
}

function readCount(r: Reader, minBytesEach: number): number {
  const n = r.u32();
  // Refuse before allocating: a count the remaining bytes cannot hold is a lie, however large it claims.
  if (n * minBytesEach > r.left) throw corrupt(`WKB declares ${n} elements but only ${r.left} bytes follow`);
  return n;
}

const isEmptyPoint = (p: Position) => Number.isNaN(p[0]) && Number.isNaN(p[1]);

// The smallest member of a multi-geometry or collection: a 5-byte header and a 4-byte count (or 16 bytes of a point).
const MIN_MEMBER_BYTES = 9;

function readGeometry(r: Reader, depth: number, expected?: number): { geometry: Geometry | null; header: Header } {
  const h = readHeader(r);
  if (expected !== undefined && h.type !== expected)
    throw corrupt(`a WKB multi-geometry holds a member of type ${h.type}, expected ${expected}`);
  switch (h.type) {
    case 1: {
      const [p] = readPositions(r, 1, h);
      return { geometry: p && !isEmptyPoint(p) ? { type: "Point", coordinates: p } : null, header: h };
    }
    case 2: {
      const n = readCount(r, 16);
      return { geometry: n ? { type: "LineString", coordinates: readPositions(r, n, h) } : null, header: h };
    }
    case 3: {
      const rings = readRings(r, h);
      return { geometry: rings.length ? { type: "Polygon", coordinates: rings } : null, header: h };
    }
    case 4: {
      const n = readCount(r, MIN_MEMBER_BYTES);
      const points: Position[] = [];
      for (let i = 0; i < n; i++) {
        const m = readGeometry(r, depth, 1).geometry;
        if (m?.type === "Point") points.push(m.coordinates);
      }
      return { geometry: points.length ? { type: "MultiPoint", coordinates: points } : null, header: h };
    }
    case 5: {
      const n = readCount(r, MIN_MEMBER_BYTES);
      const lines: Position[][] = [];
      for (let i = 0; i < n; i++) {
        const m = readGeometry(r, depth, 2).geometry;
        if (m?.type === "LineString") lines.push(m.coordinates);
      }
      return { geometry: lines.length ? { type: "MultiLineString", coordinates: lines } : null, header: h };
    }
    case 6: {
      const n = readCount(r, MIN_MEMBER_BYTES);
      const polygons: Position[][][] = [];
      for (let i = 0; i < n; i++) {
        const m = readGeometry(r, depth, 3).geometry;
        if (m?.type === "Polygon") polygons.push(m.coordinates);
      }
      return { geometry: polygons.length ? { type: "MultiPolygon", coordinates: polygons } : null, header: h };
    }
    case 7: {
      if (depth >= MAX_COLLECTION_DEPTH)
        throw corrupt(`geometry collections nested deeper than ${MAX_COLLECTION_DEPTH} levels`);
      const n = readCount(r, MIN_MEMBER_BYTES);
      const members: Geometry[] = [];
      for (let i = 0; i < n; i++) {
        const m = readGeometry(r, depth + 1).geometry;
        if (m) members.push(m);
      }
      return { geometry: members.length ? { type: "GeometryCollection", geometries: members } : null, header: h };
    }
    default:
      // Curves, surfaces and TINs (8–17) have no GeoJSON shape and no Esri JSON one mapgate renders.
      throw corrupt(`unsupported WKB geometry type ${h.type}`);
  }
}

function readRings(r: Reader, h: Header): Position[][] {
  const n = readCount(r, 4);
  const rings: Position[][] = [];
  for (let i = 0; i < n; i++) {
    const count = readCount(r, 16);
    if (count) rings.push(readPositions(r, count, h));
  }
  return rings;
}

function decodeFrom(bytes: Uint8Array, start: number): DecodedWkb & { end: number } {
  const r = new Reader(bytes, start);
  const { geometry, header } = readGeometry(r, 0);
  return {
    geometry,
    hasZ: header.hasZ,
    hasM: header.hasM,
    ...(header.srid !== undefined ? { srid: header.srid } : {}),
    end: r.pos,
  };
}

/** Decodes ISO WKB or PostGIS EWKB (what `ST_AsEWKB`, or a geometry column read as binary, gives). */
export function decodeWkb(bytes: Uint8Array): DecodedWkb {
  const { end, ...decoded } = decodeFrom(bytes, 0);
  if (end !== bytes.byteLength) throw corrupt(`${bytes.byteLength - end} bytes after the WKB geometry`);
  return decoded;
}

/** Decodes the hex text PostgreSQL answers for a geometry column read without a cast. */
export function decodeHexWkb(hex: string): DecodedWkb {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw corrupt("WKB hex text is not hexadecimal");
  return decodeWkb(Buffer.from(hex, "hex"));
}

export interface GeoPackageGeometry {
  /** The blob's srs_id (a key of gpkg_spatial_ref_sys; 0 undefined geographic, -1 undefined Cartesian). */
  readonly srsId: number;
  /** The header's envelope, x and y only; absent when the blob carries none. */
  readonly envelope?: Bounds;
  /** The header's empty flag (an empty geometry has a null `geometry`). */
  readonly empty: boolean;
  readonly geometry: Geometry | null;
  readonly hasZ: boolean;
  readonly hasM: boolean;
}

// GeoPackage 1.x §2.1.3: envelope contents indicator → number of doubles in the header envelope.
const ENVELOPE_DOUBLES = [0, 4, 6, 6, 8] as const;

/** The host's byte order, in which SCRATCH reads the doubles copied into it. */
const HOST_LITTLE = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;
const SCRATCH = new Float64Array(2);
const SCRATCH_BYTES = new Uint8Array(SCRATCH.buffer);

/**
 * Whether a GeoPackage blob is a plain 2-D point (a well-formed header not flagged empty, then a WKB point with x and
 * y only, nothing after it); if so its x and y are copied into SCRATCH. Nothing is allocated: most of a point layer's
 * rows are such points, and a page reads a thousand. Any other blob is the general decoder's to read or refuse.
 */
function plainPoint(bytes: Uint8Array): boolean {
  // The magic "GP", version 0, and no reserved, extended or empty flag.
  if (bytes.byteLength < 8 || bytes[0] !== 0x47 || bytes[1] !== 0x50 || bytes[2] !== 0) return false;
  const flags = bytes[3] as number;
  if (flags & 0xf0) return false;
  const doubles = ENVELOPE_DOUBLES[((flags >> 1) & 0x07) as 0];
  if (doubles === undefined) return false;
  const at = 8 + doubles * 8;
  if (bytes.byteLength !== at + 21) return false;
  // WKB type 1 (a point, no Z or M) as a 32-bit integer in the WKB's own byte order.
  const order = bytes[at];
  const one = order === 1 ? at + 1 : order === 0 ? at + 4 : -1;
  if (one < 0 || bytes[one] !== 1) return false;
  for (let i = at + 1; i <= at + 4; i++) if (i !== one && bytes[i] !== 0) return false;
  const flip = (order === 1) === HOST_LITTLE ? 0 : 7;
  for (let i = 0; i < 16; i++) SCRATCH_BYTES[i ^ flip] = bytes[at + 5 + i] as number;
  return true;
}

/**
 * Whether a GeoPackage blob's plain 2-D point lies in `box` (edges included; a NaN point, which is empty, never
 * does); undefined when the blob is not such a point (decode it).
 */
export function geoPackagePointIn(bytes: Uint8Array, box: Bounds): boolean | undefined {
  if (!plainPoint(bytes)) return undefined;
  const x = SCRATCH[0] as number;
  const y = SCRATCH[1] as number;
  return box[0] <= x && x <= box[2] && box[1] <= y && y <= box[3];
}

/** Decodes a GeoPackage geometry blob (GeoPackageBinary: magic, version, flags, srs_id, envelope, then WKB). */
export function decodeGeoPackageGeometry(bytes: Uint8Array): GeoPackageGeometry {
  // A plain 2-D point without a header envelope (most of a point layer's rows): read with no view or envelope made.
  if (((bytes[3] as number) & 0x0e) === 0 && plainPoint(bytes)) {
    const x = SCRATCH[0] as number;
    const y = SCRATCH[1] as number;
    const point: Geometry | null = Number.isNaN(x) && Number.isNaN(y) ? null : { type: "Point", coordinates: [x, y] };
    const little = ((bytes[3] as number) & 0x01) === 1;
    const b = (i: number) => bytes[little ? 4 + i : 7 - i] as number;
    const srsId = b(0) | (b(1) << 8) | (b(2) << 16) | (b(3) << 24);
    return { srsId, empty: point === null, geometry: point, hasZ: false, hasM: false };
  }
  if (bytes.byteLength < 8) throw corrupt("GeoPackage geometry shorter than its header");
  if (bytes[0] !== 0x47 || bytes[1] !== 0x50) throw corrupt("GeoPackage geometry without its GP magic");
  if (bytes[2] !== 0) throw corrupt(`GeoPackage geometry version ${bytes[2]} is unknown`);
  const flags = bytes[3] ?? 0;
  if (flags & 0xc0) throw corrupt("GeoPackage geometry flags use reserved bits");
  if (flags & 0x20) throw corrupt("extended GeoPackage geometry types are not supported");
  const empty = (flags & 0x10) !== 0;
  const indicator = (flags >> 1) & 0x07;
  const doubles = ENVELOPE_DOUBLES[indicator as 0 | 1 | 2 | 3 | 4];
  if (doubles === undefined) throw corrupt(`GeoPackage envelope contents indicator ${indicator} is invalid`);
  const little = (flags & 0x01) === 1;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const srsId = view.getInt32(4, little);
  const headerEnd = 8 + doubles * 8;
  if (bytes.byteLength < headerEnd) throw corrupt("GeoPackage geometry envelope truncated");
  let envelope: Bounds | undefined;
  if (doubles) {
    // The header envelope is ordered minx, maxx, miny, maxy (then z and m ranges, not kept).
    const minX = view.getFloat64(8, little);
    const maxX = view.getFloat64(16, little);
    const minY = view.getFloat64(24, little);
    const maxY = view.getFloat64(32, little);
    if (![minX, maxX, minY, maxY].some(Number.isNaN)) envelope = [minX, minY, maxX, maxY];
  }
  const { end, geometry, hasZ, hasM } = decodeFrom(bytes, headerEnd);
  if (end !== bytes.byteLength) throw corrupt(`${bytes.byteLength - end} bytes after the GeoPackage geometry`);
  return {
    srsId,
    ...(envelope ? { envelope } : {}),
    empty: empty || geometry === null,
    geometry: empty ? null : geometry,
    hasZ,
    hasM,
  };
}
