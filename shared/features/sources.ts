// Where a feature layer's rows lie, and which datasets a data store holds: GeoPackage files in a folder or
// cloud store (read where they lie; a cloud store's file copied once per version into the function's
// temporary storage), each table of a file a dataset at `/<file path>/<table>`; and the tables of a
// PostgreSQL database, each a dataset at `/<schema>.<table>`. Both open as one OpenDataset (dataset.ts), which the
// query runs on without knowing which it is.
import { geoPackageDataset, type OpenDataset, postGisDataset } from "#shared/features/dataset.ts";
import { DatasetError } from "#shared/features/errors.ts";
import { type GeoPackage, geoPackageAt } from "#shared/features/geopackage.ts";
import { isGeoPackageName, splitGeoPackagePath } from "#shared/features/geopackage-paths.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { storageAt } from "#shared/storage/open.ts";
import { joinPath, type Storage, StorageError, type StoreLocation, safeRelativePath } from "#shared/storage/storage.ts";
import type { Dataset, PostgresConnection } from "#shared/stores/datastores.ts";
import { type LayerSchema, withEditing } from "#shared/features/schema.ts";
import type { ServiceSource, TrackingFields } from "#shared/stores/services.ts";

/**
 * The largest GeoPackage served. A folder store's file is read in place (the limit only guards against a
 * mistake); a cloud store's is copied into the function's ephemeral storage, which the stack sizes to hold it.
 */
export const MAX_GEOPACKAGE_BYTES = 8 * 1024 ** 3;

/** How deep below a store's root GeoPackage files are looked for, and how many, when datasets are listed. */
const SEARCH_DEPTH = 4;
const MAX_FILES = 256;
const LIST_LIMIT = 1000;

/** The order DynamoDB keeps dataset paths in (UTF-8 bytes), which paging by cursor relies on. */
const byPath = (a: { path: string }, b: { path: string }) => Buffer.compare(Buffer.from(a.path), Buffer.from(b.path));

/** A dataset a data store holds, and why it cannot be published when it cannot. */
export interface SourceDataset extends Dataset {
  readonly unpublishable?: string;
}

/** `hosted`: mapgate's own file (a hosted service's), which its reader may recover after a writer's crash. */
export async function openGeoPackage(
  location: StoreLocation,
  file: string,
  hosted = false,
): Promise<GeoPackage | undefined> {
  const storage = await storageAt(location);
  const local = await storage.localFile(file, MAX_GEOPACKAGE_BYTES);
  if (!local) return undefined;
  return geoPackageAt(local.file, local.version, hosted);
}

/** The datasets of one GeoPackage file of a store (`file` relative to the store's root). */
export async function geoPackageDatasets(location: StoreLocation, file: string): Promise<SourceDataset[] | undefined> {
  const gpkg = await openGeoPackage(location, file).catch((err: unknown) => {
    if (err instanceof DatasetError) throw new StorageError(err.message);
    throw err;
  });
  if (!gpkg) return undefined;
  const base = `/${safeRelativePath(file)}`;
  const datasets = gpkg.datasets().map((d) => ({
    name: d.table,
    displayName: d.table,
    type: d.kind,
    path: `${base}/${d.table}`,
    ...(d.unpublishable ? { unpublishable: d.unpublishable } : {}),
  }));
  return datasets.sort(byPath);
}

/** GeoPackage files below a folder of a store, breadth first, bounded in depth and count, in path order. */
async function geoPackageFiles(storage: Storage): Promise<string[]> {
  const files: string[] = [];
  let level = [""];
  for (let depth = 0; depth < SEARCH_DEPTH && level.length > 0 && files.length < MAX_FILES; depth++) {
    const next: string[] = [];
    for (const folder of level) {
      for (const e of await storage.list(folder, LIST_LIMIT)) {
        const path = joinPath(folder, e.name);
        if (e.kind === "file" && isGeoPackageName(e.name)) files.push(path);
        else if (e.kind === "folder") next.push(path);
      }
    }
    level = next;
  }
  return files.slice(0, MAX_FILES);
}

/**
 * Up to `limit` datasets of a store's storage after the path `after` ("" for the first), in path order: the tables
 * of every GeoPackage it holds, those that cannot be published with why (bulk publishing reports them).
 */
export async function storageDatasetPage(
  location: StoreLocation,
  after: string,
  limit: number,
): Promise<{ datasets: SourceDataset[]; more: boolean }> {
  const storage = await storageAt(location);
  const all: SourceDataset[] = [];
  for (const file of await geoPackageFiles(storage)) {
    const datasets = await geoPackageDatasets(location, file).catch((err: unknown) => {
      // A damaged file among good ones is left out of bulk publishing, not the end of it.
      if (err instanceof StorageError) return [];
      throw err;
    });
    for (const d of datasets ?? []) all.push(d);
  }
  all.sort(byPath);
  const cursor = Buffer.from(after);
  const rest = after === "" ? all : all.filter((d) => Buffer.compare(Buffer.from(d.path), cursor) > 0);
  return { datasets: rest.slice(0, limit), more: rest.length > limit };
}

