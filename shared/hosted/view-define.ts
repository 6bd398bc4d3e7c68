// Hosted views, defined as ArcGIS clients define them: `createService` with `isView=true` (a service of its own, with
// its own item, sharing and capabilities, and no data), then on its admin wire `addToDefinition` of layers whose
// `adminLayerInfo.viewLayerDefinition` names the source (`sourceServiceName`, `sourceLayerId`, `sourceLayerFields`),
// a layer's `updateDefinition` of its `viewDefinitionQuery` and its fields' `visible`, and `deleteFromDefinition` of
// its layers. A view keeps only this definition (the service record's `view`): its layers read the source's rows
// where they lie (shared/features/view.ts), so an edit of the source is seen through the view on the next request.
// Views are read-only here: their capabilities are Query (editing through a view is not offered yet), and Sync is
// not offered at all. Only the view's owner or an administrator changes it, and only one who owns the source service
// (or administers the organization) makes a view of it, as ArcGIS has it.
import { type Defined, definitionOf, serviceNotFound } from "#shared/hosted/admin-service.ts";
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import { openDataset, servesLayer } from "#shared/features/sources.ts";
import { DEFINITION_QUERY } from "#shared/features/view.ts";
import { parseWhere } from "#shared/features/where.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import { serviceItem } from "#shared/items.ts";
import { logger } from "#shared/log.ts";
import { HOSTED_FOLDER, restServiceUrl } from "#shared/publishing.ts";
import { emit } from "#shared/stores/events.ts";
import { retryingConflicts } from "#shared/stores/dynamo.ts";
import { changeRelationship, getItem, type Item } from "#shared/stores/items.ts";
import { type Server, serverUrl } from "#shared/stores/servers.ts";
import {
  createService,
  readCatalog,
  type Service,
  ServiceExistsError,
  type ServiceView,
  setServiceView,
  type ViewLayer,
} from "#shared/stores/services.ts";

const WHAT = {
  create: "Unable to create service.",
  add: "Unable to add feature service definition.",
  update: "Unable to update feature service definition.",
  delete: "Unable to delete feature service definition.",
} as const;

/** The most layers one view shows, and the highest id it gives (as a defined service's). */
const MAX_VIEW_LAYERS = 100;
const MAX_LAYER_ID = 999;
/** The longest definition query kept (the where parser's own bound is larger; a view's needs far less). */
const MAX_DEFINITION_QUERY = 8192;
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);
const say = (v: unknown) => JSON.stringify(typeof v === "string" ? v.slice(0, 64) : v)?.slice(0, 80) ?? "undefined";
const keysNamed = (keys: readonly string[]) =>
  keys
    .slice(0, 5)
    .map((k) => `'${k.slice(0, 32)}'`)
    .join(", ");

/** `createService` with `isView`: the view's service and item, with no layers and no data. */
export async function createView(
  req: RestRequest,
  p: {
    readonly owner: string;
    readonly folder: string | undefined;
    readonly server: Server;
    readonly name: string;
    readonly description: string;
  },
): Promise<object> {
  const portalId = req.portal.portalId;
  const service: Service = {
    serverId: p.server.serverId,
    portalId,
    folder: HOSTED_FOLDER,
    name: p.name,
    type: "FeatureServer",
    // A view's own: Query only (editing through views is not offered, Sync never).
    capabilities: "Query",
    description: p.description,
    tags: [],
    itemId: newItemId(),
    owner: p.owner,
    access: "private",
    extensions: [],
    view: { layers: [], revision: 0 },
    created: Date.now(),
  };
  const base = serviceItem(service, restServiceUrl(serverUrl(p.server, ""), HOSTED_FOLDER, p.name, "FeatureServer"));
  // ArcGIS's keywords of a view's item: clients tell a view from the layer it shows by "View Service".
  const item: Item = {
    ...base,
    typeKeywords: [...base.typeKeywords, "Hosted Service", "View Service"],
    ...(p.folder ? { ownerFolder: p.folder } : {}),
  };
  try {
    await retryingConflicts(() => createService(service, item));
  } catch (err) {
    if (err instanceof ServiceExistsError) throw badRequest(WHAT.create, [`Service name '${p.name}' already exists.`]);
    throw err;
  }
  const serviceurl = restServiceUrl(serverUrl(p.server, req.httpsOrigin), HOSTED_FOLDER, p.name, "FeatureServer");
  await emit("servicePublished", {
    portalId,
    owner: p.owner,
    jobId: newItemId(),
    itemId: service.itemId,
    type: "Feature Service",
    url: serviceurl,
  });
  return {
    encodedServiceURL: serviceurl,
    itemId: service.itemId,
    name: p.name,
    serviceItemId: service.itemId,
    serviceurl,
    size: -1,
    success: true,
    type: "Feature Service",
    isView: true,
  };
}

