// What every change on a server's admin wire (`/<server>/rest/admin/services/<folder>/<name>/FeatureServer[/…]`)
// starts from: the feature service the path names, found for its owner or an administrator, and the JSON definition
// the request carries. Shared by the hosted services' definitions (shared/hosted/define.ts, served by the uploads
// function) and by-reference services' capabilities (shared/hosted/byref-define.ts, served by the service
// function, which reaches their databases), so both find and refuse a service the same way.
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest, forbidden, tokenRequired } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { EDITING_BOXES } from "#shared/item-pages.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { parseServicePath } from "#shared/serving/service-path.ts";
import { getItem, type Item } from "#shared/stores/items.ts";
import { getService, readCatalog, type Service } from "#shared/stores/services.ts";

/** The largest definition taken (a thousand fields described at length fit). */
export const MAX_DEFINITION = 1024 * 1024;

/** A defined service, found on the admin wire, with its item: the caller is its owner or an administrator. */
export interface Defined {
  readonly service: Service;
  readonly item: Item;
  /** What follows `FeatureServer` in the path: an operation, or a layer id and an operation. */
  readonly resource: readonly string[];
}

export const serviceNotFound = () =>
  new ApiError(404, "Service not found.", ["The service does not exist or is inaccessible."]);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** A JSON object parameter (a definition): bounded in size and depth, and named when it is not one. */
export function definitionOf(raw: string | undefined, name: string, what: string): Record<string, unknown> {
  if (raw === undefined || raw.trim() === "") throw badRequest(what, [`'${name}' must be specified.`]);
  if (raw.length > MAX_DEFINITION) throw badRequest(what, [`'${name}' is longer than 1 MB.`]);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    throw badRequest(what, [`'${name}' must be JSON.`]);
  }
  if (!isObject(value) || nestedDeeperThan(value, 16)) throw badRequest(what, [`'${name}' must be a JSON object.`]);
  return value;
}

/** The feature service the admin path names, with its item, for a change by its owner or an administrator. */
export async function definedService(req: RestRequest): Promise<Defined> {
  const addressed = await addressedService(req);
  return { ...addressed, item: await itemOf(addressed.service) };
}

/**
 * The feature service the admin path names and what follows `FeatureServer`, for a change by its owner or an
 * administrator, without its item (what the service function reads: it is not granted the items table).
 */
export async function addressedService(req: RestRequest): Promise<Omit<Defined, "item">> {
  const server = req.server;
  if (!server) throw new Error("admin route without a server");
  if (req.identity.kind === "anonymous") throw tokenRequired();
  // The raw path, not the decoded parameter: an encoded slash must stay inside its segment.
  const prefix = `/${server.name}/rest/admin/services/`;
  const raw = req.event.rawPath.startsWith(prefix) ? req.event.rawPath.slice(prefix.length) : "";
  const parsed = parseServicePath(raw);
  if (typeof parsed === "string" || parsed.type !== "FeatureServer") throw serviceNotFound();
  return { service: await ownedService(req, parsed.folder, parsed.name), resource: parsed.resource };
}

/** The feature service `folder/name` (hosted or by reference) with its item, for a change by its owner or an administrator. */
export async function ownedFeatureService(
  req: RestRequest,
  folder: string,
  name: string,
): Promise<{ readonly service: Service; readonly item: Item }> {
  const service = await ownedService(req, folder, name);
  return { service, item: await itemOf(service) };
}

async function itemOf(service: Service): Promise<Item> {
  const item = await getItem(service.itemId);
  if (!item) throw serviceNotFound();
  return item;
}

/**
 * The feature service `folder/name` of the addressed server for a change: one the caller cannot see is not told to
 * exist (404); one they see but neither own nor administer is refused (403).
 */
async function ownedService(req: RestRequest, folder: string, name: string): Promise<Service> {
  const server = req.server;
  if (!server) throw new Error("server route without a server");
  if (req.identity.kind === "anonymous") throw tokenRequired();
  const catalog = await readCatalog(server.serverId);
  const f = folder.toLowerCase();
  const n = name.toLowerCase();
  const service = catalog.services.find(
    (s) => s.folder.toLowerCase() === f && s.name.toLowerCase() === n && s.type === "FeatureServer",
  );
  const identity = req.identity;
  if (!service || identity.kind !== "user" || !visibleTo(identity, service)) throw serviceNotFound();
  if (identity.user.portalId !== service.portalId) throw serviceNotFound();
  if (identity.user.username !== service.owner && identity.user.role !== "org_admin") throw forbidden();
  return service;
}

/**
 * The definition a service page's editing form stands for: each of its checkboxes sent as true when checked and not
 * at all when not (a browser sends nothing for an unchecked box), so each setting is read as on or off, never as
 * "leave as it is"; the form's marker says every box was offered. A service published by reference is offered its
 * capabilities, and who may reach which features only once its table's creator column is named (`settings`), never
 * public data collection.
 */
export function editingFormDefinition(
  req: RestRequest,
  what: string,
  offered: { readonly settings: boolean; readonly publicDataCollection: boolean } = {
    settings: true,
    publicDataCollection: true,
  },
): Record<string, unknown> {
  const on = (name: string) => {
    const v = req.params.get(name);
    if (v !== undefined && v !== "true")
      throw badRequest(what, [`The form's '${name.slice(0, 40)}' is a checkbox: 'true' or not sent.`]);
    return v === "true";
  };
  const capabilities = ["Query", ...EDITING_BOXES.capabilities.filter((c) => on(`capability:${c}`))];
  // Editing, as ArcGIS lists it, when any edit is allowed.
  if (capabilities.length > 1) capabilities.push("Editing");
  const definition: Record<string, unknown> = { capabilities: capabilities.join(",") };
  if (offered.settings) {
    const tracking: Record<string, boolean> = { enableEditorTracking: true };
    for (const [name] of EDITING_BOXES.settings) {
      if (name === "publicDataCollection") continue;
      tracking[name === "ownershipAccessControl" ? "enableOwnershipAccessControl" : name] = on(name);
    }
    definition.editorTrackingInfo = tracking;
  }
  if (offered.publicDataCollection) definition.publicDataCollection = on("publicDataCollection");
  return definition;
}

/**
 * Why a change of a service's settings was not kept: another change was made since `service` was read (409: read them
 * again and retry, as nothing of this one was kept), or the service is gone (404).
 */
export async function settingsNotKept(service: Service, what: string): Promise<ApiError> {
  const now = await getService(service.serverId, service.folder, service.name);
  return now && now.itemId === service.itemId
    ? new ApiError(409, what, [
        "The service's settings were changed by another request meanwhile: nothing of this one was kept. Read them again and retry.",
      ])
    : serviceNotFound();
}

/**
 * Refuses a definition that names nothing a change of this kind keeps, or anything else (up to five of those named):
 * "`subject` changes only its 'a', 'b' here (not 'x')`tail`".
 */
export function onlyKeys(
  definition: Record<string, unknown>,
  kept: readonly string[],
  what: string,
  subject: string,
  tail = ".",
): void {
  const given = Object.keys(definition);
  const others = given.filter((k) => !kept.includes(k));
  if (given.length > others.length && others.length === 0) return;
  const not =
    others.length > 0
      ? ` (not ${others
          .slice(0, 5)
          .map((k) => `'${k.slice(0, 32)}'`)
          .join(", ")})`
      : "";
  throw badRequest(what, [`${subject} changes only its ${kept.map((k) => `'${k}'`).join(", ")} here${not}${tail}`]);
}
