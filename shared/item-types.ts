// Items whose content is text or a URL (web maps, apps' configurations, references to services elsewhere): which
// ArcGIS item types they may be, which of those hold JSON, how a web map's JSON must look (the Web Map
// specification's required members), and how the item fields clients send with them (`typeKeywords`, `extent`,
// `properties`, …) are read. Files are shared/uploads.ts's; a data store's registration is shared/add-item.ts's.
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { readTags } from "#shared/publishing.ts";

/**
 * The item types added with `text` or `url`, by the names ArcGIS gives them ("Items and item types"). A type not
 * listed is refused by name, so a typo never makes an item no client recognizes.
 */
export const TEXT_ITEM_TYPES: readonly string[] = [
  // Maps, scenes and what draws them
  "Web Map",
  "Web Scene",
  "Web Link Chart",
  "Feature Collection",
  "Feature Collection Template",
  "Map Area",
  "Group Layer",
  "Symbol Set",
  "Color Set",
  "Style",
  "Vector Tile Style",
  // Apps and their configurations
  "Web Mapping Application",
  "Mobile Application",
  "Native Application",
  "Application",
  "Web Experience",
  "Web Experience Template",
  "Dashboard",
  "Operation View",
  "StoryMap",
  "Story Map",
  "StoryMap Theme",
  "Form",
  "Hub Site Application",
  "Hub Page",
  "Hub Initiative",
  "Site Application",
  "Site Page",
  "Insights Workbook",
  "Insights Page",
  "Insights Model",
  "Notebook",
  "Solution",
  "Workforce Project",
  "QuickCapture Project",
  "Survey123 Add In",
  "Experience Builder Widget",
  "Web AppBuilder Widget",
  "AppBuilder Extension",
  "Code Sample",
  "Code Attachment",
  "Administrative Report",
  // Services and documents elsewhere, by reference (`url`)
  "Feature Service",
  "Map Service",
  "Image Service",
  "Scene Service",
  "Vector Tile Service",
  "Stream Service",
  "Geoprocessing Service",
  "Geocoding Service",
  "Geometry Service",
  "Network Analysis Service",
  "Geodata Service",
  "Globe Service",
  "WMS",
  "WMTS",
  "WFS",
  "OGCFeatureServer",
  "KML",
  "GeoJson",
  "CSV",
  "Document Link",
  "Image",
];

/** The types whose `text` is JSON (refused when it does not parse), served back as application/json. */
export const JSON_ITEM_TYPES: ReadonlySet<string> = new Set([
  "Web Map",
  "Web Scene",
  "Web Link Chart",
  "Feature Collection",
  "Feature Collection Template",
  "Map Area",
  "Group Layer",
  "Symbol Set",
  "Color Set",
  "Web Mapping Application",
  "Mobile Application",
  "Web Experience",
  "Web Experience Template",
  "Dashboard",
  "Operation View",
  "StoryMap",
  "Hub Site Application",
  "Hub Page",
  "Hub Initiative",
  "Site Application",
  "Site Page",
  "Form",
  "Insights Workbook",
  "Insights Page",
  "Notebook",
  "Solution",
  "Workforce Project",
  "QuickCapture Project",
]);

export const WEB_MAP_TYPE = "Web Map";

const KNOWN = new Set(TEXT_ITEM_TYPES);

/** Whether `type` is one an item of text or a URL may have. */
export const isTextItemType = (type: string): boolean => KNOWN.has(type);

/**
 * The most an item's text may take, in bytes: a Lambda answer carries at most ~4.6 MB of binary after base64
 * (MAX_CONTENT_BYTES), and `data` answers the text whole; 4 MB leaves room.
 */
export const MAX_ITEM_TEXT_BYTES = 4 * 1024 * 1024;
/** Text up to this size is kept in a table record of its own; above it, in the item files (a DynamoDB item: 400 KB). */
export const INLINE_TEXT_BYTES = 100 * 1024;
/** How deep an item's JSON text may nest (a web map's renderers and pop-ups nest about fifteen levels). */
export const MAX_TEXT_DEPTH = 64;
/** `properties`: a small JSON object of an app's settings, kept in the item record itself. */
export const MAX_PROPERTIES_BYTES = 32 * 1024;
export const MAX_PROPERTIES_DEPTH = 16;
const MAX_URL = 2048;

// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The problem with a web map's JSON, naming the member (the Web Map specification's required ones), or undefined. */
export function webMapProblem(map: unknown): string | undefined {
  if (map === null || typeof map !== "object" || Array.isArray(map)) return "A web map's text must be a JSON object.";
  const m = map as Record<string, unknown>;
  if (!Array.isArray(m.operationalLayers)) return "'operationalLayers' must be an array of layers.";
  const base = m.baseMap;
  if (base === null || typeof base !== "object" || Array.isArray(base))
    return "'baseMap' must be an object with 'baseMapLayers' and 'title'.";
  const b = base as Record<string, unknown>;
  if (!Array.isArray(b.baseMapLayers)) return "'baseMap.baseMapLayers' must be an array of layers.";
  if (typeof b.title !== "string") return "'baseMap.title' must be a string.";
  const sr = m.spatialReference;
  if (sr === null || typeof sr !== "object" || Array.isArray(sr))
    return "'spatialReference' must be an object with 'wkid' or 'wkt'.";
  const s = sr as Record<string, unknown>;
  if (typeof s.wkid !== "number" && typeof s.latestWkid !== "number" && typeof s.wkt !== "string")
    return "'spatialReference' must have a numeric 'wkid' or a 'wkt'.";
  if (typeof m.version !== "string" || !/^\d+\.\d+$/.test(m.version))
    return "'version' must be the web map specification's version as a string, e.g. \"2.31\".";
  const layers: [string, unknown][] = [
    ...m.operationalLayers.map((l, i) => [`operationalLayers[${i}]`, l] as [string, unknown]),
    ...b.baseMapLayers.map((l, i) => [`baseMap.baseMapLayers[${i}]`, l] as [string, unknown]),
  ];
  for (const [where, layer] of layers) {
    const problem = layerProblem(layer);
    if (problem) return `'${where}' ${problem}`;
  }
  return undefined;
}

/**
 * A layer of a web map: an object with a string `id` and `layerType`; a layer of an ArcGIS service needs its
 * `url` or the `itemId` of its item (a feature collection carries its features instead); a `url` is http(s).
 */
function layerProblem(layer: unknown): string | undefined {
  if (layer === null || typeof layer !== "object" || Array.isArray(layer)) return "must be an object.";
  const l = layer as Record<string, unknown>;
  if (typeof l.id !== "string" || l.id === "") return "must have a string 'id'.";
  if (typeof l.layerType !== "string" || l.layerType === "") return "must have a string 'layerType'.";
  if (l.url !== undefined && (typeof l.url !== "string" || !isHttpUrl(l.url)))
    return "has a 'url' that is not http(s).";
  const byService = l.layerType.startsWith("ArcGIS") && l.featureCollection === undefined;
  if (byService && typeof l.url !== "string" && typeof l.itemId !== "string")
    return `(${l.layerType.slice(0, 64)}) must have its service's 'url' or its item's 'itemId'.`;
  if (l.layerType === "GroupLayer" && l.layers !== undefined) {
    if (!Array.isArray(l.layers)) return "has 'layers' that is not an array.";
    for (const [i, sub] of l.layers.entries()) {
      const problem = layerProblem(sub);
      if (problem) return `layers[${i}] ${problem}`;
    }
  }
  return undefined;
}

/** An absolute http(s) URL without credentials in it (a URL item is a reference anyone reading it sees). */
export function isHttpUrl(raw: string): boolean {
  if (raw.length > MAX_URL || CONTROL.test(raw)) return false;
  try {
    const u = new URL(raw);
    return (u.protocol === "https:" || u.protocol === "http:") && u.username === "" && u.password === "";
  } catch {
    return false;
  }
}

/** An item's text as kept: the text, its size in UTF-8 bytes, and whether it is JSON. */
export interface ItemTextValue {
  readonly body: string;
  readonly size: number;
  readonly json: boolean;
}

/**
 * Checks an item's `text` for its type: its size, JSON where the type holds JSON (a web map against the
 * specification), its depth. Problems are pushed; the text is answered when it may be kept.
 */
export function readItemText(raw: string, type: string, problems: string[]): ItemTextValue | undefined {
  const size = Buffer.byteLength(raw, "utf8");
  if (size > MAX_ITEM_TEXT_BYTES) {
    problems.push(`'text' may take at most ${MAX_ITEM_TEXT_BYTES / (1024 * 1024)} MB (got ${size} bytes).`);
    return undefined;
  }
  let parsed: unknown;
  let json = false;
  try {
    parsed = JSON.parse(raw);
    json = parsed !== null && typeof parsed === "object";
  } catch {
    json = false;
  }
  if (JSON_ITEM_TYPES.has(type) && !json) {
    problems.push(`'text' of a ${type} item must be a JSON object or array.`);
    return undefined;
  }
  if (json && nestedDeeperThan(parsed, MAX_TEXT_DEPTH)) {
    problems.push(`'text' nests more than ${MAX_TEXT_DEPTH} levels deep.`);
    return undefined;
  }
  if (type === WEB_MAP_TYPE) {
    const problem = webMapProblem(parsed);
    if (problem) {
      problems.push(`The web map is not valid: ${problem}`);
      return undefined;
    }
  }
  return { body: raw, size, json };
}

