// A query's answer in each output format, rendered once from the rows of the page: Esri JSON (the feature
// set ArcGIS clients read), GeoJSON (RFC 7946, with `exceededTransferLimit` where GDAL reads it), the PBF
// FeatureCollection (quantized coordinates) and HTML (the result shown below the query form of layer-html.ts).
import { type EsriGeometry, toEsriGeometry, toRfc7946 } from "#shared/features/geometry/esri-json.ts";
import { encodeCount, encodeFeatureCollection, encodeIds, type Quantization } from "#shared/features/geometry/pbf.ts";
import { xyResolution } from "#shared/features/geometry/projection.ts";
import { type QuantizationGrid, quantizeEsriGeometry, transformJson } from "#shared/features/geometry/quantize.ts";
import { extentJson, spatialReference } from "#shared/features/layer-json.ts";
import type { Bounds, EsriGeometryType, FeatureRow, Field, LayerSchema } from "#shared/features/schema.ts";
import { badRequest } from "#shared/errors.ts";
import { escapeHtml } from "#shared/http/html.ts";
import { Content } from "#shared/http/render.ts";

export type QueryAnswer =
  | { readonly kind: "count"; readonly count: number }
  | { readonly kind: "ids"; readonly objectIdFieldName: string; readonly ids: readonly number[] }
  | { readonly kind: "extent"; readonly bounds: Bounds | undefined; readonly srid: number; readonly count?: number }
  | {
      readonly kind: "features";
      readonly schema: LayerSchema;
      readonly fields: readonly Omit<Field, "column">[];
      readonly features: readonly FeatureRow[];
      readonly exceededTransferLimit: boolean;
      /**
       * Present when the features carry geometry: its type, the spatial reference it is in, and the grid
       * quantizationParameters asked for (f=json and f=pbf answer on it; GeoJSON never asks for one).
       */
      readonly geometry?: {
        readonly type: EsriGeometryType;
        readonly srid: number;
        readonly quantization?: QuantizationGrid;
      };
    };

const fieldJson = (f: Omit<Field, "column">) => ({
  name: f.name,
  type: f.type,
  alias: f.alias,
  sqlType: "sqlTypeOther",
  ...(f.length !== undefined ? { length: f.length } : {}),
  domain: null,
  defaultValue: null,
});

function esriJson(a: QueryAnswer): object {
  switch (a.kind) {
    case "count":
      return { count: a.count };
    case "ids":
      return { objectIdFieldName: a.objectIdFieldName, objectIds: a.ids };
    case "extent":
      return { extent: extentJson(a.bounds, a.srid), ...(a.count !== undefined ? { count: a.count } : {}) };
    case "features": {
      const g = a.geometry;
      const dims = { hasZ: a.schema.geometry?.hasZ ?? false, hasM: false };
      const grid = g?.quantization;
      const geometry = (f: FeatureRow) => {
        const esri = toEsriGeometry(f.geometry ?? null, (g as NonNullable<typeof g>).type, dims);
        return esri && grid ? quantizeEsriGeometry(esri, grid) : esri;
      };
      return {
        objectIdFieldName: a.schema.objectIdField,
        uniqueIdField: { name: a.schema.objectIdField, isSystemMaintained: true },
        globalIdFieldName: "",
        ...(g ? { geometryType: g.type, spatialReference: spatialReference(g.srid), ...dims } : {}),
        // As ArcGIS answers quantized features: the grid beside them, their coordinates cells of it.
        ...(grid ? { transform: transformJson(grid) } : {}),
        fields: a.fields.map(fieldJson),
        features: a.features.map((f) =>
          g ? { attributes: f.attributes, geometry: geometry(f) } : { attributes: f.attributes },
        ),
        exceededTransferLimit: a.exceededTransferLimit,
      };
    }
  }
}

