// A published service at its URL (/<server>/rest/services/[<folder>/]<name>/<Type>[/…]): its JSON and its content,
// read by reference from the data store where its cache lies. Who may read it follows the service's access
// (shared/catalog.ts), the same rule as the directory and the SOAP catalog.
import { requestCatalog, findService, serviceInfo, visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest, operationNotSupported, tokenRequired } from "#shared/errors.ts";
import { viewLink } from "#shared/viewer-links.ts";
import { escapeHtml, page, renderValue } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { byReferenceEdit, FeaturePage, featureResource } from "#shared/features/serve.ts";
import type { LayerOperation } from "#shared/hosted/edit.ts";
import { acceptsGzip, missing } from "#shared/serving/read.ts";
import { sceneLayer, sceneResource, sceneService } from "#shared/serving/scene.ts";
import { parseServicePath } from "#shared/serving/service-path.ts";
import { tiledServiceJson, tiledTile } from "#shared/serving/tiled.ts";
import { vectorJson, vectorResource, vectorTile } from "#shared/serving/vector.ts";
import type { ServedResource } from "#shared/metrics.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import type { Service } from "#shared/stores/services.ts";
import { itemPageHref, SERVER_REST_VERSION } from "#shared/urls.ts";

/** Whether a path below a service names attachments: `<layer>/<object id>/attachments[/<id>]`, `<layer>/queryAttachments`. */
const ID = /^(0|[1-9]\d{0,14})$/;
function isAttachmentPath([layer, a, b, c, d]: readonly (string | undefined)[]): boolean {
  if (layer === undefined || !/^(0|[1-9]\d{0,3})$/.test(layer)) return false;
  if (a === "queryAttachments" && b === undefined) return true;
  return a !== undefined && ID.test(a) && b === "attachments" && (c === undefined || (ID.test(c) && d === undefined));
}

const serviceNotFound = () =>
  new ApiError(404, "Service not found.", ["The service does not exist or is inaccessible."]);

/**
 * Resources that answer JSON when `f` is absent: every scene service resource (I3S readers never send `f`) and
 * content (tiles, style files), whose errors must not be pages. Other service roots default to HTML, as ArcGIS.
 */
const JSON_BY_DEFAULT =
  /\/SceneServer(\/|$)|\/(MapServer|ImageServer|VectorTileServer)\/(tile|resources)\/|\/FeatureServer\/\d+\/\d+\/attachments\/\d+$/;

/**
 * What ArcGIS map and image services offer besides their tiles, which a service published from a cache does not:
 * asked for, they answer ArcGIS's envelope for an unsupported operation (clients read it; an empty 404 they take for
 * a missing tile).
 */
const UNCACHED_OPERATIONS: Readonly<Record<string, readonly string[]>> = {
  MapServer: ["export", "identify", "find", "legend", "query", "generateKml", "exportTiles", "estimateExportTilesSize"],
  ImageServer: [
    "exportImage",
    "identify",
    "legend",
    "query",
    "download",
    "getSamples",
    "computeHistograms",
    "computeStatisticsHistograms",
    "measure",
  ],
};

/** A service listed without a cache (registered by an operator, or a feature layer of bulk publishing). */
function describedOnly(service: Service): Record<string, unknown> {
  return {
    currentVersion: SERVER_REST_VERSION,
    serviceDescription: service.description,
    capabilities: service.capabilities,
    layers: [],
    tables: [],
    serviceItemId: service.itemId,
  };
}

