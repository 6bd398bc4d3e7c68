// Checks an administrator's `defaultBasemap` (portals/self/update) against the rules of shared/portal-basemap.ts: a
// title and 1 to MAX_BASEMAP_LAYERS layers, each a tile, tiled image or vector tile service this site serves to the
// organization (found in its server's catalog) or another site's https URL; every problem named by its member.
import { catalogOf, findService } from "#shared/catalog.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import {
  type KeptBasemap,
  type KeptLayer,
  LAYER_TYPES,
  MAX_BASEMAP_CHARS,
  MAX_BASEMAP_LAYERS,
} from "#shared/portal-basemap.ts";
import { parseServicePath } from "#shared/serving/service-path.ts";
import type { Portal } from "#shared/stores/portals.ts";
import { hostedServer } from "#shared/stores/servers.ts";

const SERVICES_PATH = /^\/([^/]+)\/rest\/services\/(.+)$/;

/**
 * Reads and checks a `defaultBasemap` given to portals/self/update: the basemap as kept, or the problems (each
 * naming the member at fault). A layer naming a service of this site is looked up in its server's catalog.
 */
export async function readDefaultBasemap(
  raw: string,
  req: RestRequest,
  portal: Portal,
): Promise<{ basemap: KeptBasemap } | { problems: string[] }> {
  if (raw.length > MAX_BASEMAP_CHARS)
    return { problems: [`'defaultBasemap' is longer than ${MAX_BASEMAP_CHARS} characters.`] };
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return { problems: ["'defaultBasemap' is not JSON."] };
  }
  if (nestedDeeperThan(value, 8)) return { problems: ["'defaultBasemap' nests deeper than 8 levels."] };
  if (value === null || typeof value !== "object" || Array.isArray(value))
    return { problems: ["'defaultBasemap' must be an object with 'title' and 'baseMapLayers'."] };
  const b = value as Record<string, unknown>;
  const problems: string[] = [];
  if (typeof b.title !== "string" || b.title.trim() === "" || b.title.length > 256)
    problems.push("'defaultBasemap.title' must be a text of 1 to 256 characters.");
  if (!Array.isArray(b.baseMapLayers) || b.baseMapLayers.length === 0 || b.baseMapLayers.length > MAX_BASEMAP_LAYERS) {
    problems.push(`'defaultBasemap.baseMapLayers' must be an array of 1 to ${MAX_BASEMAP_LAYERS} layers.`);
    return { problems };
  }
  const layers: KeptLayer[] = [];
  for (const [i, entry] of (b.baseMapLayers as unknown[]).entries()) {
    const at = `'defaultBasemap.baseMapLayers[${i}]`;
    if (entry === null || typeof entry !== "object" || Array.isArray(entry)) {
      problems.push(`${at}' must be an object.`);
      continue;
    }
    const l = entry as Record<string, unknown>;
    const layerType = typeof l.layerType === "string" ? l.layerType : "";
    const serviceType = LAYER_TYPES[layerType];
    if (!serviceType) {
      problems.push(`${at}.layerType' must be one of ${Object.keys(LAYER_TYPES).join(", ")}.`);
      continue;
    }
    // A vector tile layer may name its service or its style (…/resources/styles/root.json).
    const given = typeof l.url === "string" ? l.url : typeof l.styleUrl === "string" ? l.styleUrl : "";
    if (given === "") {
      problems.push(`${at}.url' must be the URL of the layer's service.`);
      continue;
    }
    if (l.opacity !== undefined && (typeof l.opacity !== "number" || !(l.opacity >= 0 && l.opacity <= 1)))
      problems.push(`${at}.opacity' must be a number from 0 to 1.`);
    if (l.visibility !== undefined && typeof l.visibility !== "boolean")
      problems.push(`${at}.visibility' must be true or false.`);
    if (l.isReference !== undefined && typeof l.isReference !== "boolean")
      problems.push(`${at}.isReference' must be true or false.`);
    if (l.title !== undefined && (typeof l.title !== "string" || l.title.length > 256))
      problems.push(`${at}.title' must be a text of at most 256 characters.`);
    const where = await layerAddress(given, serviceType, req, portal);
    if ("problem" in where) {
      problems.push(`${at}.url' ${where.problem}`);
      continue;
    }
    layers.push({
      id: typeof l.id === "string" && l.id !== "" ? l.id.slice(0, 128) : `basemap-layer-${i + 1}`,
      ...(typeof l.title === "string" ? { title: l.title } : {}),
      layerType,
      ...where,
      opacity: typeof l.opacity === "number" ? l.opacity : 1,
      visibility: l.visibility !== false,
      ...(l.isReference === true ? { isReference: true } : {}),
    });
  }
  if (problems.length > 0) return { problems };
  return { basemap: { title: (b.title as string).trim(), baseMapLayers: layers } };
}

/** Where a basemap layer's service is: this site's (by path, found in its catalog) or another site's https URL. */
async function layerAddress(
  given: string,
  serviceType: string,
  req: RestRequest,
  portal: Portal,
): Promise<{ path: string } | { url: string } | { problem: string }> {
  if (given.length > 2048) return { problem: "is longer than 2048 characters." };
  let path: string;
  if (given.startsWith("/")) path = given;
  else {
    if (!URL.canParse(given)) return { problem: "is not a URL." };
    const url = new URL(given);
    const here = [req.origin, req.httpsOrigin].map((o) => new URL(o).host);
    if (!here.includes(url.host)) {
      if (url.protocol !== "https:") return { problem: "must be an https URL, or a service of this site." };
      if (url.username !== "" || url.password !== "") return { problem: "must not carry a user name or password." };
      return { url: url.href };
    }
    path = url.pathname;
  }
  path = path.replace(/\/resources\/styles(\/root\.json)?$/, "").replace(/\/+$/, "");
  const m = SERVICES_PATH.exec(path);
  const server = m?.[1] ? await hostedServer(m[1]) : undefined;
  const parsed = m?.[2] ? parseServicePath(m[2]) : "not a service path";
  if (!m || !server || server.portalId !== portal.portalId || typeof parsed === "string" || parsed.resource.length > 0)
    return { problem: `is not the URL of a service of this site (…/rest/services/[<folder>/]<name>/${serviceType}).` };
  if (parsed.type !== serviceType)
    return { problem: `names a ${parsed.type}: this layer type draws a ${serviceType}.` };
  const service = findService(await catalogOf(server.serverId), parsed.folder, parsed.name, parsed.type);
  if (!service) return { problem: "names a service that does not exist." };
  // A basemap every member's map draws: the service must be one every member may see.
  if (service.access !== "org" && service.access !== "public")
    return { problem: "names a service not shared with the organization: its members' maps could not draw it." };
  if (!service.source) return { problem: "names a service that is listed only: it has no tiles to draw." };
  return {
    path: `/${server.name}/rest/services/${service.folder ? `${service.folder}/` : ""}${service.name}/${service.type}`,
  };
}
