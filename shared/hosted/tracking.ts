// The global id and editor-tracking fields of hosted layers made from now on (published from any file, or defined by
// createService/addToDefinition): GlobalID ({UUID}, upper case in braces, as ArcGIS writes them), CreationDate,
// Creator, EditDate and Editor, filled by the server on every add and update (shared/hosted/edit.ts). Which columns
// they are is recorded with the data (the layer's mapgate_editing row, written by the store with the layer), never
// guessed from names: a layer made before has no record and is edited without tracking.
import type { CellValue, ColumnSpec, GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import type { LayerEditing } from "#shared/features/schema.ts";
import type { HostedColumn } from "#shared/hosted/store.ts";

/** The fields' names, as ArcGIS names them on hosted layers. */
export const TRACKING: Required<Omit<LayerEditing, "lastEditDate">> = {
  globalIdField: "GlobalID",
  creationDateField: "CreationDate",
  creatorField: "Creator",
  editDateField: "EditDate",
  editorField: "Editor",
};

/** The names (lower case) a file's own column or a definition's field may not take: the server's fields. */
export const TRACKING_NAMES: ReadonlySet<string> = new Set(Object.values(TRACKING).map((n) => n.toLowerCase()));

/** A global id's text: 38 characters. Usernames are at most 128. */
const GUID_LENGTH = 38;
const USERNAME_LENGTH = 128;

/** The columns publishing adds to a layer made from a file. */
export const trackingColumns = (): HostedColumn[] => [
  { name: TRACKING.globalIdField, kind: "string", length: GUID_LENGTH },
  { name: TRACKING.creationDateField, kind: "date" },
  { name: TRACKING.creatorField, kind: "string", length: USERNAME_LENGTH },
  { name: TRACKING.editDateField, kind: "date" },
  { name: TRACKING.editorField, kind: "string", length: USERNAME_LENGTH },
];

/** The fields a definition's new layer is given besides its own. */
export const trackingSpecs = (): ColumnSpec[] => [
  { name: TRACKING.globalIdField, type: "TEXT", maxLength: GUID_LENGTH },
  { name: TRACKING.creationDateField, type: "DATETIME" },
  { name: TRACKING.creatorField, type: "TEXT", maxLength: USERNAME_LENGTH },
  { name: TRACKING.editDateField, type: "DATETIME" },
  { name: TRACKING.editorField, type: "TEXT", maxLength: USERNAME_LENGTH },
];

/** A new global id, as ArcGIS writes one. */
export const newGlobalId = () => `{${crypto.randomUUID().toUpperCase()}}`;

/** A published file's rows, each given its global id and made by the publisher at the publish's time. */
export async function* trackedRows(
  rows: AsyncIterable<GeoPackageRow>,
  publisher: string,
  when: number,
): AsyncIterable<GeoPackageRow> {
  const date = new Date(when);
  for await (const row of rows) {
    const values: Record<string, CellValue> = {
      ...row.values,
      [TRACKING.globalIdField]: newGlobalId(),
      [TRACKING.creationDateField]: date,
      [TRACKING.creatorField]: publisher,
      [TRACKING.editDateField]: date,
      [TRACKING.editorField]: publisher,
    };
    yield { ...row, values };
  }
}
