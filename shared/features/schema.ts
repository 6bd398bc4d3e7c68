// What a dataset is, as a feature layer tells it: its fields (with the Esri field types clients read), its
// object id (the dataset's own single-column integer key), and its geometry column. Readers (GeoPackage,
// PostGIS) describe a dataset as a LayerSchema; the query plan checks field names against it and each SQL
// emitter quotes the source columns it names. Geometry inside mapgate is GeoJSON geometry (RFC 7946 shapes,
// any coordinate system): the libraries that project and test it speak it, and every output format is
// rendered from it.
import type { Geometry } from "geojson";

export const ESRI_FIELD_TYPES = [
  "esriFieldTypeOID",
  "esriFieldTypeSmallInteger",
  "esriFieldTypeInteger",
  "esriFieldTypeBigInteger",
  "esriFieldTypeSingle",
  "esriFieldTypeDouble",
  "esriFieldTypeString",
  "esriFieldTypeDate",
  "esriFieldTypeDateOnly",
  "esriFieldTypeGUID",
  "esriFieldTypeGlobalID",
  "esriFieldTypeBlob",
] as const;
export type EsriFieldType = (typeof ESRI_FIELD_TYPES)[number];

export interface Field {
  /** The name clients see and use in `where`, `outFields`, `orderByFields` (case-insensitive on input). */
  readonly name: string;
  readonly type: EsriFieldType;
  readonly alias: string;
  /** Strings: the declared length, when the source declares one. */
  readonly length?: number;
  readonly nullable: boolean;
  /** The column in the source table (the same as `name` today; kept apart so emitters never quote a name). */
  readonly column: string;
  /**
   * How the column's own type becomes the field's, where the source holds a type the wire has not: a boolean as
   * a SmallInteger 0/1, a uuid as a GUID (`{XXXXXXXX-…}`, as ArcGIS writes them), JSON as its text. Every use of
   * the field (answers, `where`, order, statistics) reads it through the same conversion.
   */
  readonly convert?: "boolean" | "guid" | "text";
}

export const GEOMETRY_TYPES = [
  "esriGeometryPoint",
  "esriGeometryMultipoint",
  "esriGeometryPolyline",
  "esriGeometryPolygon",
] as const;
export type EsriGeometryType = (typeof GEOMETRY_TYPES)[number];

/** The layer geometry type of an OGC geometry type name (GeoPackage's and PostGIS's); undefined for mixed ones. */
export const esriGeometryTypeOf = (name: string): EsriGeometryType | undefined =>
  OGC_GEOMETRY_TYPES[name.toUpperCase()];

const OGC_GEOMETRY_TYPES: Readonly<Record<string, EsriGeometryType>> = {
  POINT: "esriGeometryPoint",
  MULTIPOINT: "esriGeometryMultipoint",
  LINESTRING: "esriGeometryPolyline",
  MULTILINESTRING: "esriGeometryPolyline",
  CURVE: "esriGeometryPolyline",
  MULTICURVE: "esriGeometryPolyline",
  POLYGON: "esriGeometryPolygon",
  MULTIPOLYGON: "esriGeometryPolygon",
  SURFACE: "esriGeometryPolygon",
  MULTISURFACE: "esriGeometryPolygon",
  CURVEPOLYGON: "esriGeometryPolygon",
};

export interface GeometryColumn {
  readonly column: string;
  readonly type: EsriGeometryType;
  readonly hasZ: boolean;
  readonly hasM: boolean;
  /** The EPSG code of the stored coordinates (0 when undefined, as GeoPackage says of unknown ones). */
  readonly srid: number;
  /** The spatial index to narrow by before the exact test: a GeoPackage R*Tree table, or PostGIS's GiST. */
  readonly index?: string;
}

/** [xmin, ymin, xmax, ymax] in the dataset's own coordinates. */
export type Bounds = readonly [number, number, number, number];