/** The admin wire of a view: its layers added and deleted, a layer's definition query and fields, its capabilities. */
export async function viewOperation(req: RestRequest, defined: Defined): Promise<object> {
  const view = defined.service.view;
  if (!view) throw new Error("a view operation on a service that is no view");
  const [first, second, ...rest] = defined.resource;
  const layerId = first !== undefined && /^(0|[1-9]\d{0,8})$/.test(first) ? Number(first) : undefined;
  const operation = layerId === undefined ? first : second;
  if (rest.length > 0 || operation === undefined || (layerId === undefined && second !== undefined))
    throw new ApiError(404, "Not Found", [
      "The admin wire of a hosted view answers addToDefinition and deleteFromDefinition of its layers, updateDefinition of its capabilities, and updateDefinition of a layer's definition query and fields.",
    ]);
  if (operation === "truncate")
    throw badRequest("Unable to truncate layer.", ["A view's rows are its source layer's: truncate that layer."]);
  const what =
    operation === "addToDefinition" ? WHAT.add : operation === "deleteFromDefinition" ? WHAT.delete : WHAT.update;
  if (!["addToDefinition", "updateDefinition", "deleteFromDefinition"].includes(operation))
    throw new ApiError(404, "Not Found", [`'${operation.slice(0, 64)}' is no operation of a hosted view here.`]);
  const definition = definitionOf(req.params.get(operation), operation, what);
  if (layerId !== undefined) {
    if (operation !== "updateDefinition")
      throw badRequest(what, [
        'A view\'s fields are its source layer\'s: show or hide them with the layer\'s updateDefinition ({"fields": [{"name": …, "visible": false}]}).',
      ]);
    return updateViewLayer(defined, layerId, definition);
  }
  if (operation === "addToDefinition") return addViewLayers(req, defined, definition);
  if (operation === "deleteFromDefinition") return deleteViewLayers(defined, definition);
  return updateViewService(defined, definition);
}

/** Records the view's next definition over the one read; a change made meanwhile is the caller's to try again. */
async function keep(defined: Defined, what: string, next: Omit<ServiceView, "revision">): Promise<void> {
  const view = defined.service.view as ServiceView;
  if (!(await setServiceView(defined.service, { ...next, revision: view.revision + 1 }))) {
    const still = (await readCatalog(defined.service.serverId)).services.some(
      (s) => s.itemId === defined.service.itemId,
    );
    if (!still) throw serviceNotFound();
    throw new ApiError(409, what, ["The view's definition changed meanwhile: read it again and retry."]);
  }
  logger.info("hosted view changed", { itemId: defined.service.itemId, revision: view.revision + 1 });
}

/** A source layer's schema as its service serves it (all its fields: a view shows a part of them). */
async function sourceSchema(source: Service, id: number): Promise<LayerSchema> {
  if (!source.source) throw serviceNotFound();
  return (await openDataset(source.source, id)).schema;
}

/** The view's source service (its item id), from the catalog: gone when deleted. */
async function sourceOf(defined: Defined): Promise<Service | undefined> {
  const id = defined.service.view?.sourceItemId;
  if (id === undefined) return undefined;
  return (await readCatalog(defined.service.serverId)).services.find((s) => s.itemId === id);
}

