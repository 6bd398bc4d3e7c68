// Where a feature layer's rows lie, and which datasets a data store holds: GeoPackage files in a folder or
// cloud store (read where they lie; a cloud store's file copied once per version into the function's
// temporary storage), each table of a file a dataset at `/<file path>/<table>`.
import {
  DatasetError,
  type GeoPackage,
  geoPackageAt,
  isGeoPackageName,
  splitGeoPackagePath,
} from "#shared/features/geopackage.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { storageAt } from "#shared/storage/open.ts";
import { joinPath, type Storage, StorageError, safeRelativePath } from "#shared/storage/storage.ts";
import type { Dataset, StoreLocation } from "#shared/stores/datastores.ts";

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

export async function openGeoPackage(location: StoreLocation, file: string): Promise<GeoPackage | undefined> {
  const storage = await storageAt(location);
  const local = await storage.localFile(file, MAX_GEOPACKAGE_BYTES);
  if (!local) return undefined;
  return geoPackageAt(local.file, local.version);
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
 * Up to `limit` publishable datasets of a store's storage after the path `after` ("" for the first), in path
 * order: the tables of every GeoPackage it holds.
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
    for (const d of datasets ?? []) if (!d.unpublishable) all.push(d);
  }
  all.sort(byPath);
  const cursor = Buffer.from(after);
  const rest = after === "" ? all : all.filter((d) => Buffer.compare(Buffer.from(d.path), cursor) > 0);
  return { datasets: rest.slice(0, limit), more: rest.length > limit };
}

/** A layer's dataset, open: its reader and schema; a DatasetError says why it cannot be read. */
export interface OpenDataset {
  readonly gpkg: GeoPackage;
  readonly schema: LayerSchema;
}

export async function openDataset(location: StoreLocation, path: string): Promise<OpenDataset> {
  const split = splitGeoPackagePath(path);
  if (!split) throw new DatasetError("The layer's dataset is not in a GeoPackage.");
  const gpkg = await openGeoPackage(location, split.file);
  if (!gpkg) throw new DatasetError("The layer's GeoPackage is no longer in its data store.");
  const schema = gpkg.schema(split.table);
  if (!schema) throw new DatasetError("The layer's table is no longer in its GeoPackage.");
  if (schema instanceof DatasetError) throw schema;
  return { gpkg, schema };
}
