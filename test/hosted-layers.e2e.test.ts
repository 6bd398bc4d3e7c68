// Hosted feature layers kept as one GeoPackage per service in the data folder (the embedded default): the shared
// hosted-layer suite (test/helpers/hosted-cases.ts), GDAL reading each service's file.
import { execFileSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { hostedLayerSuite } from "./helpers/hosted-cases.ts";

const files = (dataDir: string) => {
  const dir = join(dataDir, "hosted");
  return existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith(".gpkg")) : [];
};

hostedLayerSuite({
  start: async () => ({}),
  stop: async () => undefined,
  kept: async (dataDir) => files(dataDir).length,
  ogrinfo: (dataDir, serviceItemId) =>
    execFileSync("ogrinfo", ["-ro", "-al", "-so", join(dataDir, "hosted", `${serviceItemId}.gpkg`)], {
      encoding: "utf8",
    }),
  gdalName: (_id, layer) => layer,
  dataBytes: (dataDir, serviceItemId) => statSync(join(dataDir, "hosted", `${serviceItemId}.gpkg`)).size,
});
