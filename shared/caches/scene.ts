// I3S resources of a SceneServer layer mapped to the files of an extracted scene layer package (SLPK): each
// REST resource has one shape and a few candidate files (gzip first, as packages store them). Pure and strict:
// ids are plain tokens, so no resource can name a file outside the layer.

const ID = /^[A-Za-z0-9_-]{1,64}$/;
const NUMBER = /^\d{1,9}$/;
const FIELD = /^f_\d{1,6}$/;

const JSON_TYPE = "application/json; charset=utf-8";
const BINARY = "application/octet-stream";

/** The layer document of a package, gzip first. */
export const layerDocumentFiles = (): string[] => ["3dSceneLayer.json.gz", "3dSceneLayer.json"];

const json = (base: string) => [`${base}.json.gz`, `${base}.json`];
const bin = (base: string) => [`${base}.bin.gz`, `${base}.bin`];

/**
 * The candidate files (relative to the layer's folder, in the order to try) and content type of the I3S
 * resource named by the segments after `layers/<id>/`; undefined for anything that is not one.
 */
export function sceneResourceFiles(segments: readonly string[]): { files: string[]; contentType: string } | undefined {
  const [kind, a, b, c, d] = segments;
  if (segments.length > 5 || segments.some((s) => !ID.test(s))) return undefined;
  if (kind === "nodepages" && segments.length === 2 && a !== undefined && NUMBER.test(a)) {
    return { files: json(`nodepages/${a}`), contentType: JSON_TYPE };
  }
  if (
    kind === "statistics" &&
    segments.length === 3 &&
    a !== undefined &&
    FIELD.test(a) &&
    b !== undefined &&
    NUMBER.test(b)
  ) {
    return { files: json(`statistics/${a}/${b}`), contentType: JSON_TYPE };
  }
  if (kind === "statistics" && segments.length === 2 && a === "summary") {
    return { files: json("statistics/summary"), contentType: JSON_TYPE };
  }
  if (kind !== "nodes" || a === undefined || !(NUMBER.test(a) || a === "root")) return undefined;
  const node = `nodes/${a}`;
  if (segments.length === 2) return { files: json(`${node}/3dNodeIndexDocument`), contentType: JSON_TYPE };
  if (b === "shared" && segments.length === 3) return { files: json(`${node}/sharedResource`), contentType: JSON_TYPE };
  if (b === "geometries" && segments.length === 4 && c !== undefined && NUMBER.test(c)) {
    return { files: [...bin(`${node}/geometries/${c}`), `${node}/geometries/${c}.draco.gz`], contentType: BINARY };
  }
  if (b === "features" && segments.length === 4 && c !== undefined && NUMBER.test(c)) {
    return { files: json(`${node}/features/${c}`), contentType: JSON_TYPE };
  }
  if (
    b === "attributes" &&
    segments.length === 5 &&
    c !== undefined &&
    FIELD.test(c) &&
    d !== undefined &&
    NUMBER.test(d)
  ) {
    return { files: bin(`${node}/attributes/${c}/${d}`), contentType: BINARY };
  }
  if (b === "textures" && segments.length === 4 && c !== undefined && /^\d{1,9}(_\d{1,9}){0,2}$/.test(c)) {
    const t = `${node}/textures/${c}`;
    return { files: [`${t}.jpg`, `${t}.png`, `${t}.bin.dds.gz`, `${t}.ktx2`, `${t}.ktx`], contentType: BINARY };
  }
  return undefined;
}

/** The content type of a texture file by its name. */
export function textureTypeOf(file: string): string {
  if (file.endsWith(".png")) return "image/png";
  if (file.endsWith(".ktx2")) return "image/ktx2";
  if (file.endsWith(".jpg")) return "image/jpeg";
  return BINARY;
}
