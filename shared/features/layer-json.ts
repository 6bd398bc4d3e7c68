// The JSON of a feature service and its layer, as ArcGIS answers them and clients read them (QGIS filters
// layers on `capabilities`, GDAL pages by `maxRecordCount`, web maps draw with `drawingInfo`). A bulk-published
// FeatureServer serves one dataset: layer 0, or table 0 when the dataset has no geometry; a hosted service published
// from a file of several layers (shapefiles, GeoPackage tables) serves each at its id, layers and tables numbered
// together (0…n-1) as ArcGIS numbers them.
import type { Bounds, EsriGeometryType, LayerSchema } from "#shared/features/schema.ts";
import type { Service } from "#shared/stores/services.ts";
import { SERVER_REST_VERSION } from "#shared/urls.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { advertised, editingEnabled } from "#shared/features/capabilities.ts";
import { systemFields } from "#shared/features/schema.ts";
import { editorTrackingInfo, layerOwnershipJson } from "#shared/features/ownership.ts";

/** Rows a query answers at most in one page (GDAL and queryAllFeatures page by it). */
export const MAX_RECORD_COUNT = 2000;
/**
 * Rows a page answers with `resultType=standard` and `resultType=tile` (the ArcGIS Maps SDK draws by tiles of
 * quantized, generalized features, each far smaller than a full feature): ArcGIS's hosted-layer defaults for
 * lines and polygons. `maxRecordCountFactor` multiplies each, up to MAX_RECORD_COUNT_FACTOR.
 */
export const STANDARD_MAX_RECORD_COUNT = 4000;
export const TILE_MAX_RECORD_COUNT = 4000;

export const QUERY_FORMATS = "JSON, geoJSON, PBF";

export const SPATIAL_RELATIONSHIPS = [
  "esriSpatialRelIntersects",
  "esriSpatialRelContains",
  "esriSpatialRelCrosses",
  "esriSpatialRelEnvelopeIntersects",
  "esriSpatialRelOverlaps",
  "esriSpatialRelTouches",
  "esriSpatialRelWithin",
];

/** A spatial reference as ArcGIS writes it: Web Mercator keeps its old ESRI code beside the EPSG one. */
export function spatialReference(srid: number): { wkid: number; latestWkid: number } | Record<string, never> {
  if (srid === 0) return {};
  if (srid === 3857 || srid === 102100) return { wkid: 102100, latestWkid: 3857 };
  return { wkid: srid, latestWkid: srid };
}

export function extentJson(bounds: Bounds | undefined, srid: number) {
  const [xmin, ymin, xmax, ymax] = bounds ?? [null, null, null, null];
  return { xmin, ymin, xmax, ymax, spatialReference: spatialReference(srid) };
}

const isTable = (schema: LayerSchema) => !schema.geometry;

/** A simple renderer by geometry type: what a web map draws the layer with when it brings no style. */
function renderer(type: EsriGeometryType) {
  const outline = { type: "esriSLS", style: "esriSLSSolid", color: [51, 51, 51, 255], width: 0.75 };
  switch (type) {
    case "esriGeometryPoint":
    case "esriGeometryMultipoint":
      return {
        type: "simple",
        symbol: { type: "esriSMS", style: "esriSMSCircle", color: [0, 112, 255, 255], size: 6, outline },
      };
    case "esriGeometryPolyline":
      return {
        type: "simple",
        symbol: { type: "esriSLS", style: "esriSLSSolid", color: [0, 112, 255, 255], width: 1.5 },
      };
    case "esriGeometryPolygon":
      return {
        type: "simple",
        symbol: { type: "esriSFS", style: "esriSFSSolid", color: [0, 112, 255, 96], outline },
      };
  }
}

/**
 * Whether a service's layers are edited: a hosted service, or one published by reference from a PostgreSQL database
 * whose publisher turned editing on (shared/features/byref-enable.ts), whose capabilities include an edit.
 */