export interface LayerSchema {
  /** The dataset's name (a GeoPackage table, or `schema.table` in PostgreSQL). */
  readonly name: string;
  /** The table to read, as the dialect names it (emitters quote each part). */
  readonly table: readonly string[];
  readonly fields: readonly Field[];
  /** The field holding the object id (its type is esriFieldTypeOID). */
  readonly objectIdField: string;
  /** The field a client shows as the feature's label (the first string field, else the object id). */
  readonly displayField: string;
  /** Absent for a table without geometry. */
  readonly geometry?: GeometryColumn;
  /** The extent the source declares or the index gives; absent when unknown or empty. */
  readonly extent?: Bounds;
  /** What its data records of its editing (a hosted layer's `mapgate_editing` row); absent when nothing is. */
  readonly editing?: LayerEditing;
  /** A hosted layer that keeps attachments: its `<table>__ATTACH` table is there (shared/features/sql/attachments.ts). */
  readonly attachments?: boolean;
}

/**
 * A layer's editing as its data records it (a hosted layer's `mapgate_editing` table, in its GeoPackage or its
 * service's schema), never guessed from field names: its global id field and editor-tracking fields (absent in a
 * layer made before they were), and when it was last edited.
 */
export interface LayerEditing {
  readonly globalIdField?: string;
  readonly creatorField?: string;
  readonly creationDateField?: string;
  readonly editorField?: string;
  readonly editDateField?: string;
  /** When an edit was last committed (ms); absent before the first. */
  readonly lastEditDate?: number;
}

/** The columns of the `mapgate_editing` table (both stores), in the order its statements name them. */
export const EDITING_TABLE = "mapgate_editing";

/**
 * A `mapgate_editing` row as read (either store: `global_id_field`, `creator_field`, `creation_date_field`,
 * `editor_field`, `edit_date_field`, `last_edit`), each name kept only when it is text.
 */
export function editingOf(row: Readonly<Record<string, unknown>>): LayerEditing {
  const name = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
  const last = Number(row.last_edit ?? Number.NaN);
  const e = {
    globalIdField: name(row.global_id_field),
    creatorField: name(row.creator_field),
    creationDateField: name(row.creation_date_field),
    editorField: name(row.editor_field),
    editDateField: name(row.edit_date_field),
    lastEditDate: Number.isFinite(last) && last > 0 ? last : undefined,
  };
  return Object.fromEntries(Object.entries(e).filter(([, v]) => v !== undefined)) as LayerEditing;
}

/** A layer's fields as its editing says: the global id field typed as such (it is kept as text). */
export function withEditing(schema: LayerSchema, editing: LayerEditing | undefined): LayerSchema {
  if (!editing) return schema;
  const gid = editing.globalIdField?.toLowerCase();
  return {
    ...schema,
    editing,
    fields: schema.fields.map((f) =>
      f.name.toLowerCase() === gid ? { ...f, type: "esriFieldTypeGlobalID" as const, nullable: false } : f,
    ),
  };
}

/** The fields mapgate fills itself (object id, global id, editor tracking): never written from a client's value. */
export function systemFields(schema: LayerSchema): Set<string> {
  const e = schema.editing;
  return new Set(
    [
      schema.objectIdField,
      e?.globalIdField,
      e?.creatorField,
      e?.creationDateField,
      e?.editorField,
      e?.editDateField,
    ].flatMap((n) => (n ? [n.toLowerCase()] : [])),
  );
}

/** One row read for a query: values by field name (dates as epoch milliseconds) and its geometry. */
export interface FeatureRow {
  readonly attributes: Record<string, string | number | null>;
  readonly geometry?: Geometry | null;
}

/** The type of a field's values as expressions see them (dates as epoch milliseconds). */
export type FieldValueType = "number" | "string" | "date";

/**
 * The value type of a field, as expressions and emitters see it; undefined for a type no expression may use
 * (blobs). Beside the field types, since the parser, the plan and both emitters read it.
 */
export function fieldValueType(field: Field): FieldValueType | undefined {
  switch (field.type) {
    case "esriFieldTypeOID":
    case "esriFieldTypeSmallInteger":
    case "esriFieldTypeInteger":
    case "esriFieldTypeBigInteger":
    case "esriFieldTypeSingle":
    case "esriFieldTypeDouble":
      return "number";
    case "esriFieldTypeString":
    case "esriFieldTypeGUID":
    case "esriFieldTypeGlobalID":
      return "string";
    case "esriFieldTypeDate":
    case "esriFieldTypeDateOnly":
      return "date";
    case "esriFieldTypeBlob":
      return undefined;
  }
}

export const fieldByName = (schema: LayerSchema, name: string): Field | undefined => {
  const wanted = name.toLowerCase();
  return schema.fields.find((f) => f.name.toLowerCase() === wanted);
};
