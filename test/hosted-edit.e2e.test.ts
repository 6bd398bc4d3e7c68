// Editing hosted feature layers kept as one GeoPackage per service in the data folder (the embedded default): the
// shared editing suite (test/helpers/hosted-edit-cases.ts), GDAL reading each edited file.
import { join } from "node:path";
import { hostedEditSuite } from "./helpers/hosted-edit-cases.ts";

hostedEditSuite({
  start: async () => ({}),
  stop: async () => undefined,
  gdalSource: (dataDir, serviceItemId) => [join(dataDir, "hosted", `${serviceItemId}.gpkg`)],
});
