// A query's answer in each output format, rendered once from the rows of the page: Esri JSON (the feature
// set ArcGIS clients read), GeoJSON (RFC 7946, with `exceededTransferLimit` where GDAL reads it) and the PBF
// FeatureCollection (quantized coordinates). HTML is the pipeline's rendering of the JSON answer.
import { toEsriGeometry, toRfc7946 } from "#shared/features/geometry/esri-json.ts";
import { encodeCount, encodeFeatureCollection, encodeIds } from "#shared/features/geometry/pbf.ts";
import { extentJson, spatialReference } from "#shared/features/layer-json.ts";
import type { Bounds, EsriGeometryType, FeatureRow, Field, LayerSchema } from "#shared/features/schema.ts";
import { badRequest } from "#shared/http/errors.ts";
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
      /** Present when the features carry geometry: its type and the spatial reference it is in. */
      readonly geometry?: { readonly type: EsriGeometryType; readonly srid: number };
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
      return {
        objectIdFieldName: a.schema.objectIdField,
        uniqueIdField: { name: a.schema.objectIdField, isSystemMaintained: true },
        globalIdFieldName: "",
        ...(g ? { geometryType: g.type, spatialReference: spatialReference(g.srid), ...dims } : {}),
        fields: a.fields.map(fieldJson),
        features: a.features.map((f) =>
          g
            ? { attributes: f.attributes, geometry: toEsriGeometry(f.geometry ?? null, g.type, dims) }
            : { attributes: f.attributes },
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
      return encodeFeatureCollection({
        objectIdFieldName: a.schema.objectIdField,
        uniqueIdField: { name: a.schema.objectIdField, isSystemMaintained: true },
        ...(g ? { geometryType: g.type, spatialReference: spatialReference(g.srid) as { wkid: number } } : {}),
        hasZ: false,
        hasM: false,
        exceededTransferLimit: a.exceededTransferLimit,
        fields: a.fields.map((f) => ({ name: f.name, type: f.type, alias: f.alias })),
        features: g ? a.features : a.features.map((f) => ({ attributes: f.attributes })),
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
