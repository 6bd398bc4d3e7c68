// The map viewer: which service or layer a `/viewer/map?url=…` asks for, whether the caller may see it, and what
// the page's script draws (tiles, a vector tile style, feature layers queried by extent, a scene's footprint).
// What cannot be drawn is said on the page in words, never left as a blank map.
import { catalogOf, findService, serviceInfo, visibleTo } from "#shared/catalog.ts";
import { badRequest } from "#shared/errors.ts";
import { escapeHtml, type HtmlPage, page } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { parseServicePath } from "#shared/serving/service-path.ts";
import type { TileInfo } from "#shared/stores/cache-info.ts";
import { hostedServer } from "#shared/stores/servers.ts";
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import { viewerAssetHref } from "#shared/viewer/assets.ts";
import { VIEWER_PATH } from "#shared/viewer-links.ts";

export type ViewerKind = "tiles" | "vector" | "features" | "scene" | "webmap";

/** What the page's script is told (the `data-config` attribute), and the answer of `f=json`. */
export interface ViewerConfig {
  readonly url: string;
  readonly title: string;
  /** What is drawn; absent when nothing can be (`problem` says why). */
  readonly kind?: ViewerKind;
  /** The service's URL path (the layer's service for a layer). */
  readonly serviceUrl?: string;
  /** The feature layers to draw; all of the service's when absent. */
  readonly layerIds?: readonly number[];
  /** A tiled cache in the Web Mercator tiling scheme: the levels it holds and where. */
  readonly tiles?: { readonly minzoom: number; readonly maxzoom: number; readonly tileSize: number };
  readonly workerUrl: string;
  /** The basemap drawn under every map (world land and borders as TopoJSON), served here. */
  readonly basemapUrl: string;
  readonly itemId?: string;
  /** Why nothing can be drawn, in words; `signIn` when signing in may change that. */
  readonly problem?: string;
  readonly signIn?: boolean;
  /** The Web Map item a `/viewer/map?webmap=<id>` opens: the page's script reads it and draws its layers. */
  readonly webmap?: string;
  /** The sharing REST root the page's script saves and reads web maps at. */
  readonly portalRest?: string;
  /** The signed-in member, whose content "Save as web map" adds the map to. */
  readonly username?: string;
}

const WEB_MERCATOR = new Set([102100, 102113, 3857, 900913]);
/** Web Mercator's tile origin and the resolution of level 0 for 256-pixel tiles (metres per pixel). */
const ORIGIN = 20037508.342787;
const LEVEL0 = 156543.03392800014;

/**
 * The levels of a tiled cache as web map levels, when its tiling scheme is the Web Mercator one web maps use
 * (origin at the top-left of the world, each level half the resolution of the one before); undefined otherwise.
 */
export function webMercatorLevels(info: TileInfo): { minzoom: number; maxzoom: number; tileSize: number } | undefined {
  const sr = info.spatialReference as { wkid?: number; latestWkid?: number };
  if (!WEB_MERCATOR.has(sr.latestWkid ?? sr.wkid ?? 0) && !WEB_MERCATOR.has(sr.wkid ?? 0)) return undefined;
  if (Math.abs(info.origin.x + ORIGIN) > 1 || Math.abs(info.origin.y - ORIGIN) > 1) return undefined;
  if (info.rows !== info.cols || info.lods.length === 0) return undefined;
  const fits = info.lods.every(
    (l) => Math.abs(l.resolution * info.rows - (LEVEL0 * 256) / 2 ** l.level) / ((LEVEL0 * 256) / 2 ** l.level) < 1e-3,
  );
  if (!fits) return undefined;
  const levels = info.lods.map((l) => l.level);
  return { minzoom: Math.min(...levels), maxzoom: Math.max(...levels), tileSize: info.rows };
}

const SERVICES_PATH = /^\/([^/]+)\/rest\/services\/(.+)$/;

const ITEM_ID = /^[0-9a-f]{32}$/;

/** A web map's page: its item is read by the page's script with the caller's own rights, layer by layer. */
function webmapConfig(req: RestRequest, id: string): ViewerConfig {
  if (req.params.get("url")) throw badRequest("Which map?", ["Give either 'url' (a service) or 'webmap', not both."]);
  if (!ITEM_ID.test(id)) throw badRequest("Which map?", ["'webmap' is a Web Map item's id: 32 hexadecimal digits."]);
  return {
    url: `${VIEWER_PATH}?webmap=${id}`,
    title: "Web map",
    kind: "webmap",
    webmap: id,
    workerUrl: viewerAssetHref("maplibre-gl-worker.js"),
    basemapUrl: viewerAssetHref("world-110m.json"),
    itemId: id,
    portalRest: PORTAL_ROOT,
    ...(req.identity.kind === "user" ? { username: req.identity.user.username } : { signIn: true }),
  };
}