/** The visible fields a view layer's definition names, checked against its source layer: names as the source has them. */
function visibleFields(raw: unknown, schema: LayerSchema, label: string, problems: string[]): string[] | undefined {
  if (raw === undefined || raw === null || raw === "*") return undefined;
  if (!Array.isArray(raw) || raw.length > 2000) {
    problems.push(`${label}: 'sourceLayerFields' must be "*" or a list of {"name": …} of the source layer's fields.`);
    return undefined;
  }
  const names: string[] = [];
  for (const f of raw) {
    const name = isObject(f) ? (f.source ?? f.name) : f;
    const field =
      typeof name === "string" ? schema.fields.find((x) => x.name.toLowerCase() === name.toLowerCase()) : undefined;
    if (!field) problems.push(`${label}: the source layer has no field ${say(name)}.`);
    else if (isObject(f) && f.visible === false) continue;
    else if (!names.includes(field.name)) names.push(field.name);
  }
  // The object id is always shown: a layer without one cannot be queried, drawn or paged.
  if (!names.some((n) => n.toLowerCase() === schema.objectIdField.toLowerCase())) names.unshift(schema.objectIdField);
  return names;
}

/** A definition query, checked against the source layer (all its fields, those the view hides too). */
function definitionQueryOf(raw: unknown, schema: LayerSchema, label: string, problems: string[]): string | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== "string" || raw.length > MAX_DEFINITION_QUERY || CONTROL.test(raw.replace(/[\t\n\r]/g, " "))) {
    problems.push(`${label}: '${DEFINITION_QUERY}' must be text of at most ${MAX_DEFINITION_QUERY} characters.`);
    return undefined;
  }
  try {
    parseWhere(raw, schema, { parameter: "where" });
  } catch (err) {
    // The parser's own words say what it cannot read.
    const why = err instanceof ApiError ? err.details.slice(1).join(" ") : "";
    problems.push(
      `${label}: '${DEFINITION_QUERY}' is not a where clause of the source layer's fields (the standardized SQL subset a query's where takes)${why ? `: ${why}` : "."}`,
    );
    return undefined;
  }
  return raw.trim() === "" ? undefined : raw;
}

