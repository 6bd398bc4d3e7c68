// The files a map viewer page loads, served by mapgate itself (no CDN: an offline site must work): the
// map library's prebuilt CSP build (maplibre-gl, its worker and stylesheet), the basemap's world and its reader,
// and the viewer's own script and stylesheet. One list for both engines: the stack copies these files beside the viewer function's bundle
// (infra/aws/stack.ts), the local engine into its data folder (infra/local/engine.ts); the function reads them
// from `VIEWER_ASSETS_DIR`, or beside its own bundle when unset (on Lambda).
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import { Content } from "#shared/http/render.ts";

/** The URL path the viewer's files are served under (`/viewer/<name>`). */
export const VIEWER_ASSET_PATH = "/viewer";

/** Where each file comes from (relative to the project's root) and what it is. */
export const VIEWER_ASSETS = {
  "maplibre-gl.js": { source: "node_modules/maplibre-gl/dist/maplibre-gl-csp.js", type: "text/javascript" },
  "maplibre-gl-worker.js": {
    source: "node_modules/maplibre-gl/dist/maplibre-gl-csp-worker.js",
    type: "text/javascript",
  },
  "maplibre-gl.css": { source: "node_modules/maplibre-gl/dist/maplibre-gl.css", type: "text/css" },
  // The basemap: world land and country borders as TopoJSON (Natural Earth 1:110m, from world-atlas), and the
  // TopoJSON reader that turns them into GeoJSON in the page.
  "world-110m.json": { source: "node_modules/world-atlas/countries-110m.json", type: "application/json" },
  "topojson-client.js": { source: "node_modules/topojson-client/dist/topojson-client.min.js", type: "text/javascript" },
  "viewer.js": { source: "shared/viewer/viewer.js", type: "text/javascript" },
  "viewer.css": { source: "shared/viewer/viewer.css", type: "text/css" },
} as const;

export type ViewerAsset = keyof typeof VIEWER_ASSETS;

/** The folder beside a function's bundle the stack copies the files into. */
export const VIEWER_ASSETS_FOLDER = "viewer-assets";

export const isViewerAsset = (name: string): name is ViewerAsset => Object.hasOwn(VIEWER_ASSETS, name);

export const viewerAssetHref = (name: ViewerAsset) => `${VIEWER_ASSET_PATH}/${name}`;

/** A day: the files change only with a new deployment, and each answer carries an ETag to check it cheaply. */
const MAX_AGE = 86_400;

function assetsDir(): string {
  return process.env.VIEWER_ASSETS_DIR || fileURLToPath(new URL(`./${VIEWER_ASSETS_FOLDER}`, import.meta.url));
}

// Read (and compressed) once per warm function.
const loaded = new Map<string, Promise<{ plain: Buffer; gzip: Buffer }>>();

/** One of the viewer's files as content any cache may keep, gzip-compressed for clients that take it. */
export async function viewerAsset(name: ViewerAsset, gzipOk: boolean): Promise<Content> {
  let bytes = loaded.get(name);
  if (!bytes) {
    bytes = readFile(join(assetsDir(), name)).then((plain) => ({ plain, gzip: gzipSync(plain) }));
    // A failed read is tried again by the next request, not remembered.
    bytes.catch(() => loaded.delete(name));
    loaded.set(name, bytes);
  }
  const { plain, gzip } = await bytes;
  const type = `${VIEWER_ASSETS[name].type}; charset=utf-8`;
  return gzipOk
    ? new Content(gzip, type, { encoding: "gzip", shared: true, maxAge: MAX_AGE })
    : new Content(plain, type, { shared: true, maxAge: MAX_AGE });
}
