// A child process for the features figures' comparison: Koop (koop-core with its default geoservices output,
// which is @koopjs/featureserver) serving one GeoPackage table through a small provider, written the way Koop
// providers are: getData answers the table as GeoJSON and Koop's featureserver filters it (where, geometry,
// paging, count). The provider sets `ttl`, Koop's documented way to cache: its in-memory cache keeps the
// GeoJSON, so a repeated request pays Koop's filtering alone, never the read.
//   node bench/feature-koop.ts FILE TABLE  →  prints `koop PORT`, serves /gpkg/rest/services/TABLE/FeatureServer
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";
import type { Feature, FeatureCollection, Geometry } from "geojson";
import { decodeGeoPackageGeometry } from "#shared/features/geometry/wkb.ts";

const [file, table] = process.argv.slice(2);
if (!file || !table) throw new Error("usage: feature-koop.ts FILE TABLE");

// koop-core reads its settings with `config`, which would warn that the bench has no config folder.
process.env.SUPPRESS_NO_CONFIG_WARNING = "1";
const require = createRequire(import.meta.url);
const Koop = require("@koopjs/koop-core") as new (options: object) => {
  register(plugin: object): void;
  server: { listen(port: number, host: string, cb: () => void): import("node:http").Server };
};

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/** The table as GeoJSON: every row, its key as `fid` and in the metadata, its geometry decoded from the blob. */
function readTable(name: string): FeatureCollection<Geometry | null> {
  const db = new DatabaseSync(file as string, { readOnly: true });
  try {
    const g = db.prepare("SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?").get(name) as {
      column_name: string;
    };
    const rows = db.prepare(`SELECT * FROM ${quote(name)}`).all() as Record<string, unknown>[];
    const features = rows.map((row): Feature<Geometry | null> => {
      const { [g.column_name]: blob, ...properties } = row;
      const geometry = blob instanceof Uint8Array ? decodeGeoPackageGeometry(blob).geometry : null;
      return { type: "Feature", geometry: geometry ?? null, properties: { ...properties } };
    });
    return { type: "FeatureCollection", features };
  } finally {
    db.close();
  }
}

class Model {
  async getData(req: { params: { id: string } }) {
    const collection = readTable(req.params.id);
    return {
      ...collection,
      ttl: 3600,
      metadata: { name: req.params.id, idField: "fid", maxRecordCount: 2000 },
    };
  }
}

const koop = new Koop({ logLevel: "error" });
koop.register({ type: "provider", name: "gpkg", version: "1.0.0", hosts: false, disableIdParam: false, Model });
const server = koop.server.listen(0, "127.0.0.1", () => console.log(`koop ${(server.address() as AddressInfo).port}`));
server.keepAliveTimeout = 30_000;
process.on("SIGTERM", () => process.exit(0));
