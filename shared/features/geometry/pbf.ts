// `f=pbf`: Esri's FeatureCollection protobuf (esriPBuffer.FeatureCollectionPBuffer, FeatureCollection.proto),
// written with pbf straight into one buffer per page: no intermediate object tree of the message.
//
// Field numbers (checked against two independent decoders, arcgis-pbf-parser and the one in
// @esri/arcgis-rest-feature-service):
//   FeatureCollectionPBuffer: version 1, queryResult 2
//   QueryResult: featureResult 1, countResult 2, idsResult 3
//   FeatureResult: objectIdFieldName 1, uniqueIdField 2, globalIdFieldName 3, geohashFieldName 4,
//     geometryProperties 5, serverGens 6, geometryType 7, spatialReference 8, exceededTransferLimit 9, hasZ 10,
//     hasM 11, transform 12, fields 13, values 14, features 15
//   SpatialReference: wkid 1, lastestWkid 2, vcsWkid 3, latestVcsWkid 4, wkt 5
//   Transform: quantizeOriginPostion 1 (upperLeft 0, lowerLeft 1), scale 2, translate 3; Scale/Translate: x 1, y 2,
//     m 3, z 4
//   Field: name 1, fieldType 2, alias 3, sqlType 4, domain 5, defaultValue 6
//   Feature: attributes 1, geometry 2, shapeBuffer 3, centroid 4
//   Geometry: lengths 2 (packed uint32), coords 3 (packed sint64)
//   Value: string 1, float 2, double 3, sint 4, uint 5, int64 6, uint64 7, sint64 8, bool 9
//   CountResult: count 1; ObjectIdsResult: objectIdFieldName 1, serverGens 2, objectIds 3 (packed uint64)
//
// Coordinates are always quantized, on the grid quantize.ts describes: x = round((X - translateX) / scaleX) and,
// from an upper-left origin, y = round((translateY - Y) / scaleY) (y grows downwards; from a lower-left one,
// y = round((Y - translateY) / scaleY)). The first vertex of each part is absolute, the rest are deltas from the
// previous vertex: decoders restart at every part. Polygon outer rings are
// clockwise and holes counter-clockwise in map coordinates (the decoders group rings by that orientation).
// Attributes are positional: one Value per field, in the order of `fields`; an empty Value is null.
import { PbfWriter } from "pbf";
import type { Geometry } from "geojson";
import type { Bounds, EsriFieldType, EsriGeometryType, FeatureRow } from "#shared/features/schema.ts";
import { geometryBounds } from "./bounds.ts";
import { toEsriGeometry } from "./esri-json.ts";
import { cellX, cellY, gridOf, minimumCells, type QuantizationGrid, quantizePart } from "./quantize.ts";

const GEOMETRY_TYPE: Readonly<Record<EsriGeometryType, number>> = {
  esriGeometryPoint: 0,
  esriGeometryMultipoint: 1,
  esriGeometryPolyline: 2,
  esriGeometryPolygon: 3,
};
const GEOMETRY_NONE = 127;

const FIELD_TYPE: Readonly<Record<EsriFieldType, number>> = {
  esriFieldTypeSmallInteger: 0,
  esriFieldTypeInteger: 1,
  esriFieldTypeSingle: 2,
  esriFieldTypeDouble: 3,
  esriFieldTypeString: 4,
  esriFieldTypeDate: 5,
  esriFieldTypeOID: 6,
  esriFieldTypeBlob: 8,
  esriFieldTypeGUID: 10,
  esriFieldTypeGlobalID: 11,
  esriFieldTypeBigInteger: 13,
  esriFieldTypeDateOnly: 14,
};
const SQL_TYPE_OTHER = 16;

export interface PbfField {
  readonly name: string;
  readonly type: EsriFieldType;
  readonly alias?: string;
}

export interface Quantization {
  /** The grid `quantizationParameters` asked for; when given, extent and tolerance are not read. */
  readonly grid?: QuantizationGrid;
  /** The extent whose upper left is the grid's origin; default: the page's own bounds. */
  readonly extent?: Bounds;
  /** The size of one grid step in map units; default: the extent / 1e9. */
  readonly tolerance?: number;
  /** The size of one step of z (default a millimetre in metres). */
  readonly zTolerance?: number;
}

export interface FeatureCollectionPage {
  readonly objectIdFieldName: string;
  readonly uniqueIdField?: { readonly name: string; readonly isSystemMaintained: boolean };
  readonly globalIdFieldName?: string;
  /** Absent for a table: features carry no geometry. */
  readonly geometryType?: EsriGeometryType;
  readonly spatialReference?: { readonly wkid: number; readonly latestWkid?: number };
  readonly hasZ?: boolean;
  readonly hasM?: boolean;
  readonly exceededTransferLimit: boolean;
  readonly fields: readonly PbfField[];
  /** Attributes by field name; geometry in the output spatial reference. */
  readonly features: readonly FeatureRow[];
  readonly quantization?: Quantization;
}