async function openPostGisDataset(
  datastoreId: string,
  connection: PostgresConnection,
  path: string,
  trackingFields: TrackingFields | undefined,
) {
  const { postGisAt } = await import("#shared/features/postgis.ts");
  const db = await postGisAt(datastoreId, connection);
  // Kept by its tracking columns too: a column added to the table and then named is described afresh, not from a
  // description kept before it was there.
  const schema = await db.schema(
    path.replace(/^\//, ""),
    trackingFields ? { key: JSON.stringify(trackingFields), ready: () => Promise.resolve(true) } : undefined,
  );
  if (!schema) throw new DatasetError("The layer's table is no longer in its database.");
  if (schema instanceof DatasetError) throw schema;
  return postGisDataset(db, withTrackingFields(schema, trackingFields));
}

/**
 * A by-reference table's schema with the tracking columns its publisher named, carried as a hosted layer's are (so the
 * same code fills them, hides them from clients' writes and applies ownership rules). A named column the table no
 * longer has fails the layer rather than serving it without its ownership rules.
 */
export function withTrackingFields(schema: LayerSchema, named: TrackingFields | undefined): LayerSchema {
  if (!named) return schema;
  const editing: Record<string, string> = {};
  for (const [role, column] of Object.entries(named)) {
    if (typeof column !== "string") continue;
    if (!schema.fields.some((f) => f.column === column))
      throw new DatasetError(
        `The layer's tracking column ${column.slice(0, 63)} is no longer in its table: its publisher names its tracking columns again (editFieldsInfo).`,
      );
    editing[role] = column;
  }
  return withEditing(schema, { ...schema.editing, ...editing });
}

/**
 * How many layer ids a service's source has given (0…n-1): a hosted service's tables (a deleted layer's id among
 * them), else one dataset.
 */
export const layerCount = (source: ServiceSource): number => source.layers?.length ?? 1;

/** Whether layer `id` of a service's source is one it serves (given, and not deleted from its definition). */
export const servesLayer = (source: ServiceSource, id: number): boolean =>
  Number.isInteger(id) && id >= 0 && id < layerCount(source) && (source.layers ? source.layers[id] != null : true);

/**
 * The dataset of layer `id` (0 unless the source names several tables, as a hosted service of several layers).
 * `extent: false`: the caller (an edit) reads no extent, which a database's hosted layer then does not scan its rows for.
 */
export async function openDataset(
  source: ServiceSource,
  id = 0,
  options: { readonly extent?: boolean } = {},
): Promise<OpenDataset> {
  const layer = source.layers ? source.layers[id] : source.path.split("/").at(-1);
  if (typeof layer !== "string") throw new DatasetError("The service has no layer with this id.");
  // A service of several layers names them in its container (file or schema): its path's last part is the layer's.
  const path = source.path.replace(/[^/]*$/, layer);
  if ("connection" in source) {
    // A hosted layer kept in the deployment's own database, reached as that database requires (RDS Proxy).
    if (source.datastoreId === HOSTED_STORE_ID) {
      const { openHostedLayer } = await import("#shared/features/hosting-database.ts");
      return openHostedLayer(path, source.revision ?? 0, options);
    }
    return openPostGisDataset(source.datastoreId, source.connection, source.path, source.trackingFields);
  }
  const split = splitGeoPackagePath(path);
  if (!split) throw new DatasetError("The layer's dataset is not in a GeoPackage.");
  const gpkg = await openGeoPackage(source.location, split.file, source.datastoreId === HOSTED_STORE_ID);
  if (!gpkg) throw new DatasetError("The layer's GeoPackage is no longer in its data store.");
  const schema = gpkg.schema(split.table);
  if (!schema) throw new DatasetError("The layer's table is no longer in its GeoPackage.");
  if (schema instanceof DatasetError) throw schema;
  return geoPackageDataset(gpkg, schema);
}

/** Every dataset of a database store in path order, each with why it cannot be published if so (describe's list). */
export async function databaseDatasets(datastoreId: string, connection: PostgresConnection): Promise<SourceDataset[]> {
  const { postGisAt, withUnreachableFloor } = await import("#shared/features/postgis.ts");
  // Describe and bulk publishing connect where their caller registered: a server that cannot be reached is
  // answered no sooner than the floor (validate's rule), so neither tells a closed port from a silent one.
  const db = await withUnreachableFloor(() => postGisAt(datastoreId, connection));
  const datasets = (await db.datasets()).map((d) => ({
    name: d.name,
    displayName: d.name,
    type: d.kind,
    path: `/${d.name}`,
    ...(d.unpublishable ? { unpublishable: d.unpublishable } : {}),
  }));
  return datasets.sort(byPath);
}

/**
 * Up to `limit` datasets of a database store after the path `after`, in path order, those that cannot be published
 * with why (bulk publishing's pages; the listing is the pool's, kept a minute, so paging does not list the database
 * again).
 */
export async function databaseDatasetPage(
  datastoreId: string,
  connection: PostgresConnection,
  after: string,
  limit: number,
): Promise<{ datasets: SourceDataset[]; more: boolean }> {
  const all = await databaseDatasets(datastoreId, connection);
  const cursor = Buffer.from(after);
  const rest = after === "" ? all : all.filter((d) => Buffer.compare(Buffer.from(d.path), cursor) > 0);
  return { datasets: rest.slice(0, limit), more: rest.length > limit };
}