function geoJson(a: QueryAnswer): object {
  switch (a.kind) {
    case "count":
    case "ids":
      return esriJson(a);
    case "extent":
      // What GDAL asks with returnExtentOnly&f=geojson: the bounding box in WGS 84.
      return { ...(a.bounds ? { bbox: [...a.bounds] } : {}), ...(a.count !== undefined ? { count: a.count } : {}) };
    case "features":
      return {
        type: "FeatureCollection",
        features: a.features.map((f) => {
          const id = f.attributes[a.schema.objectIdField];
          return {
            type: "Feature",
            ...(typeof id === "number" ? { id } : {}),
            geometry: f.geometry ? toRfc7946(f.geometry) : null,
            properties: f.attributes,
          };
        }),
        // GDAL's ESRIJSON/GeoJSON readers page on this member.
        properties: { exceededTransferLimit: a.exceededTransferLimit },
      };
  }
}

function pbf(a: QueryAnswer): Uint8Array {
  switch (a.kind) {
    case "count":
      return encodeCount(a.count);
    case "ids":
      return encodeIds(a.objectIdFieldName, a.ids);
    case "extent":
      // The FeatureCollection message this encoder writes has no extent result.
      throw badRequest("Unable to complete operation.", [
        "'returnExtentOnly' parameter is invalid",
        "An extent is answered as f=json or f=geojson, not f=pbf.",
      ]);
    case "features": {
      const g = a.geometry;
      const grid = g?.quantization;
      // With quantizationParameters, their grid (its origin corner is the translate). Without, the grid is the
      // coordinate system's resolution from the page's own corner, as ArcGIS's own: the answer is as exact as the
      // JSON one to within a tolerance clients ignore, and its transform says where it lies.
      const tolerance = g ? xyResolution(g.srid) : undefined;
      const quantization: Quantization | undefined = grid ? { grid } : tolerance ? { tolerance } : undefined;
      return encodeFeatureCollection({
        objectIdFieldName: a.schema.objectIdField,
        uniqueIdField: { name: a.schema.objectIdField, isSystemMaintained: true },
        ...(g ? { geometryType: g.type, spatialReference: spatialReference(g.srid) as { wkid: number } } : {}),
        hasZ: false,
        hasM: false,
        exceededTransferLimit: a.exceededTransferLimit,
        fields: a.fields.map((f) => ({ name: f.name, type: f.type, alias: f.alias })),
        features: g ? a.features : a.features.map((f) => ({ attributes: f.attributes })),
        ...(quantization ? { quantization } : {}),
      });
    }
  }
}

/** The answer in the requested format: JSON data for the pipeline to render, or content as bytes. */
export function renderAnswer(a: QueryAnswer, contentFormat: string | undefined): object {
  if (contentFormat === "geojson")
    return new Content(Buffer.from(JSON.stringify(geoJson(a))), "application/geo+json; charset=utf-8");
  if (contentFormat === "pbf") {
    const bytes = pbf(a);
    return new Content(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), "application/x-protobuf");
  }
  return esriJson(a);
}

const muted = (text: string) => `<span class="muted">${escapeHtml(text)}</span>`;
const row = (name: string, value: string) => `<tr><th>${escapeHtml(name)}</th><td>${value}</td></tr>`;

/** A spatial reference as ArcGIS's pages show one: `wkid (latestWkid)`. */
export function spatialReferenceHtml(sr: ReturnType<typeof spatialReference>): string {
  return "wkid" in sr ? escapeHtml(`${sr.wkid} (${sr.latestWkid})`) : muted("unknown");
}

/** An extent as ArcGIS's pages show one: its corners and its spatial reference. */
export function extentHtml(extent: ReturnType<typeof extentJson>): string {
  const corner = (v: number | null) => (v === null ? muted("null") : escapeHtml(String(v)));
  return (
    `<table class="extent">${row("XMin", corner(extent.xmin))}${row("YMin", corner(extent.ymin))}` +
    `${row("XMax", corner(extent.xmax))}${row("YMax", corner(extent.ymax))}` +
    `${row("Spatial Reference", spatialReferenceHtml(extent.spatialReference))}</table>`
  );
}