interface Grid extends QuantizationGrid {
  readonly sz: number;
  readonly hasZ: boolean;
}

function pageBounds(features: readonly FeatureRow[]): Bounds | undefined {
  let b: [number, number, number, number] | undefined;
  for (const f of features) {
    const fb = f.geometry ? geometryBounds(f.geometry) : undefined;
    if (!fb) continue;
    if (!b) b = [...fb];
    else {
      b[0] = Math.min(b[0], fb[0]);
      b[1] = Math.min(b[1], fb[1]);
      b[2] = Math.max(b[2], fb[2]);
      b[3] = Math.max(b[3], fb[3]);
    }
  }
  return b;
}

function grid(page: FeatureCollectionPage): Grid {
  const q = page.quantization ?? {};
  return {
    ...(q.grid ?? ownGrid(page, q)),
    sz: q.zTolerance && q.zTolerance > 0 ? q.zTolerance : 0.001,
    hasZ: page.hasZ ?? false,
  };
}

/** The grid of a page that asked for none: from the upper left of the given extent, else of the page's bounds. */
function ownGrid(page: FeatureCollectionPage, q: Quantization): QuantizationGrid {
  const extent = q.extent ?? pageBounds(page.features) ?? [0, 0, 0, 0];
  const span = Math.max(extent[2] - extent[0], extent[3] - extent[1]);
  const tolerance = q.tolerance && q.tolerance > 0 ? q.tolerance : span > 0 ? span / 1e9 : 1e-9;
  return gridOf(extent, tolerance, "upperLeft");
}

/** One path or ring quantized and delta-coded onto `coords` (z, when the page has it, delta-coded beside). */
function encodePart(part: readonly number[][], g: Grid, coords: number[]): number {
  let pz = 0;
  return quantizePart(part, g, (dx, dy, p, first) => {
    coords.push(dx, dy);
    if (g.hasZ) {
      const z = Math.round((p[2] ?? 0) / g.sz);
      coords.push(first ? z : z - pz);
      pz = z;
    }
  });
}

interface EncodedGeometry {
  readonly lengths: number[];
  readonly coords: number[];
}

function encodeGeometry(geometry: Geometry, type: EsriGeometryType, g: Grid): EncodedGeometry | null {
  const esri = toEsriGeometry(geometry, type, { hasZ: g.hasZ });
  if (!esri) return null;
  const coords: number[] = [];
  const lengths: number[] = [];
  if ("x" in esri) {
    encodePart([[esri.x, esri.y, ...(esri.z !== undefined ? [esri.z] : [])]], g, coords);
    return { lengths, coords };
  }
  if ("points" in esri) {
    // Multipoint members are not a path: every point is kept even when two share a grid cell.
    let px = 0;
    let py = 0;
    let pz = 0;
    esri.points.forEach((p, i) => {
      const x = cellX(g, p[0] as number);
      const y = cellY(g, p[1] as number);
      const z = g.hasZ ? Math.round((p[2] ?? 0) / g.sz) : 0;
      coords.push(i ? x - px : x, i ? y - py : y);
      if (g.hasZ) coords.push(i ? z - pz : z);
      px = x;
      py = y;
      pz = z;
    });
    lengths.push(esri.points.length);
    return { lengths, coords };
  }
  const parts = "paths" in esri ? esri.paths : esri.rings;
  const closed = "rings" in esri;
  for (const part of parts) {
    const before = coords.length;
    const n = encodePart(part, g, coords);
    // A part the grid collapses (a ring under four vertices, a path under two) is left out.
    if (n < minimumCells(closed)) coords.length = before;
    else lengths.push(n);
  }
  return lengths.length ? { lengths, coords } : null;
}

type Value = string | number | boolean | null | undefined;

function writeValue(v: Value, type: EsriFieldType, pbf: PbfWriter): void {
  if (v === null || v === undefined) return;
  if (typeof v === "boolean") return pbf.writeBooleanField(9, v);
  if (typeof v === "string") {
    const n = type === "esriFieldTypeString" || type === "esriFieldTypeGUID" ? NaN : Number(v);
    if (v === "" || !Number.isFinite(n)) return pbf.writeStringField(1, v);
    v = n;
  }
  switch (type) {
    case "esriFieldTypeString":
    case "esriFieldTypeGUID":
    case "esriFieldTypeDateOnly":
    case "esriFieldTypeBlob":
      return pbf.writeStringField(1, String(v));
    case "esriFieldTypeSingle":
      return pbf.writeFloatField(2, v);
    case "esriFieldTypeDouble":
      return pbf.writeDoubleField(3, v);
    default:
      if (!Number.isSafeInteger(v)) return pbf.writeDoubleField(3, v);
      if (type === "esriFieldTypeOID" && v >= 0) return pbf.writeVarintField(5, v);
      if ((type === "esriFieldTypeInteger" || type === "esriFieldTypeSmallInteger") && Math.abs(v) < 2 ** 31)
        return pbf.writeSVarintField(4, v);
      return pbf.writeSVarintField(8, v);
  }
}

