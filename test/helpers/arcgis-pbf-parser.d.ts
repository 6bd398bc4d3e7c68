// arcgis-pbf-parser ships no declarations: the part the PBF tests read.
declare module "arcgis-pbf-parser" {
  import type { FeatureCollection } from "geojson";

  export default function decode(buffer: Uint8Array): {
    featureCollection: FeatureCollection;
    exceededTransferLimit: boolean;
  };
}