export const editable = (service: Service) =>
  (service.source?.datastoreId === HOSTED_STORE_ID ||
    (service.source !== undefined && "connection" in service.source)) &&
  editingEnabled(service);

/**
 * Whether a service's layers may carry ownership rules, and so say their editor tracking: hosted ones, and those read by
 * reference from a PostgreSQL database (their publisher names the tracking columns; until then the service says
 * tracking is off).
 */
const tracksOwnership = (service: Service) =>
  service.source !== undefined && (service.source.datastoreId === HOSTED_STORE_ID || "connection" in service.source);

/** The drawing tool an editor offers for a new feature of a geometry type (a table's records have none). */
const DRAWING_TOOLS: Readonly<Record<EsriGeometryType, string>> = {
  esriGeometryPoint: "esriFeatureEditToolPoint",
  esriGeometryMultipoint: "esriFeatureEditToolPoint",
  esriGeometryPolyline: "esriFeatureEditToolLine",
  esriGeometryPolygon: "esriFeatureEditToolPolygon",
};

/**
 * What an editable layer tells clients besides a read-only one's (the ArcGIS Maps SDK edits only a layer that says
 * so, and its Editor creates features from a template): what it takes, its global id and tracking fields, its last
 * edit (clients refresh when it moves), and one template for a new feature.
 */
function editingJson(service: Service, schema: LayerSchema) {
  const e = schema.editing;
  const system = systemFields(schema);
  // The tracking fields the layer records (a hosted layer's four; those its publisher named on a by-reference one).
  const named = {
    ...(e?.creationDateField ? { creationDateField: e.creationDateField } : {}),
    ...(e?.creatorField ? { creatorField: e.creatorField } : {}),
    ...(e?.editDateField ? { editDateField: e.editDateField } : {}),
    ...(e?.editorField ? { editorField: e.editorField } : {}),
  };
  const tracking = Object.keys(named).length > 0 ? { editFieldsInfo: named } : {};
  return {
    fields: schema.fields.map((f) => ({
      name: f.name,
      type: f.type,
      alias: f.alias,
      sqlType: "sqlTypeOther",
      ...(f.length !== undefined ? { length: f.length } : {}),
      nullable: f.nullable,
      // A by-reference column shown converted (boolean, uuid, JSON) is not written back.
      editable: !system.has(f.name.toLowerCase()) && f.convert === undefined,
      domain: null,
      defaultValue: null,
    })),
    globalIdField: e?.globalIdField ?? "",
    templates: [
      {
        name: schema.name,
        description: "",
        prototype: { attributes: {} },
        drawingTool: schema.geometry ? DRAWING_TOOLS[schema.geometry.type] : "esriFeatureEditToolNone",
      },
    ],
    capabilities: advertised(service),
    allowGeometryUpdates: true,
    supportsApplyEditsWithGlobalIds: e?.globalIdField !== undefined,
    supportsRollbackOnFailureParameter: true,
    editingInfo: { lastEditDate: e?.lastEditDate ?? service.created ?? null },
    ...tracking,
  };
}

/**
 * What a hosted view's service and layers say of themselves besides a layer's JSON, as ArcGIS's do: that they are a
 * view (not updatable: editing through views is not offered), and a layer's definition query.
 */
function viewJson(service: Service, id: number | undefined, schema?: LayerSchema) {
  if (!service.view) return {};
  const query = id === undefined ? undefined : (service.view.layers[id]?.definitionQuery ?? "");
  // The source's last edit: clients that refresh a layer when it moves see the source's edits through the view.
  const lastEditDate = schema?.editing?.lastEditDate;
  return {
    isView: true,
    isUpdatableView: false,
    sourceSchemaChangesAllowed: true,
    ...(query !== undefined ? { viewDefinitionQuery: query, definitionQuery: query } : {}),
    ...(lastEditDate !== undefined ? { editingInfo: { lastEditDate } } : {}),
  };
}

