// Writing geometry: ISO WKB (2D, little-endian) and the GeoPackage geometry blob (its binary header before the WKB).
// Apart from the GeoPackage writer so the SQL emitters' write statements (and the readers' bundles that carry them)
// take the encoding without the file writer and node:sqlite.
import type { Geometry, Position } from "geojson";

const WKB_TYPES = {
  Point: 1,
  LineString: 2,
  Polygon: 3,
  MultiPoint: 4,
  MultiLineString: 5,
  MultiPolygon: 6,
} as const;

/** [minx, miny, maxx, maxy], or undefined for an empty geometry. */
type Envelope = [number, number, number, number] | undefined;

function wkbSize(g: Geometry): number {
  switch (g.type) {
    case "Point":
      return 5 + 16;
    case "LineString":
      return 5 + 4 + 16 * g.coordinates.length;
    case "Polygon":
      return 5 + 4 + g.coordinates.reduce((n, ring) => n + 4 + 16 * ring.length, 0);
    case "MultiPoint":
      return 5 + 4 + 21 * g.coordinates.length;
    case "MultiLineString":
      return 5 + 4 + g.coordinates.reduce((n, line) => n + 9 + 16 * line.length, 0);
    case "MultiPolygon":
      return (
        5 + 4 + g.coordinates.reduce((n, poly) => n + 9 + poly.reduce((m, ring) => m + 4 + 16 * ring.length, 0), 0)
      );
    default:
      throw new Error(`GeoPackage writer: unsupported geometry ${g.type}`);
  }
}

class WkbWriter {
  private offset = 0;
  readonly env: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
  private readonly view: DataView;
  constructor(view: DataView) {
    this.view = view;
  }

  header(type: number): void {
    this.view.setUint8(this.offset, 1);
    this.view.setUint32(this.offset + 1, type, true);
    this.offset += 5;
  }
  count(n: number): void {
    this.view.setUint32(this.offset, n, true);
    this.offset += 4;
  }
  position(p: Position): void {
    const x = p[0] ?? NaN;
    const y = p[1] ?? NaN;
    this.view.setFloat64(this.offset, x, true);
    this.view.setFloat64(this.offset + 8, y, true);
    this.offset += 16;
    if (x < this.env[0]) this.env[0] = x;
    if (y < this.env[1]) this.env[1] = y;
    if (x > this.env[2]) this.env[2] = x;
    if (y > this.env[3]) this.env[3] = y;
  }
  positions(ps: readonly Position[]): void {
    this.count(ps.length);
    for (const p of ps) this.position(p);
  }
  rings(rings: readonly Position[][]): void {
    this.count(rings.length);
    for (const ring of rings) this.positions(ring);
  }
  geometry(g: Geometry): void {
    switch (g.type) {
      case "Point":
        this.header(WKB_TYPES.Point);
        // An empty point is NaN, NaN: WKB has no empty point, and the specification says so.
        this.position(g.coordinates.length ? g.coordinates : [NaN, NaN]);
        return;
      case "LineString":
        this.header(WKB_TYPES.LineString);
        return this.positions(g.coordinates);
      case "Polygon":
        this.header(WKB_TYPES.Polygon);
        return this.rings(g.coordinates);
      case "MultiPoint":
        this.header(WKB_TYPES.MultiPoint);
        this.count(g.coordinates.length);
        for (const p of g.coordinates) this.geometry({ type: "Point", coordinates: p });
        return;
      case "MultiLineString":
        this.header(WKB_TYPES.MultiLineString);
        this.count(g.coordinates.length);
        for (const line of g.coordinates) this.geometry({ type: "LineString", coordinates: line });
        return;
      case "MultiPolygon":
        this.header(WKB_TYPES.MultiPolygon);
        this.count(g.coordinates.length);
        for (const polygon of g.coordinates) this.geometry({ type: "Polygon", coordinates: polygon });
        return;
      default:
        throw new Error(`GeoPackage writer: unsupported geometry ${g.type}`);
    }
  }
}

/** Standard ISO WKB (2D, little-endian) of a GeoJSON geometry, and its envelope. */
export function toWkb(geometry: Geometry): { wkb: Uint8Array; envelope: Envelope } {
  const wkb = new Uint8Array(wkbSize(geometry));
  const writer = new WkbWriter(new DataView(wkb.buffer));
  writer.geometry(geometry);
  const env = writer.env;
  return { wkb, envelope: env[0] <= env[2] && env[1] <= env[3] ? env : undefined };
}

/**
 * A GeoPackage geometry blob: 'GP', version 0, flags (little-endian, envelope kind, empty), the srs id, the
 * envelope [minx, maxx, miny, maxy] and the WKB. Points carry no envelope (it would repeat the point, and
 * GDAL writes them so too); empty geometries carry none and set the empty flag.
 */
export function encodeGeometry(geometry: Geometry, srsId: number): { bytes: Uint8Array; envelope: Envelope } {
  const { wkb, envelope } = toWkb(geometry);
  const withEnvelope = envelope !== undefined && geometry.type !== "Point";
  const headerSize = 8 + (withEnvelope ? 32 : 0);
  const bytes = new Uint8Array(headerSize + wkb.length);
  const view = new DataView(bytes.buffer);
  bytes[0] = 0x47; // G
  bytes[1] = 0x50; // P
  bytes[2] = 0; // version 1
  bytes[3] = 0x01 | (withEnvelope ? 0x02 : 0) | (envelope === undefined ? 0x10 : 0);
  view.setInt32(4, srsId, true);
  if (withEnvelope) {
    view.setFloat64(8, envelope[0], true);
    view.setFloat64(16, envelope[2], true);
    view.setFloat64(24, envelope[1], true);
    view.setFloat64(32, envelope[3], true);
  }
  bytes.set(wkb, headerSize);
  return { bytes, envelope };
}