/** Service-level addToDefinition of a view: layers (and tables) of its one source service. */
async function addViewLayers(req: RestRequest, defined: Defined, definition: Record<string, unknown>) {
  const what = WHAT.add;
  const view = defined.service.view as ServiceView;
  const unknown = Object.keys(definition).filter((k) => k !== "layers" && k !== "tables");
  if (unknown.length > 0)
    throw badRequest(what, [`Only layers and tables are added to a view (not ${keysNamed(unknown)}).`]);
  const entries: { raw: Record<string, unknown>; label: string }[] = [];
  const problems: string[] = [];
  for (const kind of ["layers", "tables"] as const) {
    const list = definition[kind] ?? [];
    if (!Array.isArray(list) || list.length > MAX_VIEW_LAYERS) {
      problems.push(`'${kind}' must be a list of at most ${MAX_VIEW_LAYERS} layers.`);
      continue;
    }
    list.forEach((raw: unknown, i) => {
      if (isObject(raw)) entries.push({ raw, label: `${kind}[${i}]` });
      else problems.push(`${kind}[${i}] must be a JSON object.`);
    });
  }
  if (problems.length === 0 && entries.length === 0) problems.push("Give at least one layer to add.");
  if (problems.length > 0) throw badRequest(what, problems);
  // What names the source: `adminLayerInfo.viewLayerDefinition` (its `table` member, as some clients nest it).
  const named = entries.map(({ raw, label }) => {
    const info = isObject(raw.adminLayerInfo) ? raw.adminLayerInfo.viewLayerDefinition : undefined;
    const d = isObject(info) ? (isObject(info.table) ? { ...info, ...info.table } : info) : undefined;
    if (!d) problems.push(`${label}: a view's layer names its source in 'adminLayerInfo.viewLayerDefinition'.`);
    const sourceLayerId = d === undefined ? undefined : Number(d.sourceLayerId);
    if (d && (!Number.isInteger(sourceLayerId) || (sourceLayerId as number) < 0))
      problems.push(`${label}: 'sourceLayerId' must be a source layer's id (got ${say(d.sourceLayerId)}).`);
    const serviceName = d?.sourceServiceName;
    if (d && (typeof serviceName !== "string" || serviceName === ""))
      problems.push(`${label}: 'sourceServiceName' must name the source service.`);
    const id = raw.id;
    if (
      id !== undefined &&
      id !== null &&
      (typeof id !== "number" || !Number.isInteger(id) || id < 0 || id > MAX_LAYER_ID)
    )
      problems.push(`${label}: 'id' must be a whole number from 0 to ${MAX_LAYER_ID}.`);
    const name = raw.name;
    if (
      name !== undefined &&
      name !== null &&
      (typeof name !== "string" || name.trim() === "" || name.length > 120 || CONTROL.test(name))
    )
      problems.push(`${label}: 'name' must be 1–120 characters, without control characters.`);
    return {
      label,
      raw,
      serviceName: String(serviceName ?? ""),
      sourceLayerId: sourceLayerId ?? 0,
      fields: d?.sourceLayerFields,
      id: typeof id === "number" ? id : undefined,
      name: typeof name === "string" ? name.trim() : undefined,
    };
  });
  if (problems.length > 0) throw badRequest(what, problems);
  // One source service per view, on the view's own server, in the Hosted folder: a hosted service (not a view).
  const serviceNames = new Set(named.map((n) => n.serviceName.toLowerCase()));
  if (serviceNames.size > 1) throw badRequest(what, ["A view shows the layers of one source service."]);
  const catalog = await readCatalog(defined.service.serverId);
  const wanted = [...serviceNames][0] as string;
  const source = catalog.services.find(
    (s) =>
      s.type === "FeatureServer" &&
      s.folder.toLowerCase() === HOSTED_FOLDER.toLowerCase() &&
      s.name.toLowerCase() === wanted &&
      s.portalId === defined.service.portalId,
  );
  const identity = req.identity;
  if (!source || identity.kind !== "user" || !visibleTo(identity, source))
    throw badRequest(what, [`The source service '${wanted.slice(0, 120)}' does not exist or is inaccessible.`]);
  if (source.view) throw badRequest(what, ["A view's source is a hosted feature service, not another view."]);
  if (source.source?.datastoreId !== HOSTED_STORE_ID)
    throw badRequest(what, [
      "A view's source is a hosted feature service (published from a file or made by createService).",
    ]);
  if (identity.user.username !== source.owner && identity.user.role !== "org_admin")
    throw badRequest(what, ["Only the source service's owner or an administrator makes a view of it."]);
  if (view.sourceItemId !== undefined && view.sourceItemId !== source.itemId)
    throw badRequest(what, ["A view shows the layers of one source service: this view's is another."]);
  // Each layer checked against its source layer as served now.
  const layers: { id: number | undefined; layer: ViewLayer; label: string }[] = [];
  for (const n of named) {
    if (!source.source || !servesLayer(source.source, n.sourceLayerId)) {
      problems.push(`${n.label}: the source service has no layer with id ${n.sourceLayerId}.`);
      continue;
    }
    const schema = await sourceSchema(source, n.sourceLayerId);
    const fields = visibleFields(n.fields, schema, n.label, problems);
    const query = definitionQueryOf(n.raw.viewDefinitionQuery ?? n.raw.definitionQuery, schema, n.label, problems);
    layers.push({
      id: n.id,
      label: n.label,
      layer: {
        name: n.name ?? schema.name,
        sourceLayerId: n.sourceLayerId,
        ...(query !== undefined ? { definitionQuery: query } : {}),
        ...(fields ? { fields } : {}),
      },
    });
  }
  if (problems.length > 0) throw badRequest(what, problems);
  const shown = view.layers.filter((l) => l !== null);
  if (shown.length + layers.length > MAX_VIEW_LAYERS)
    throw badRequest(what, [`A view has at most ${MAX_VIEW_LAYERS} layers and tables.`]);
  const taken = new Set(view.layers.flatMap((l) => (l ? [l.name.toLowerCase()] : [])));
  const next: (ViewLayer | null)[] = [...view.layers];
  // An id given is a new one: every id below the view's count was given before (a deleted one stays its own), and
  // one request gives an id once.
  const given = new Set<number>();
  for (const l of layers) {
    if (l.id === undefined) continue;
    if (l.id < view.layers.length || given.has(l.id))
      problems.push(`${l.label}: layer id ${l.id} is taken (a deleted layer's id is never given again).`);
    given.add(l.id);
  }
  let free = Math.max(next.length, ...[...given].map((id) => id + 1));
  const added: { name: string; id: number }[] = [];
  for (const l of layers) {
    if (taken.has(l.layer.name.toLowerCase()))
      problems.push(`${l.label}: the view has a layer named '${l.layer.name.slice(0, 64)}' already.`);
    taken.add(l.layer.name.toLowerCase());
    const id = l.id ?? free++;
    if (id > MAX_LAYER_ID) problems.push(`The view has given its ${MAX_LAYER_ID + 1} layer ids: no more are added.`);
    while (next.length <= id) next.push(null);
    next[id] = l.layer;
    added.push({ name: l.layer.name, id });
  }
  if (problems.length > 0) throw badRequest(what, problems);
  // Ids skipped over (a layer given a higher id) are left as deleted ones: never given later.
  await keep(defined, what, { sourceItemId: source.itemId, layers: next });
  if (view.sourceItemId === undefined) {
    // ArcGIS relates a view's item to its source's (Service2Service, from the source): clients find a view's source
    // by it. Kept after the view's definition: a failure leaves a view that reads its source without the link.
    const [origin, destination] = await Promise.all([getItem(source.itemId), getItem(defined.service.itemId)]);
    if (origin && destination)
      await changeRelationship(origin, destination, "Service2Service").catch((e: unknown) =>
        logger.warn("view relationship not recorded", { itemId: defined.service.itemId, error: String(e) }),
      );
  }
  const isTable = (a: { name: string }) => named.find((n) => (n.name ?? "") === a.name)?.label.startsWith("tables");
  return { success: true, layers: added.filter((a) => !isTable(a)), tables: added.filter((a) => isTable(a)) };
}

