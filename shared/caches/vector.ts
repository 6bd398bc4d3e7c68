// What a VectorTileServer answers from an extracted vector tile package, without reading anything: the
// service JSON from its p12/root.json, its style with the sources made absolute so a Mapbox GL client loads
// everything from this service, and the files its `resources/…` paths may name.
import { SERVER_REST_VERSION } from "#shared/urls.ts";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** The deepest level a vector tile cache may have (as for raster caches). */
const MAX_ZOOM = 30;

/**
 * The service JSON (`…/VectorTileServer?f=json`), as ArcGIS answers it, from the package's root.json. `tiles`
 * stays the relative template ArcGIS gives: clients resolve it against the service URL.
 */
export function vectorServiceJson(root: Json, extra: { serviceItemId?: string; name: string }): Json {
  const lods = isObject(root.tileInfo) && Array.isArray(root.tileInfo.lods) ? root.tileInfo.lods : [];
  const scales = lods.flatMap((l: unknown) => (isObject(l) && typeof l.scale === "number" ? [l.scale] : []));
  const lastLevel = Math.max(0, lods.length - 1);
  const out: Json = {
    currentVersion: SERVER_REST_VERSION,
    name: extra.name,
    copyrightText: typeof root.copyrightText === "string" ? root.copyrightText : "",
    capabilities: "TilesOnly",
    type: typeof root.type === "string" ? root.type : "indexedVector",
    defaultStyles: "resources/styles",
    tiles: ["tile/{z}/{y}/{x}.pbf"],
    // Exporting tiles is an operation this service does not have.
    exportTilesAllowed: false,
    initialExtent: root.initialExtent ?? root.fullExtent,
    fullExtent: root.fullExtent,
    minScale: typeof root.minScale === "number" ? root.minScale : scales.reduce((a, b) => Math.max(a, b), 0),
    maxScale:
      typeof root.maxScale === "number"
        ? root.maxScale
        : scales.length > 0
          ? scales.reduce((a, b) => Math.min(a, b))
          : 0,
    tileInfo: root.tileInfo,
    maxzoom: zoom(root.maxzoom) ?? lastLevel,
    minLOD: zoom(root.minLOD) ?? 0,
    maxLOD: zoom(root.maxLOD) ?? lastLevel,
    resourceInfo: isObject(root.resourceInfo)
      ? root.resourceInfo
      : {
          styleVersion: 8,
          tileCompression: "gzip",
          cacheInfo: { storageInfo: { packetSize: 128, storageFormat: "compactV2" } },
        },
  };
  if (extra.serviceItemId !== undefined) out.serviceItemId = extra.serviceItemId;
  return out;
}

const zoom = (v: unknown): number | undefined =>
  typeof v === "number" && Number.isInteger(v) && v >= 0 && v <= MAX_ZOOM ? v : undefined;

/** A scheme (`https:`), or a protocol-relative `//host`: a URL that needs no base. */
const ABSOLUTE = /^(?:[a-z][a-z0-9+.-]*:|\/\/)/i;

/**
 * Resolves a reference found in the style (`../sprites/sprite`, `../fonts/{fontstack}/{range}.pbf`) against the
 * style's folder, by hand: `new URL` would percent-encode the `{…}` placeholders a client fills in.
 * Answers undefined for an absolute reference (it points elsewhere and stays as it is).
 */
function resolveInStyleFolder(ref: string, serviceUrl: string): string | undefined {
  if (ABSOLUTE.test(ref)) return undefined;
  const folder = ["resources", "styles"];
  const [path = "", ...rest] = ref.split("?");
  const suffix = rest.length > 0 ? `?${rest.join("?")}` : "";
  // `/x` is from the root of the service's host: under this service only when it names it.
  if (path.startsWith("/")) return `${new URL(serviceUrl).origin}${path}${suffix}`;
  for (const segment of path.split("/")) {
    if (segment === "..") folder.pop();
    else if (segment !== "." && segment !== "") folder.push(segment);
  }
  return `${serviceUrl}/${folder.join("/")}${suffix}`;
}

/** Adds the caller's query (`?token=…`, or "") to a URL of this service, after any query it has. */
function withQuery(url: string, query: string): string {
  if (query === "") return url;
  return url.includes("?") ? `${url}&${query.replace(/^\?/, "")}` : `${url}${query.startsWith("?") ? "" : "?"}${query}`;
}

/** A sprite or glyphs reference made absolute: under this service (with the query), or as it was. */
function rewriteResource(ref: string, serviceUrl: string, query: string): string {
  const resolved = resolveInStyleFolder(ref, serviceUrl);
  if (resolved === undefined) return ref;
  return resolved.startsWith(`${serviceUrl}/`) ? withQuery(resolved, query) : resolved;
}

