// The independent PBF decoder the tests check f=pbf with ships no types: what the tests read of it.
declare module "arcgis-pbf-parser" {
  interface DecodedFeature {
    readonly type: "Feature";
    readonly id?: number;
    readonly properties: Record<string, unknown>;
    readonly geometry: { readonly type: string; readonly coordinates: number[] } | null;
  }
  export default function decode(bytes: Uint8Array): {
    featureCollection: { features: DecodedFeature[] };
    exceededTransferLimit: boolean;
  };
}