/** Service-level deleteFromDefinition of a view: layers by id (the source's data stays as it is). */
async function deleteViewLayers(defined: Defined, definition: Record<string, unknown>) {
  const what = WHAT.delete;
  const view = defined.service.view as ServiceView;
  const ids: number[] = [];
  const problems: string[] = [];
  for (const kind of ["layers", "tables"] as const) {
    const list = definition[kind] ?? [];
    if (!Array.isArray(list) || list.length > MAX_VIEW_LAYERS) {
      problems.push(`'${kind}' must be a list of at most ${MAX_VIEW_LAYERS} {"id": <n>}.`);
      continue;
    }
    for (const entry of list) {
      const id = isObject(entry) ? Number(entry.id) : NaN;
      if (!Number.isInteger(id) || id < 0)
        problems.push(`Each of '${kind}' must be {"id": <a layer's id>} (got ${say(entry)}).`);
      else if (!view.layers[id]) problems.push(`The view has no layer or table with id ${id}.`);
      else ids.push(id);
    }
  }
  if (problems.length === 0 && ids.length === 0) problems.push("Give the ids of the layers or tables to delete.");
  if (problems.length > 0) throw badRequest(what, problems);
  const next = view.layers.map((l, id) => (ids.includes(id) ? null : l));
  await keep(defined, what, { ...(view.sourceItemId ? { sourceItemId: view.sourceItemId } : {}), layers: next });
  return { success: true };
}

/**
 * Service-level updateDefinition of a view: its capabilities, which are Query only here (editing through a view is
 * not offered yet; Sync is not offered on any hosted service).
 */
function updateViewService(_defined: Defined, definition: Record<string, unknown>) {
  const what = WHAT.update;
  const others = Object.keys(definition).filter((k) => k !== "capabilities");
  if (others.length > 0 || definition.capabilities === undefined)
    throw badRequest(what, [
      `A view's own definition changes only its 'capabilities' here${others.length > 0 ? ` (not ${keysNamed(others)})` : ""}: change a layer's definition query and fields at …/FeatureServer/<id>/updateDefinition.`,
    ]);
  const caps = definition.capabilities;
  const named =
    typeof caps === "string"
      ? caps
          .split(",")
          .map((c) => c.trim())
          .filter((c) => c !== "")
      : undefined;
  const refused = named?.filter((c) => c.toLowerCase() !== "query");
  if (!named || (refused?.length ?? 0) > 0)
    throw badRequest(what, [
      `Views here are read-only: their capabilities are Query${refused && refused.length > 0 ? ` (${keysNamed(refused)} cannot be set)` : ""}. Edit the source layer, shared with its editors.`,
    ]);
  return { success: true };
}