/** The fields of an item besides its content, as addItem and update take them (each optional). */
export interface ItemFields {
  readonly typeKeywords?: readonly string[];
  readonly url?: string;
  readonly extent?: readonly (readonly number[])[];
  readonly spatialReference?: string;
  readonly accessInformation?: string;
  readonly licenseInfo?: string;
  /** JSON text of an object, or "" for none. */
  readonly properties?: string;
}

interface Params {
  get(name: string): string | undefined;
}

function boundedText(params: Params, name: string, max: number, problems: string[]): string | undefined {
  const v = params.get(name);
  if (v === undefined) return undefined;
  if (v.length > max) {
    problems.push(`'${name}' may have at most ${max} characters.`);
    return undefined;
  }
  return v;
}

/**
 * `extent` as ArcGIS takes it: `xmin,ymin,xmax,ymax` or `[[xmin,ymin],[xmax,ymax]]`, in WGS84 degrees; "" clears it.
 */
function readExtent(raw: string, problems: string[]): number[][] | undefined {
  const t = raw.trim();
  if (t === "" || t === "null" || t === "[]") return [];
  let nums: unknown[];
  if (t.startsWith("[")) {
    try {
      const v: unknown = JSON.parse(t);
      nums = Array.isArray(v) && v.length === 2 && v.every(Array.isArray) ? (v as unknown[][]).flat() : [];
    } catch {
      nums = [];
    }
  } else nums = t.split(",").map((n) => (n.trim() === "" ? NaN : Number(n)));
  const ok =
    nums.length === 4 &&
    nums.every((n) => typeof n === "number" && Number.isFinite(n)) &&
    Math.abs(nums[0] as number) <= 180 &&
    Math.abs(nums[2] as number) <= 180 &&
    Math.abs(nums[1] as number) <= 90 &&
    Math.abs(nums[3] as number) <= 90 &&
    (nums[0] as number) <= (nums[2] as number) &&
    (nums[1] as number) <= (nums[3] as number);
  if (!ok) {
    problems.push("'extent' must be 'xmin,ymin,xmax,ymax' or [[xmin,ymin],[xmax,ymax]] in degrees, min before max.");
    return undefined;
  }
  const [a, b, c, d] = nums as [number, number, number, number];
  return [
    [a, b],
    [c, d],
  ];
}

/** Reads and checks the item fields a request gives; problems are pushed, each naming its field. */
export function readItemFields(params: Params, problems: string[]): ItemFields {
  const out: { -readonly [K in keyof ItemFields]: ItemFields[K] } = {};
  const keywords = params.get("typeKeywords");
  if (keywords !== undefined) out.typeKeywords = readTags(keywords, problems);
  const url = params.get("url");
  if (url !== undefined) {
    if (url !== "" && !isHttpUrl(url))
      problems.push(`'url' must be an http(s) URL of at most ${MAX_URL} characters, without a user or password.`);
    else out.url = url;
  }
  const extent = params.get("extent");
  if (extent !== undefined) {
    const e = readExtent(extent, problems);
    if (e) out.extent = e;
  }
  const sr = boundedText(params, "spatialReference", 256, problems);
  if (sr !== undefined) {
    if (CONTROL.test(sr)) problems.push("'spatialReference' may not have control characters.");
    else out.spatialReference = sr;
  }
  const access = boundedText(params, "accessInformation", 2048, problems);
  if (access !== undefined) out.accessInformation = access;
  const license = boundedText(params, "licenseInfo", 65536, problems);
  if (license !== undefined) out.licenseInfo = license;
  const properties = params.get("properties");
  if (properties !== undefined) {
    const t = properties.trim();
    if (t === "" || t === "null") out.properties = "";
    else if (Buffer.byteLength(t, "utf8") > MAX_PROPERTIES_BYTES)
      problems.push(`'properties' may take at most ${MAX_PROPERTIES_BYTES / 1024} KB.`);
    else {
      let v: unknown;
      try {
        v = JSON.parse(t);
      } catch {
        v = undefined;
      }
      if (v === null || typeof v !== "object" || Array.isArray(v)) problems.push("'properties' must be a JSON object.");
      else if (nestedDeeperThan(v, MAX_PROPERTIES_DEPTH))
        problems.push(`'properties' nests more than ${MAX_PROPERTIES_DEPTH} levels deep.`);
      else out.properties = JSON.stringify(v);
    }
  }
  return out;
}