/** An attribute as a person reads it: dates (epoch milliseconds on the wire) in ISO 8601, UTC. */
function attributeHtml(value: string | number | null, type: string): string {
  if (value === null) return muted("null");
  if (type === "esriFieldTypeDate" && typeof value === "number" && Number.isFinite(value)) {
    const date = new Date(value);
    if (!Number.isNaN(date.getTime())) return escapeHtml(date.toISOString());
  }
  return escapeHtml(String(value));
}

const counted = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * A feature's geometry in one line, as its f=json answer holds it: a point's coordinates, or how many parts and
 * vertices a shape has (a page of polygons written out in full would bury its attributes).
 */
function geometryHtml(g: EsriGeometry | null): string {
  if (g === null) return muted("null");
  if ("x" in g) return escapeHtml(`Point (${[g.x, g.y, ...(g.z !== undefined ? [g.z] : [])].join(", ")})`);
  if ("points" in g) return escapeHtml(`Multipoint: ${counted(g.points.length, "point")}`);
  const [kind, parts, part]: [string, number[][][], string] =
    "paths" in g ? ["Polyline", g.paths, "path"] : ["Polygon", g.rings, "ring"];
  const vertices = parts.reduce((n, p) => n + p.length, 0);
  return escapeHtml(`${kind}: ${counted(parts.length, part)}, ${counted(vertices, "vertex", "vertices")}`);
}

/** The answer as HTML: the count, the ids, the extent, or the page of features as a table. */
export function answerHtml(a: QueryAnswer): string {
  switch (a.kind) {
    case "count":
      return `<table class="answer">${row("Count", escapeHtml(String(a.count)))}</table>`;
    case "ids":
      return (
        `<table class="answer">${row("Object ID Field", escapeHtml(a.objectIdFieldName))}` +
        `${row("Object IDs", a.ids.length === 0 ? muted("(none)") : escapeHtml(a.ids.join(", ")))}` +
        `${row("Count", escapeHtml(String(a.ids.length)))}</table>`
      );
    case "extent":
      return (
        (a.count !== undefined ? `<table class="answer">${row("Count", escapeHtml(String(a.count)))}</table>` : "") +
        `<h3>Extent</h3>${extentHtml(extentJson(a.bounds, a.srid))}`
      );
    case "features": {
      const g = a.geometry;
      const dims = { hasZ: a.schema.geometry?.hasZ ?? false, hasM: false };
      const head = [...a.fields.map((f) => escapeHtml(f.name)), ...(g ? ["Geometry"] : [])];
      const rows = a.features.map((f) => {
        const cells = a.fields.map((field) => attributeHtml(f.attributes[field.name] ?? null, field.type));
        if (g) cells.push(geometryHtml(toEsriGeometry(f.geometry ?? null, g.type, dims)));
        return `<tr>${cells.map((c) => `<td>${c}</td>`).join("")}</tr>`;
      });
      const limit = a.exceededTransferLimit
        ? "exceededTransferLimit: true — more features match than this page holds."
        : "exceededTransferLimit: false — no more features match.";
      const summary =
        `<table class="answer">${row("Features", escapeHtml(String(a.features.length)))}` +
        (g
          ? `${row("Geometry Type", escapeHtml(g.type))}${row("Spatial Reference", spatialReferenceHtml(spatialReference(g.srid)))}`
          : "") +
        `</table><p class="limit">${escapeHtml(limit)}</p>`;
      const table =
        a.features.length === 0
          ? `<p>${muted("No features match.")}</p>`
          : `<table class="features"><tr>${head.map((h) => `<th>${h}</th>`).join("")}</tr>${rows.join("")}</table>`;
      return summary + table;
    }
  }
}