export function layerJson(service: Service, schema: LayerSchema, id = 0) {
  const base = { ...readOnlyLayerJson(service, schema, id), ...viewJson(service, id, schema) };
  // Who may query and edit others' features holds whether editing is on or off (queries are restricted too).
  const ownership = tracksOwnership(service) ? layerOwnershipJson(service, schema) : {};
  return editable(service) ? { ...base, ...editingJson(service, schema), ...ownership } : { ...base, ...ownership };
}

function readOnlyLayerJson(service: Service, schema: LayerSchema, id: number) {
  const g = schema.geometry;
  const srid = g?.srid ?? 0;
  return {
    currentVersion: SERVER_REST_VERSION,
    id,
    name: schema.name,
    type: isTable(schema) ? "Table" : "Feature Layer",
    parentLayer: null,
    subLayers: [],
    description: service.description,
    copyrightText: "",
    defaultVisibility: true,
    minScale: 0,
    maxScale: 0,
    ...(g
      ? {
          geometryType: g.type,
          sourceSpatialReference: spatialReference(srid),
          extent: extentJson(schema.extent, srid),
          drawingInfo: { renderer: renderer(g.type), transparency: 0, labelingInfo: null },
          geometryField: { name: g.column, type: "esriFieldTypeGeometry", alias: g.column, nullable: true },
          supportedSpatialRelationships: SPATIAL_RELATIONSHIPS,
        }
      : {}),
    hasZ: g?.hasZ ?? false,
    hasM: g?.hasM ?? false,
    hasAttachments: schema.attachments === true,
    // What a hosted layer's attachments keep and answer (all four properties, each listed and filtered by).
    ...(schema.attachments
      ? {
          attachmentProperties: ["name", "size", "contentType", "keywords"].map((name) => ({ name, isEnabled: true })),
          // Attachments come in the request that adds them (multipart, or applyEdits' base64 data): no Uploads.
          supportsAttachmentsByUploadId: false,
        }
      : {}),
    htmlPopupType: "esriServerHTMLPopupTypeAsHTMLText",
    objectIdField: schema.objectIdField,
    uniqueIdField: { name: schema.objectIdField, isSystemMaintained: true },
    globalIdField: "",
    displayField: schema.displayField,
    typeIdField: null,
    subtypeField: null,
    fields: schema.fields.map((f) => ({
      name: f.name,
      type: f.type,
      alias: f.alias,
      sqlType: "sqlTypeOther",
      ...(f.length !== undefined ? { length: f.length } : {}),
      nullable: f.nullable,
      editable: false,
      domain: null,
      defaultValue: null,
    })),
    indexes: [],
    types: [],
    templates: [],
    relationships: [],
    canModifyLayer: false,
    canScaleSymbols: false,
    hasLabels: false,
    capabilities: "Query",
    maxRecordCount: MAX_RECORD_COUNT,
    standardMaxRecordCount: STANDARD_MAX_RECORD_COUNT,
    tileMaxRecordCount: TILE_MAX_RECORD_COUNT,
    maxRecordCountFactor: 1,
    supportsStatistics: true,
    supportsAdvancedQueries: true,
    supportsCoordinatesQuantization: true,
    // A hosted layer takes rows of uploaded files (…/append): clients look for this before they append.
    ...(service.source?.datastoreId === HOSTED_STORE_ID
      ? { supportsAppend: true, supportedAppendFormats: "csv,geojson,shapefile,geoPackage" }
      : {}),
    supportedQueryFormats: QUERY_FORMATS,
    isDataVersioned: false,
    useStandardizedQueries: true,
    allowGeometryUpdates: false,
    advancedQueryCapabilities: {
      useStandardizedQueries: true,
      supportsStatistics: true,
      supportsHavingClause: true,
      supportsOrderBy: true,
      supportsDistinct: true,
      supportsCountDistinct: true,
      supportsPagination: true,
      supportsPaginationOnAggregatedQueries: true,
      supportsTrueCurve: false,
      supportsReturningQueryExtent: true,
      supportsQueryWithDistance: true,
      supportsSqlExpression: false,
      supportsOutFieldSQLExpression: false,
      supportsQueryWithResultType: true,
      supportsMaxRecordCountFactor: true,
      supportsQuantizationEditMode: true,
      supportsReturningGeometryCentroid: false,
      supportsPercentileStatistics: true,
      ...(schema.attachments ? { supportsQueryAttachments: true, supportsQueryAttachmentsWithReturnUrl: true } : {}),
    },
    serviceItemId: service.itemId,
  };
}

