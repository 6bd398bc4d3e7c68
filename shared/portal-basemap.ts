// The organization's basemap settings, as ArcGIS's portals/self carries them: `defaultBasemap` (the basemap a new map
// gets: the ArcGIS Maps SDK's WebMap and mapgate's viewer read it when they save a map), `basemapGalleryGroupQuery`
// (where apps find the basemaps to choose from) and `useVectorBasemaps`. An administrator names them with
// portals/self/update; until then the demo's tiled basemap (World_Basemap on the `arcgis` server) is the default.
//
// A basemap's layers are drawn by every member's map, so each must be something a map can draw and its readers
// reach: a tile, tiled image or vector tile service this site serves to the organization (checked in its catalog),
// or an https URL of another site (never plain http: the map would be mixed content on an https page). A service of
// this site is kept by its path and answered with the address the caller used, so it follows the site's name.
// portals/self reads this module alone; the checks of an update, which read catalogs, are in portal-basemap-check.ts.
import type { Portal } from "#shared/stores/portals.ts";

/** The demo's tiled basemap (infra/admin/demo.ts: World_Basemap, served from the demo store's tile cache). */
const DEMO_BASEMAP_PATH = "/arcgis/rest/services/World_Basemap/MapServer";

/** The largest defaultBasemap taken, as JSON text (a basemap is a title and a few layers). */
export const MAX_BASEMAP_CHARS = 16_384;
/** The most layers a basemap may have (ArcGIS's own basemaps have one to three). */
export const MAX_BASEMAP_LAYERS = 8;
export const MAX_GALLERY_QUERY_CHARS = 1_024;

/** What each basemap layer type draws, and the service type of this site that serves it. */
export const LAYER_TYPES: Readonly<Record<string, string>> = {
  ArcGISTiledMapServiceLayer: "MapServer",
  ArcGISTiledImageServiceLayer: "ImageServer",
  VectorTileLayer: "VectorTileServer",
};

/** One basemap layer as kept: a service of this site by its path (`path`), or another site's https URL (`url`). */
export interface KeptLayer {
  readonly id: string;
  readonly title?: string;
  readonly layerType: string;
  readonly path?: string;
  readonly url?: string;
  readonly opacity: number;
  readonly visibility: boolean;
  readonly isReference?: boolean;
}
export interface KeptBasemap {
  readonly title: string;
  readonly baseMapLayers: readonly KeptLayer[];
}

/** The organization's basemap settings as portals/self answers them, addresses made absolute for the caller. */
export function basemapSettings(portal: Portal, origin: string) {
  const kept = portal.defaultBasemap ? (JSON.parse(portal.defaultBasemap) as KeptBasemap) : undefined;
  const defaultBasemap = kept
    ? {
        title: kept.title,
        baseMapLayers: kept.baseMapLayers.map(({ path, url, ...layer }) => {
          const address = path !== undefined ? `${origin}${path}` : (url ?? "");
          return layer.layerType === "VectorTileLayer"
            ? { ...layer, styleUrl: `${address}/resources/styles/root.json` }
            : { ...layer, url: address };
        }),
      }
    : {
        id: "mapgate-world-basemap",
        title: "World Basemap",
        baseMapLayers: [
          {
            id: "World_Basemap",
            layerType: "ArcGISTiledMapServiceLayer",
            url: `${origin}${DEMO_BASEMAP_PATH}`,
            visibility: true,
            opacity: 1,
          },
        ],
      };
  return {
    basemapGalleryGroupQuery: portal.basemapGalleryGroupQuery ?? `title:"Basemaps" AND orgid:${portal.portalId}`,
    useVectorBasemaps: portal.useVectorBasemaps ?? false,
    defaultBasemap,
  };
}
