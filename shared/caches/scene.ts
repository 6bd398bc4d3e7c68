// What a SceneServer answers from an extracted scene layer package (SLPK), without reading anything: the
// service JSON and layer document from the package's 3dSceneLayer.json, and the files each I3S resource below
// `layers/<id>/` may be (gzip first, as packages store them). Pure and strict: every id is a plain token, so
// no resource can name a file outside the layer.
import { SERVER_REST_VERSION } from "#shared/urls.ts";

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

/** Any segment at all: bounded, so every test below is linear in the input. */
const TOKEN = /^[A-Za-z0-9_-]{1,64}$/;
const NUMBER = /^\d{1,9}$/;
/** Node ids: integers (node pages, 1.7+), `root` and tree keys like `3-1-0` (1.6 and older). */
const NODE = /^(?:root|\d{1,9}(?:-\d{1,9}){0,31})$/;
const FIELD = /^f_\d{1,6}$/;
/** Texture ids: `0` (1.7+), `0_0` (1.6), `0_0_1` (a compressed variant). */
const TEXTURE = /^\d{1,9}(?:_\d{1,9}){0,2}$/;
/** The most segments a resource has (`nodes/<id>/attributes/f_<k>/<n>`). */
const MAX_SEGMENTS = 5;

const JSON_TYPE = "application/json; charset=utf-8";
const BINARY = "application/octet-stream";

/** The layer document of a package, gzip first. */
export const layerDocumentFiles = (): string[] => ["3dSceneLayer.json.gz", "3dSceneLayer.json"];

const json = (base: string) => ({ files: [`${base}.json.gz`, `${base}.json`], contentType: JSON_TYPE });
const binary = (...bases: string[]) => ({
  files: bases.flatMap((b) => [`${b}.gz`, b]),
  contentType: BINARY,
});

/** A texture's formats differ by file, and the id does not say which the package holds: try each. */
const TEXTURE_FILES = [".jpg", ".png", ".bin.dds.gz", ".bin.dds", ".ktx2", ".ktx"] as const;

/**
 * The candidate files (relative to the layer's folder, in the order to try) and content type of the I3S
 * resource named by the segments after `layers/<id>/`; undefined for anything that is not one. A texture's
 * content type is that of its first candidate: `textureTypeOf` gives the one of the file actually found.
 */
export function sceneResourceFiles(segments: readonly string[]): { files: string[]; contentType: string } | undefined {
  if (segments.length < 2 || segments.length > MAX_SEGMENTS || !segments.every((s) => TOKEN.test(s))) {
    return undefined;
  }
  const [kind = "", a = "", b = "", c = "", d = ""] = segments;
  const n = segments.length;
  if (kind === "nodepages") return n === 2 && NUMBER.test(a) ? json(`nodepages/${a}`) : undefined;
  if (kind === "statistics") {
    if (n === 2 && a === "summary") return json("statistics/summary");
    return n === 3 && FIELD.test(a) && NUMBER.test(b) ? json(`statistics/${a}/${b}`) : undefined;
  }
  if (kind !== "nodes" || !NODE.test(a)) return undefined;
  const node = `nodes/${a}`;
  if (n === 2) return json(`${node}/3dNodeIndexDocument`);
  if (n === 3) return b === "shared" ? json(`${node}/sharedResource`) : undefined;
  if (n === 4 && b === "geometries" && NUMBER.test(c)) {
    return binary(`${node}/geometries/${c}.bin`, `${node}/geometries/${c}.draco`);
  }
  if (n === 4 && b === "features" && NUMBER.test(c)) return json(`${node}/features/${c}`);
  if (n === 4 && b === "textures" && TEXTURE.test(c)) {
    const files = TEXTURE_FILES.map((ext) => `${node}/textures/${c}${ext}`);
    return { files, contentType: textureTypeOf(files[0] ?? "") };
  }
  if (n === 5 && b === "attributes" && FIELD.test(c) && NUMBER.test(d)) {
    return binary(`${node}/attributes/${c}/${d}.bin`);
  }
  return undefined;
}

/** The content type of a texture file, by its name (a `.gz` one is served with Content-Encoding: gzip). */
export function textureTypeOf(file: string): string {
  const name = file.endsWith(".gz") ? file.slice(0, -3) : file;
  if (name.endsWith(".jpg")) return "image/jpeg";
  if (name.endsWith(".png")) return "image/png";
  if (name.endsWith(".dds")) return "image/vnd-ms.dds";
  if (name.endsWith(".ktx2")) return "image/ktx2";
  if (name.endsWith(".ktx")) return "image/ktx";
  return BINARY;
}

/** The I3S version of a layer document (its store's), which ArcGIS gives as the service's version. */
export function i3sVersionOf(layer: Json): string {
  const version = isObject(layer.store) ? layer.store.version : undefined;
  return typeof version === "string" && /^\d{1,2}\.\d{1,2}$/.test(version) ? version : "1.7";
}

/**
 * The layer document as served at `layers/0` and listed in the service JSON: mapgate serves one layer per
 * service, and its `href` points back at it as I3S readers expect.
 */
export function sceneLayerJson(layer: Json): Json {
  return { ...layer, id: 0, href: "./layers/0" };
}

/** The service JSON (`…/SceneServer?f=json`), as ArcGIS answers it for a service of one layer. */
export function sceneServiceJson(layer: Json, extra: { serviceItemId?: string; name: string }): Json {
  return {
    serviceName: extra.name,
    name: extra.name,
    currentVersion: SERVER_REST_VERSION,
    serviceVersion: i3sVersionOf(layer),
    supportedBindings: ["REST"],
    layers: [sceneLayerJson(layer)],
    ...(extra.serviceItemId ? { serviceItemId: extra.serviceItemId } : {}),
  };
}