/** Reads `url` (or `webmap`), finds the service it names and decides what the page draws, or why it cannot. */
export async function viewerConfig(req: RestRequest): Promise<ViewerConfig> {
  const config = await serviceConfig(req);
  if (!config.kind || config.kind === "webmap") return config;
  return {
    ...config,
    portalRest: PORTAL_ROOT,
    ...(req.identity.kind === "user" ? { username: req.identity.user.username } : {}),
  };
}

async function serviceConfig(req: RestRequest): Promise<ViewerConfig> {
  const webmap = req.params.get("webmap")?.trim();
  if (webmap !== undefined && webmap !== "") return webmapConfig(req, webmap);
  const raw = req.params.get("url")?.trim() ?? "";
  if (raw === "") {
    throw badRequest("Which map?", [
      "'url' names a service or a layer, e.g. /arcgis/rest/services/World/countries/FeatureServer/0.",
    ]);
  }
  if (raw.length > 2048) throw badRequest("The URL is too long.");
  let path = raw;
  if (!raw.startsWith("/")) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw badRequest("Not a URL.", ["'url' is a service's URL or its path on this site."]);
    }
    const here = [req.origin, req.httpsOrigin].map((o) => new URL(o).host);
    if (!here.includes(url.host)) throw badRequest("The viewer shows this site's services only.");
    path = url.pathname;
  }
  path = path.replace(/\/+$/, "");
  const base = {
    url: path,
    workerUrl: viewerAssetHref("maplibre-gl-worker.js"),
    basemapUrl: viewerAssetHref("world-110m.json"),
  };
  const m = SERVICES_PATH.exec(path);
  const server = m?.[1] ? await hostedServer(m[1]) : undefined;
  const parsed = m?.[2] ? parseServicePath(m[2]) : "not a service path";
  if (!m || !server || typeof parsed === "string") {
    return {
      ...base,
      title: "Map",
      problem: "This is not the URL of a service here (…/rest/services/[<folder>/]<name>/<type>[/<layer>]).",
    };
  }
  const serviceTitle = `${parsed.folder ? `${parsed.folder}/` : ""}${parsed.name} (${parsed.type})`;
  const catalog = await catalogOf(server.serverId);
  const service = findService(catalog, parsed.folder, parsed.name, parsed.type);
  if (!service || !visibleTo(req.identity, service)) {
    return req.identity.kind === "anonymous"
      ? {
          ...base,
          title: serviceTitle,
          problem: "This service is not shared with everyone, or does not exist: sign in to view it.",
          signIn: true,
        }
      : { ...base, title: serviceTitle, problem: "This service does not exist, or you may not see it." };
  }
  const serviceUrl = `/${server.name}/rest/services/${service.folder ? `${service.folder}/` : ""}${service.name}/${service.type}`;
  const known = { ...base, serviceUrl, itemId: service.itemId };
  const [first, ...rest] = parsed.resource;
  if (service.type === "FeatureServer") {
    if (!service.source && !service.view) {
      return { ...known, title: serviceTitle, problem: "This feature service is listed only: it has no data to draw." };
    }
    if (first === undefined) return { ...known, title: serviceTitle, kind: "features" };
    if (!/^\d{1,9}$/.test(first) || rest.length > 0) {
      return { ...known, title: serviceTitle, problem: "Only a feature service or one of its layers is drawn." };
    }
    return { ...known, title: `${serviceTitle}, layer ${first}`, kind: "features", layerIds: [Number(first)] };
  }
  const info = await serviceInfo(service);
  if (!info) {
    return {
      ...known,
      title: serviceTitle,
      problem: "This service is listed only: it has no cache to draw (publish one from a data store to see it here).",
    };
  }
  switch (info.kind) {
    case "tiled": {
      const tiles = webMercatorLevels(info.tiled.tileInfo);
      if (!tiles) {
        const sr = info.tiled.tileInfo.spatialReference as { wkid?: number };
        return {
          ...known,
          title: serviceTitle,
          problem: `This cache's tiling scheme (wkid ${sr.wkid ?? "unknown"}) is not the Web Mercator one the viewer draws.`,
        };
      }
      return { ...known, title: serviceTitle, kind: "tiles", tiles };
    }
    case "vector":
      return { ...known, title: serviceTitle, kind: "vector" };
    case "scene":
      return { ...known, title: serviceTitle, kind: "scene" };
  }
  return { ...known, title: serviceTitle, problem: "The viewer does not draw this kind of service." };
}

const NOTES: Record<ViewerKind, string> = {
  tiles: "The service's cached tiles.",
  vector: "The service's vector tiles, drawn with its own style.",
  features:
    "Features in view, queried again as the map moves (up to the layer's maximum per request). Click one to see its attributes.",
  scene: "The scene layer's footprint: the extent its nodes cover.",
  webmap:
    "The web map's layers in the order it lists them, each as it was saved (shown or hidden, its opacity), over its basemap when that is a service of this site.",
};