/** The service a path names, if the caller may see it, and what the rest of the path asks of it. */
export async function serveService(req: RestRequest): Promise<object> {
  const server = req.server;
  if (!server) throw new Error("server route without a server");
  // The raw path, not the decoded parameter: an encoded slash must stay inside its segment.
  const prefix = `/${server.name}/rest/services/`;
  const raw = req.event.rawPath.startsWith(prefix) ? req.event.rawPath.slice(prefix.length) : "";
  const parsed = parseServicePath(raw);
  if (typeof parsed === "string") throw serviceNotFound();
  const catalog = await requestCatalog(req);
  const service = findService(catalog, parsed.folder, parsed.name, parsed.type);
  if (!service || !visibleTo(req.identity, service)) {
    // An anonymous caller is asked to sign in whether or not the service exists: its existence is not told.
    if (req.identity.kind === "anonymous") throw tokenRequired();
    throw serviceNotFound();
  }
  const [first, ...rest] = parsed.resource;
  if (service.type === "FeatureServer" && service.view) {
    // A hosted view reads its source service's rows: the source found in the same catalog (its own sharing is not
    // the view's: a public view over a layer shared with a group is the point of views).
    const sourceItemId = service.view.sourceItemId;
    const origin = sourceItemId === undefined ? undefined : catalog.services.find((s) => s.itemId === sourceItemId);
    const url = (s: Service) =>
      `${serverUrl(server, req.origin)}/rest/services/${s.folder ? `${s.folder}/` : ""}${s.name}/${s.type}`;
    return featureResource(
      req,
      service,
      parsed.resource,
      origin && { service: origin, url: url(origin), visible: visibleTo(req.identity, origin) },
    );
  }
  if (service.type === "FeatureServer" && service.source) {
    // A hosted feature's attachments (its list, one's bytes) and a layer's queryAttachments (shared/serving/attachments.ts).
    if (isAttachmentPath(parsed.resource)) {
      const base = `${serverUrl(server, req.origin)}/rest/services/${service.folder ? `${service.folder}/` : ""}${service.name}/FeatureServer`;
      return (await import("#shared/serving/attachments.ts")).serveAttachments(req, service, base, parsed.resource);
    }
    // A by-reference layer's edits (its publisher turned editing on): their code loaded by the first edit only.
    const edit = byReferenceEdit(req, service, parsed.resource);
    if (edit) {
      const { editByReference } = await import("#shared/hosted/byref-edit.ts");
      return editByReference(req, service, edit.layerId, edit.operation as LayerOperation);
    }
    return featureResource(req, service, parsed.resource);
  }
  if (req.contentFormat)
    throw badRequest("Invalid format.", [`'f' ${req.contentFormat} is answered by feature layers only.`]);
  const info = await serviceInfo(service);
  if (!info) {
    if (first === undefined) return describedOnly(service);
    throw serviceNotFound();
  }
  const gzipOk = acceptsGzip(req.event.headers);
  const base = `${serverUrl(server, req.origin)}/rest/services/${service.folder ? `${service.folder}/` : ""}${service.name}/${service.type}`;
  switch (info.kind) {
    case "tiled":
      if (first === undefined) return tiledServiceJson(service, info);
      if (first === "tile") return tiledTile(service, info, rest, gzipOk);
      if (first === "layers" && rest.length === 0 && service.type === "MapServer") return { layers: [], tables: [] };
      if (rest.length === 0 && UNCACHED_OPERATIONS[service.type]?.includes(first))
        throw operationNotSupported(
          `This ${service.type} serves the tiles of its cache only (tile/<level>/<row>/<column>), not '${first}'.`,
        );
      break;
    case "vector":
      if (first === undefined) return vectorJson(service, info);
      if (first === "tile") return vectorTile(service, info, rest, gzipOk);
      if (first === "resources") {
        const token = req.identity.kind === "anonymous" ? undefined : req.params.get("token");
        return vectorResource(service, info, rest, base, token, gzipOk);
      }
      break;
    case "scene": {
      if (first === undefined) return sceneService(service, info);
      if (first === "layers" && rest.length === 0) return { layers: [sceneLayer(info)] };
      if (first === "layers" && rest[0] === "0") {
        if (rest.length === 1) return sceneLayer(info);
        return sceneResource(service, info, rest.slice(1), gzipOk);
      }
      break;
    }
  }
  return missing();
}

/** The service's page: its name and type, a way back to its folder, and its JSON as tables. */
export function servicePage(data: object, req: RestRequest): string {
  if (data instanceof FeaturePage) return data.html;
  const parsed = parseServicePath(req.event.rawPath.replace(/^\/[^/]+\/rest\/services\//, ""));
  const title =
    typeof parsed === "string"
      ? "Service"
      : `${parsed.folder ? `${parsed.folder}/` : ""}${parsed.name} (${parsed.type})`;
  const folder = typeof parsed === "string" || !parsed.folder ? "" : `/${encodeURIComponent(parsed.folder)}`;
  const home = `/${req.server?.name ?? ""}/rest/services${folder}?f=html`;
  const itemId = (data as { serviceItemId?: unknown }).serviceItemId;
  const item = typeof itemId === "string" ? ` · <a href="${escapeHtml(itemPageHref(itemId))}">Item</a>` : "";
  return page(
    title,
    `<h1>${escapeHtml(title)}</h1><p><a href="${escapeHtml(home)}">Folder: ${escapeHtml(folder ? decodeURIComponent(folder.slice(1)) : "/")}</a> · <a href="?f=pjson">JSON</a> · ${viewLink(req.path)}${item}</p>${renderValue(data)}`,
  );
}

/** What a path asks for, for the dashboard's count of content served (the `Served` metric's `Resource`). */
const RESOURCES: readonly [RegExp, ServedResource][] = [
  [/\/(MapServer|ImageServer)\/tile\//, "tile"],
  [/\/VectorTileServer\/tile\//, "vector-tile"],
  [/\/VectorTileServer\/resources\//, "style"],
  [/\/SceneServer\/./, "scene"],
  [/\/FeatureServer\/\d+\/query$/, "query"],
];
export const resourceOf = (path: string) => RESOURCES.find(([re]) => re.test(path))?.[1];

/** JSON for scene services and content, HTML for other service roots (JSON_BY_DEFAULT). */
export const defaultFormatOf = (path: string) => (JSON_BY_DEFAULT.test(path) ? "json" : "html");