/**
 * The package's style (`resources/styles/root.json`) made loadable by a Mapbox GL client from anywhere: each
 * vector source gets an absolute `tiles` template on this service and its `url` becomes the service's JSON
 * (absolute: the service JSON's `tiles` are relative, which Mapbox GL clients would resolve against the page, so
 * the explicit `tiles` stay beside it); `sprite` and `glyphs` become absolute. `query` (`?token=…` or "") is added to every URL of
 * this service. With `root` (the package's root.json), sources also learn the deepest level holding tiles, so
 * clients overzoom past it instead of asking for tiles that do not exist. Undefined for anything that is not
 * a style (not an object with a `sources` object). Linear in the style's size; the layers are not copied.
 */
export function rewriteStyle(style: unknown, serviceUrl: string, query: string, root?: Json): unknown {
  if (!isObject(style) || !isObject(style.sources)) return undefined;
  const base = serviceUrl.replace(/\/+$/, "");
  const tiles = [withQuery(`${base}/tile/{z}/{y}/{x}.pbf`, query)];
  // The service itself, as JSON: ArcGIS clients read its fullExtent, levels and tiling scheme from the source's
  // `url` (without it the ArcGIS Maps SDK takes the whole world as the layer's extent). Mapbox GL clients fetch
  // it too and keep the `tiles` given here, which take precedence over the service JSON's relative ones.
  const serviceJsonUrl = withQuery(`${base}?f=json`, query);
  const maxzoom = root ? (zoom(root.maxzoom) ?? zoom(root.maxLOD)) : undefined;
  const sources: Json = {};
  for (const [id, source] of Object.entries(style.sources)) {
    if (!isObject(source) || source.type !== "vector" || !pointsHere(source)) {
      sources[id] = source;
      continue;
    }
    const { url: _url, tiles: _tiles, ...rest } = source;
    sources[id] = {
      ...rest,
      url: serviceJsonUrl,
      tiles,
      ...(maxzoom !== undefined && rest.maxzoom === undefined ? { maxzoom } : {}),
    };
  }
  const out: Json = { ...style, sources };
  if (typeof style.glyphs === "string") out.glyphs = rewriteResource(style.glyphs, base, query);
  if (typeof style.sprite === "string") out.sprite = rewriteResource(style.sprite, base, query);
  else if (Array.isArray(style.sprite)) {
    out.sprite = style.sprite.map((s: unknown) =>
      isObject(s) && typeof s.url === "string" ? { ...s, url: rewriteResource(s.url, base, query) } : s,
    );
  }
  return out;
}

/**
 * Whether a vector source of the package's style means the package's own tiles: any `url` (the package holds
 * one tile set, whatever service its style was written for), or `tiles` given relative to the style.
 */
function pointsHere(source: Json): boolean {
  if (typeof source.url === "string") return true;
  return Array.isArray(source.tiles) && source.tiles.some((t) => typeof t === "string" && !ABSOLUTE.test(t));
}

/** A name a package's resource may have: font stacks hold spaces and commas (`Arial Regular,Arial Bold`). */
const NAME = /^[A-Za-z0-9 _.,@-]{1,200}$/;
const GLYPH_RANGE = /^\d{1,5}-\d{1,5}\.pbf$/;
const SPRITE_FILE = /^[A-Za-z0-9_-]{1,100}(?:@[1-9]x)?\.(json|png)$/;

const JSON_TYPE = "application/json; charset=utf-8";

/**
 * The file under the package's `p12/resources/` that `…/VectorTileServer/resources/<segments>` names, with its
 * content type; undefined for anything else (only these shapes, only plain names, never `.` or `..`).
 */
export function vectorResourceFile(segments: readonly string[]): { file: string; contentType: string } | undefined {
  if (segments.some((s) => !NAME.test(s) || s.startsWith("."))) return undefined;
  const [kind, first, second] = segments;
  switch (segments.length) {
    case 1:
      if (kind === "styles") return { file: "styles/root.json", contentType: JSON_TYPE };
      if (kind === "info") return { file: "info/root.json", contentType: JSON_TYPE };
      return undefined;
    case 2:
      if ((kind === "styles" || kind === "info") && first === "root.json") {
        return { file: `${kind}/root.json`, contentType: JSON_TYPE };
      }
      if (kind === "sprites" && first !== undefined) {
        const match = SPRITE_FILE.exec(first);
        if (!match) return undefined;
        return { file: `sprites/${first}`, contentType: match[1] === "png" ? "image/png" : JSON_TYPE };
      }
      return undefined;
    case 3:
      if (kind === "fonts" && first !== undefined && second !== undefined && GLYPH_RANGE.test(second)) {
        return { file: `fonts/${first}/${second}`, contentType: "application/x-protobuf" };
      }
      return undefined;
    default:
      return undefined;
  }
}