const BASEMAP_NOTE =
  "Under it, the world's land and borders (Natural Earth 1:110m, public domain, from the world-atlas package), served by mapgate.";

/**
 * The map's layers (filled by the page's script), "Add layer" and, for a member over HTTPS (where forms carry their
 * CSRF field), "Save as web map". Both forms are sent by the script, never by the browser itself: "Add layer"
 * draws another service of this site in the same map, "Save" adds a Web Map item through addItem, as the SDK does.
 */
function mapTools(config: ViewerConfig, req: RestRequest): string {
  const layers =
    `<h2>Layers</h2><ul id="viewer-layers"></ul><p id="viewer-unseen" class="muted" hidden></p>` +
    `<form id="viewer-add" class="viewer-tool" novalidate><label for="viewer-add-url">Add layer (a service or layer URL of this site)</label>` +
    `<input id="viewer-add-url" name="url" required maxlength="2048" placeholder="/arcgis/rest/services/…/FeatureServer/0">` +
    `<button type="submit">Add layer</button></form>`;
  if (req.identity.kind !== "user" || !req.csrf) {
    const why =
      req.identity.kind === "user" ? "Saving a web map is done over HTTPS." : "Sign in to save this map as a web map.";
    return `${layers}<p class="muted">${escapeHtml(why)}</p>`;
  }
  const save =
    `<h2>Save as web map</h2><form id="viewer-save" class="viewer-tool" novalidate>` +
    `<input type="hidden" name="csrf" value="${escapeHtml(req.csrf)}">` +
    `<label for="viewer-save-title">Title</label><input id="viewer-save-title" name="title" required maxlength="250">` +
    `<label for="viewer-save-tags">Tags (comma-separated)</label><input id="viewer-save-tags" name="tags" maxlength="1000">` +
    `<label for="viewer-save-folder">Folder</label><select id="viewer-save-folder" name="folder"><option value="">(root of my content)</option></select>` +
    `<button type="submit">Save</button></form><div id="viewer-saved" aria-live="polite"></div>`;
  return layers + save;
}

/** The viewer's page: the map and what it shows, or the message saying why there is none. */
export function viewerPage(data: object, req: RestRequest): HtmlPage {
  const config = data as ViewerConfig;
  const links: string[] = [];
  if (config.serviceUrl) links.push(`<a href="${escapeHtml(`${config.url}?f=html`)}">Service page</a>`);
  if (config.itemId) links.push(`<a href="${escapeHtml(itemPageHref(config.itemId))}">Item</a>`);
  if (config.signIn) {
    const back = config.webmap ? config.url : `${VIEWER_PATH}?url=${encodeURIComponent(config.url)}`;
    links.push(
      `<a href="${escapeHtml(`${req.https ? "" : req.httpsOrigin}${PORTAL_ROOT}/oauth2/signin?redirect=${encodeURIComponent(back)}`)}">Sign in</a>`,
    );
  }
  links.push('<a href="/">Home</a>');
  const who =
    req.identity.kind === "user"
      ? `Signed in as ${escapeHtml(req.identity.user.username)}`
      : "Not signed in: public services only";
  const map = config.kind
    ? `<div id="viewer" data-config="${escapeHtml(JSON.stringify(config))}">` +
      `<p id="viewer-status" class="muted" role="status">Loading the map…</p>` +
      `<div id="map" aria-label="Map of ${escapeHtml(config.title)}"></div>` +
      `<div id="viewer-details" aria-live="polite"></div>${mapTools(config, req)}</div>` +
      `<p class="muted">${escapeHtml(NOTES[config.kind])} ${BASEMAP_NOTE}</p>`
    : `<div class="error" id="viewer-status" role="alert"><p>${escapeHtml(config.problem ?? "Nothing to draw.")}</p></div>`;
  const head = config.kind
    ? [
        `<link rel="stylesheet" href="${viewerAssetHref("maplibre-gl.css")}">`,
        `<link rel="stylesheet" href="${viewerAssetHref("viewer.css")}">`,
        `<script src="${viewerAssetHref("maplibre-gl.js")}" defer></script>`,
        `<script src="${viewerAssetHref("topojson-client.js")}" defer></script>`,
        `<script src="${viewerAssetHref("viewer.js")}" defer></script>`,
      ].join("")
    : "";
  const body = `<h1>${escapeHtml(config.title)}</h1><p>${links.join(" · ")}</p><p class="muted">${who}</p>` + map;
  return { body: page(`Map: ${config.title}`, body, head), formActions: [], scripts: config.kind !== undefined };
}