/** The service's entry for a layer or table in `layers`/`tables`. */
function entry(schema: LayerSchema, id: number) {
  return {
    id,
    name: schema.name,
    parentLayerId: -1,
    defaultVisibility: true,
    subLayerIds: null,
    minScale: 0,
    maxScale: 0,
    type: isTable(schema) ? "Table" : "Feature Layer",
    ...(schema.geometry ? { geometryType: schema.geometry.type } : {}),
  };
}

/** The extent of every layer in the first geometry layer's system (hosted layers share one: WGS 84). */
function unionExtent(schemas: readonly (LayerSchema | undefined)[], srid: number) {
  let union: [number, number, number, number] | undefined;
  for (const s of schemas) {
    const e = s?.extent;
    if (!s || !e || (s.geometry?.srid ?? 0) !== srid) continue;
    union = union
      ? [Math.min(union[0], e[0]), Math.min(union[1], e[1]), Math.max(union[2], e[2]), Math.max(union[3], e[3])]
      : [e[0], e[1], e[2], e[3]];
  }
  return union;
}

/**
 * The service's JSON from its layers' schemas, by id (undefined at a deleted layer's id). A service with no layers
 * yet (defined by its clients) is in WGS 84, as hosted data is kept.
 */
export function featureServiceJson(service: Service, schemas: readonly (LayerSchema | undefined)[]) {
  const srid = schemas.find((s) => s?.geometry)?.geometry?.srid ?? (schemas.some((s) => s) ? 0 : 4326);
  const extent = extentJson(unionExtent(schemas, srid), srid);
  return {
    currentVersion: SERVER_REST_VERSION,
    serviceDescription: service.description,
    description: service.description,
    copyrightText: "",
    hasVersionedData: false,
    hasStaticData: true,
    supportsDisconnectedEditing: false,
    syncEnabled: false,
    supportsApplyEditsWithGlobalIds: false,
    capabilities: "Query",
    maxRecordCount: MAX_RECORD_COUNT,
    supportedQueryFormats: QUERY_FORMATS,
    spatialReference: spatialReference(srid),
    initialExtent: extent,
    fullExtent: extent,
    units: srid === 4326 || srid === 4269 || srid === 4258 ? "esriDecimalDegrees" : "esriMeters",
    allowGeometryUpdates: false,
    layers: schemas.flatMap((s, id) => (!s || isTable(s) ? [] : [entry(s, id)])),
    tables: schemas.flatMap((s, id) => (s && isTable(s) ? [entry(s, id)] : [])),
    serviceItemId: service.itemId,
    ...(tracksOwnership(service) ? { editorTrackingInfo: editorTrackingInfo(service) } : {}),
    ...viewJson(service, undefined),
    ...(editable(service)
      ? {
          capabilities: advertised(service),
          allowGeometryUpdates: true,
          supportsApplyEditsWithGlobalIds: schemas.some((s) => s?.editing?.globalIdField !== undefined),
        }
      : {}),
  };
}

/** `FeatureServer/layers`: every layer's and table's full JSON. */
export function layersJson(service: Service, schemas: readonly (LayerSchema | undefined)[]) {
  return {
    layers: schemas.flatMap((s, id) => (!s || isTable(s) ? [] : [layerJson(service, s, id)])),
    tables: schemas.flatMap((s, id) => (s && isTable(s) ? [layerJson(service, s, id)] : [])),
  };
}
