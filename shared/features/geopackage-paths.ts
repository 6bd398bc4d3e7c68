// Where a GeoPackage's tables are in a data store's paths (`/a/b.gpkg/table`): apart from the reader, so what
// names or lists datasets (describe, publishing's checks) does not load it.
/** A GeoPackage path in a data store: the file's path and the table in it (`/a/b.gpkg/table`). */
export function splitGeoPackagePath(path: string): { file: string; table: string } | undefined {
  const at = path.toLowerCase().lastIndexOf(".gpkg/");
  if (at < 0) return undefined;
  const file = path.slice(0, at + 5);
  const table = path.slice(at + 6);
  if (!table || table.includes("/")) return undefined;
  return { file, table };
}

export const isGeoPackageName = (name: string) => /\.gpkg$/i.test(name);
