// Hosted feature services defined by their clients, kept as one GeoPackage per service in the data folder (the
// embedded default): the shared definition suite (test/helpers/hosted-define-cases.ts), GDAL reading each file.
import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { hostedDefineSuite } from "./helpers/hosted-define-cases.ts";

const file = (dataDir: string, serviceItemId: string) => join(dataDir, "hosted", `${serviceItemId}.gpkg`);

hostedDefineSuite({
  start: async () => ({}),
  stop: async () => undefined,
  gdalSource: (dataDir, serviceItemId) => [file(dataDir, serviceItemId)],
  exists: async (dataDir, serviceItemId) => existsSync(file(dataDir, serviceItemId)),
  dataBytes: async (dataDir, serviceItemId) => statSync(file(dataDir, serviceItemId)).size,
  // Aliases are the GeoPackage schema extension's titles (GDAL's alternative names of the fields), read by GDAL.
  aliases: async (dataDir, serviceItemId, table) => {
    const out = execFileSync(
      "ogrinfo",
      [
        "-ro",
        "-q",
        file(dataDir, serviceItemId),
        "-sql",
        `SELECT column_name, title FROM gpkg_data_columns WHERE table_name = '${table}'`,
      ],
      { encoding: "utf8" },
    );
    return Object.fromEntries(
      [...out.matchAll(/column_name \(String\) = (.*)\n\s+title \(String\) = (.*)\n/g)].map((m) => [m[1], m[2]]),
    );
  },
  // Single-column indexes of the table (SQLite's own key aside), read from the file.
  indexedColumns: async (dataDir, serviceItemId, table) => {
    const db = new DatabaseSync(file(dataDir, serviceItemId), { readOnly: true });
    try {
      const rows = db
        .prepare(
          "SELECT i.name AS column FROM pragma_index_list(?) AS l, pragma_index_info(l.name) AS i WHERE l.origin = 'c'",
        )
        .all(table) as { column: string }[];
      return rows.map((r) => r.column).sort();
    } finally {
      db.close();
    }
  },
});