function writeFeature(row: FeatureRow, page: FeatureCollectionPage, g: Grid | undefined, pbf: PbfWriter): void {
  for (const field of page.fields)
    pbf.writeMessage(1, (v: Value, w: PbfWriter) => writeValue(v, field.type, w), row.attributes[field.name]);
  if (g && page.geometryType && row.geometry) {
    const encoded = encodeGeometry(row.geometry, page.geometryType, g);
    if (encoded)
      pbf.writeMessage(
        2,
        (e: EncodedGeometry, w: PbfWriter) => {
          w.writePackedVarint(2, e.lengths);
          w.writePackedSVarint(3, e.coords);
        },
        encoded,
      );
  }
}

function writeFeatureResult(page: FeatureCollectionPage, pbf: PbfWriter): void {
  const g = page.geometryType ? grid(page) : undefined;
  pbf.writeStringField(1, page.objectIdFieldName);
  if (page.uniqueIdField) {
    const u = page.uniqueIdField;
    pbf.writeMessage(
      2,
      (_: null, w: PbfWriter) => {
        w.writeStringField(1, u.name);
        w.writeBooleanField(2, u.isSystemMaintained);
      },
      null,
    );
  }
  if (page.globalIdFieldName) pbf.writeStringField(3, page.globalIdFieldName);
  pbf.writeVarintField(7, page.geometryType ? GEOMETRY_TYPE[page.geometryType] : GEOMETRY_NONE);
  if (page.spatialReference) {
    const sr = page.spatialReference;
    pbf.writeMessage(
      8,
      (_: null, w: PbfWriter) => {
        w.writeVarintField(1, sr.wkid);
        if (sr.latestWkid) w.writeVarintField(2, sr.latestWkid);
      },
      null,
    );
  }
  pbf.writeBooleanField(9, page.exceededTransferLimit);
  if (page.hasZ) pbf.writeBooleanField(10, true);
  if (page.hasM) pbf.writeBooleanField(11, true);
  if (g) {
    pbf.writeMessage(
      12,
      (_: null, w: PbfWriter) => {
        w.writeVarintField(1, g.originPosition === "upperLeft" ? 0 : 1);
        w.writeMessage(
          2,
          (_: null, s: PbfWriter) => {
            s.writeDoubleField(1, g.sx);
            s.writeDoubleField(2, g.sy);
            if (g.hasZ) s.writeDoubleField(4, g.sz);
          },
          null,
        );
        w.writeMessage(
          3,
          (_: null, t: PbfWriter) => {
            t.writeDoubleField(1, g.tx);
            t.writeDoubleField(2, g.ty);
            if (g.hasZ) t.writeDoubleField(4, 0);
          },
          null,
        );
      },
      null,
    );
  }
  for (const field of page.fields)
    pbf.writeMessage(
      13,
      (f: PbfField, w: PbfWriter) => {
        w.writeStringField(1, f.name);
        w.writeVarintField(2, FIELD_TYPE[f.type]);
        w.writeStringField(3, f.alias ?? f.name);
        w.writeVarintField(4, SQL_TYPE_OTHER);
      },
      field,
    );
  for (const row of page.features) pbf.writeMessage(15, (r: FeatureRow, w) => writeFeature(r, page, g, w), row);
}

function wrap(resultTag: 1 | 2 | 3, write: (pbf: PbfWriter) => void): Uint8Array {
  const pbf = new PbfWriter();
  pbf.writeMessage(
    2,
    (_: null, q: PbfWriter) => q.writeMessage(resultTag, (_: null, r: PbfWriter) => write(r), null),
    null,
  );
  return pbf.finish();
}

/** A page of features as a FeatureCollection message. */
export const encodeFeatureCollection = (page: FeatureCollectionPage): Uint8Array =>
  wrap(1, (pbf) => writeFeatureResult(page, pbf));

/** `returnCountOnly=true&f=pbf`. */
export const encodeCount = (count: number): Uint8Array => wrap(2, (pbf) => pbf.writeVarintField(1, count));

/** `returnIdsOnly=true&f=pbf` (object ids are non-negative integers). */
export const encodeIds = (objectIdFieldName: string, ids: readonly number[]): Uint8Array =>
  wrap(3, (pbf) => {
    pbf.writeStringField(1, objectIdFieldName);
    pbf.writePackedVarint(3, ids as number[]);
  });
