// What a service published from a cache keeps of it in its record, read once at publishing (shared/caches/probe.ts)
// and served from the record after: tiling schemes and extents as the service JSON gives them, a vector tile
// cache's root.json, a scene layer's document. Record types, so the stores need nothing of the code that reads
// caches.

export interface SpatialReference {
  readonly wkid?: number;
  readonly latestWkid?: number;
  readonly wkt?: string;
}

export interface Lod {
  readonly level: number;
  readonly resolution: number;
  readonly scale: number;
}

export interface TileInfo {
  readonly rows: number;
  readonly cols: number;
  readonly dpi: number;
  readonly format: string;
  readonly compressionQuality: number;
  readonly origin: { readonly x: number; readonly y: number };
  readonly spatialReference: SpatialReference;
  readonly lods: readonly Lod[];
}

export interface Extent {
  readonly xmin: number;
  readonly ymin: number;
  readonly xmax: number;
  readonly ymax: number;
  readonly spatialReference: SpatialReference;
}

export interface TiledCache {
  readonly tileInfo: TileInfo;
  readonly fullExtent: Extent;
  /** `compactV2` bundles or `exploded` one-file-per-tile folders (the two layouts ArcGIS writes today). */
  readonly storage: "compactV2" | "exploded";
}

export type CacheInfo =
  | { readonly kind: "tiled"; readonly path: string; readonly tiled: TiledCache }
  | { readonly kind: "vector"; readonly path: string; readonly root: Record<string, unknown> }
  | { readonly kind: "scene"; readonly path: string; readonly layer: Record<string, unknown> };