/** Layer-level updateDefinition of a view: its definition query, and which of its source's fields it shows. */
async function updateViewLayer(defined: Defined, id: number, definition: Record<string, unknown>) {
  const what = WHAT.update;
  const view = defined.service.view as ServiceView;
  const layer = view.layers[id];
  if (!layer) throw badRequest(what, [`The view has no layer or table with id ${id}.`]);
  const allowed = new Set(["viewDefinitionQuery", "definitionQuery", "fields", "name"]);
  const unknown = Object.keys(definition).filter((k) => !allowed.has(k));
  if (unknown.length > 0)
    throw badRequest(what, [
      `A view's layer changes its 'viewDefinitionQuery', its fields' 'visible' and its 'name' here (not ${keysNamed(unknown)}).`,
    ]);
  const source = await sourceOf(defined);
  if (!source?.source) throw badRequest(what, ["The view's source service no longer exists."]);
  if (!servesLayer(source.source, layer.sourceLayerId))
    throw badRequest(what, ["The view's source layer no longer exists."]);
  const schema = await sourceSchema(source, layer.sourceLayerId);
  const problems: string[] = [];
  let next: ViewLayer = layer;
  const queryGiven = "viewDefinitionQuery" in definition ? definition.viewDefinitionQuery : definition.definitionQuery;
  if ("viewDefinitionQuery" in definition || "definitionQuery" in definition) {
    const query = definitionQueryOf(queryGiven ?? "", schema, `Layer ${id}`, problems);
    const { definitionQuery: _old, ...rest } = next;
    void _old;
    next = { ...rest, ...(query !== undefined ? { definitionQuery: query } : {}) };
  }
  if (definition.name !== undefined) {
    const name = definition.name;
    if (typeof name !== "string" || name.trim() === "" || name.length > 120 || CONTROL.test(name))
      problems.push("'name' must be 1–120 characters, without control characters.");
    else next = { ...next, name: name.trim() };
  }
  if (definition.fields !== undefined) {
    const fields = definition.fields;
    if (!Array.isArray(fields) || fields.length === 0 || fields.length > 2000)
      problems.push(`'fields' must be a list of {"name": …, "visible": true|false}.`);
    else {
      const shown = new Set((next.fields ?? schema.fields.map((f) => f.name)).map((n) => n.toLowerCase()));
      for (const f of fields) {
        const field =
          isObject(f) && typeof f.name === "string"
            ? schema.fields.find((x) => x.name.toLowerCase() === String(f.name).toLowerCase())
            : undefined;
        if (!isObject(f) || !field) {
          problems.push(`The source layer has no field ${say(isObject(f) ? f.name : f)}.`);
          continue;
        }
        if (typeof f.visible !== "boolean") {
          problems.push(`Field '${field.name}': 'visible' must be true or false.`);
          continue;
        }
        if (!f.visible && field.name.toLowerCase() === schema.objectIdField.toLowerCase())
          problems.push(`'${field.name}' is the layer's object id: it is always visible.`);
        else if (f.visible) shown.add(field.name.toLowerCase());
        else shown.delete(field.name.toLowerCase());
      }
      // Kept in the source's order and case.
      next = { ...next, fields: schema.fields.filter((f) => shown.has(f.name.toLowerCase())).map((f) => f.name) };
    }
  }
  if (problems.length > 0) throw badRequest(what, problems);
  if (
    next.name !== layer.name &&
    view.layers.some((l, i) => i !== id && l?.name.toLowerCase() === next.name.toLowerCase())
  )
    throw badRequest(what, [`The view has a layer named '${next.name.slice(0, 64)}' already.`]);
  await keep(defined, what, {
    ...(view.sourceItemId ? { sourceItemId: view.sourceItemId } : {}),
    layers: view.layers.map((l, i) => (i === id ? next : l)),
  });
  return { success: true };
}
