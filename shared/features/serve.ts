// A bulk-published FeatureServer at its URL: the service, its one layer (or table) and `query`, read from the
// dataset where it lies, as JSON or, with f=html, as pages (layer-html.ts). The caller's access to the service
// was checked before (shared/catalog.ts).
import { DatasetError } from "#shared/features/errors.ts";
import { editable, featureServiceJson, layerJson, layersJson } from "#shared/features/layer-json.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import type { OpenDataset } from "#shared/features/dataset.ts";
import { layerCount, openDataset, servesLayer } from "#shared/features/sources.ts";
import { ApiError, badRequest, forbidden, methodNotAllowed, operationNotSupported } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { StorageError } from "#shared/storage/storage.ts";
import { SERVER_REST_VERSION } from "#shared/urls.ts";
import type { Service, ServiceSource } from "#shared/stores/services.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { queryRestriction } from "#shared/features/ownership.ts";
import { lastEditOf } from "#shared/stores/last-edits.ts";

/** A data source that cannot be read now: the request fails clearly, the log says why, the rest answers. */
export const unavailable = () =>
  new ApiError(500, "Error performing query operation", ["The layer's data source is unavailable."]);

const invalidUrl = () => new ApiError(400, "Invalid URL", ["Invalid URL"]);

/** ArcGIS's editing operations of a layer (the service has `applyEdits`): a layer published by reference is read-only. */
const EDITS = new Set(["applyEdits", "addFeatures", "updateFeatures", "deleteFeatures"]);
const readOnly = (operation: string) =>
  operationNotSupported(`Its layers are read-only (capabilities: Query): '${operation}' is not supported.`);

/**
 * A resource's f=html page, rendered here: the service function's HTML renderer passes it through instead of
 * showing the data as generic tables.
 */
export class FeaturePage {
  readonly html: string;

  constructor(html: string) {
    this.html = html;
  }
}

/**
 * The query's module once the first query loaded it: an `import()` of a module already loaded still resolves its
 * specifier and waits on the loader's promises, a cost on every query that a held promise does not have.
 */
let queryModule: Promise<typeof import("#shared/features/query.ts")> | undefined;

const isSourceFault = (err: unknown) => err instanceof DatasetError || err instanceof StorageError;

/** Each layer's schema when its source last answered in this warm function, by `<item id>/<layer id>` (bounded). */
const lastKnown = new Map<string, LayerSchema>();
function remember(itemId: string, id: number, schema: LayerSchema): void {
  const key = `${itemId}/${id}`;
  lastKnown.delete(key);
  lastKnown.set(key, schema);
  if (lastKnown.size > 256) lastKnown.delete(lastKnown.keys().next().value as string);
}

/**
 * The layer a warning is about, as an operator finds it: its service's path, the layer's id and its dataset's name
 * (`Pg/public_cities_1a2b3c/FeatureServer/0 (public.cities)`). Never the connection: the service and dataset names
 * are what the services directory shows anyone who may see the layer.
 */
function layerName(service: Service): string {
  const dataset = lastKnown.get(`${service.itemId}/0`)?.name ?? service.source?.path.split("/").at(-1) ?? "";
  const path = `${service.folder ? `${service.folder}/` : ""}${service.name}/${service.type}/0`;
  return dataset ? `${path} (${dataset})` : path;
}

/** A source that cannot be read (now or midway): the request fails clearly, the log says why, naming the layer. */
function sourceFault(service: Service, err: unknown): never {
  if (isSourceFault(err)) {
    logger.warn("feature layer unavailable", {
      layer: layerName(service),
      itemId: service.itemId,
      datastoreId: service.source?.datastoreId,
      reason: err.message,
    });
    throw unavailable();
  }
  throw err;
}

/** A view's source service as its `sources` resources name it (`url` its REST URL). */
export interface ViewOrigin {
  readonly service: Service;
  readonly url: string;
  /** Whether the caller may see the source service (only then is it named to them). */
  readonly visible: boolean;
}

/**
 * `…/FeatureServer/sources` and `…/FeatureServer/<id>/sources` of a view: the service, or the layer, it reads. Named
 * only to a caller who may see the source (a public view over a private layer does not point anonymous callers at
 * it).
 */
function viewSources(service: Service, origin: ViewOrigin | undefined, layerId: number | undefined): object {
  if (!origin) throw new ApiError(400, "Invalid URL", ["The view has no source yet: add a layer to it first."]);
  if (!origin.visible) throw forbidden();
  const named = {
    name: origin.service.name,
    type: "FeatureServer",
    url: origin.url,
    serviceItemId: origin.service.itemId,
  };
  if (layerId === undefined) return { currentVersion: SERVER_REST_VERSION, services: [named] };
  const sourceLayerId = service.view?.layers[layerId]?.sourceLayerId;
  return {
    currentVersion: SERVER_REST_VERSION,
    layers: [{ ...named, url: `${origin.url}/${sourceLayerId}`, layerId: sourceLayerId }],
  };
}

type Views = typeof import("#shared/features/view.ts");

/** A view's source, or the view's fault if its source service is gone (it was deleted under it). */
function readSource(service: Service, origin: ViewOrigin | undefined, views: Views | undefined): ServiceSource {
  if (!service.view || !views) {
    if (!service.source) throw new Error("a feature layer without a source");
    return service.source;
  }
  const source = views.viewSource(service.view, origin?.service.source);
  if (!source) {
    logger.warn("hosted view without its source", { itemId: service.itemId, source: service.view.sourceItemId });
    throw unavailable();
  }
  return source;
}

/**
 * A by-reference layer with editing on tells its last edit (kept in DynamoDB: shared/stores/last-edits.ts; its
 * service's making before its first); a hosted layer's is its data's, already in its schema.
 */
async function withLastEdits(
  service: Service,
  ids: readonly number[],
  schemas: readonly LayerSchema[],
): Promise<LayerSchema[]> {
  if (!editable(service) || service.source?.datastoreId === HOSTED_STORE_ID) return [...schemas];
  return Promise.all(
    schemas.map(async (schema, i) => {
      const last = await lastEditOf(service, ids[i] ?? 0);
      return { ...schema, editing: { ...schema.editing, lastEditDate: last ?? service.created } };
    }),
  );
}

/**
 * The edit a POST to a by-reference layer with editing on asks for (its layer id, none for the service's applyEdits),
 * or undefined when it asks for none (a hosted layer's edits have routes of their own).
 */
export function byReferenceEdit(
  req: RestRequest,
  service: Service,
  resource: readonly string[],
): { readonly layerId?: number; readonly operation: string } | undefined {
  const source = service.source;
  if (!source || source.datastoreId === HOSTED_STORE_ID || !editable(service)) return undefined;
  if (req.method.toUpperCase() !== "POST") return undefined;
  const [first, second, ...rest] = resource;
  if (first === "applyEdits" && second === undefined) return { operation: first };
  if (first !== undefined && /^(0|[1-9]\d{0,3})$/.test(first) && servesLayer(source, Number(first)))
    if (rest.length === 0 && second !== undefined && EDITS.has(second))
      return { layerId: Number(first), operation: second };
  return undefined;
}

/**
 * The resource a path below the service names, as JSON (or GeoJSON/PBF content for `query`), or with f=html as
 * its page: rendered from the same JSON, and for `query` the form with the answer, when one was asked, below it.
 * A hosted view (`origin` its source service) reads its source's rows as its layers' definitions restrict them.
 */
export async function featureResource(
  req: RestRequest,
  service: Service,
  resource: readonly string[],
  origin?: ViewOrigin,
): Promise<object> {
  const [first, second, ...rest] = resource;
  // Loaded for views only (it brings the where parser): other services' JSON and tiles never pay for it.
  const views = service.view ? await import("#shared/features/view.ts") : undefined;
  const source = readSource(service, origin, views);
  // A layer's id: 0…n-1 as the service's source numbers its layers, less those deleted from its definition (written
  // as ArcGIS writes ids: no leading zeros).
  const count = layerCount(source);
  const layerId =
    first !== undefined && /^(0|[1-9]\d{0,3})$/.test(first) && servesLayer(source, Number(first)) ? Number(first) : -1;
  const isLayer = layerId >= 0;
  // Told before the source is read: the answer does not depend on it.
  const edit =
    (first === "applyEdits" && second === undefined) || (isLayer && rest.length === 0 && EDITS.has(second ?? ""));
  // An editable hosted layer's edits are POSTed to their own routes (the uploads function), an editable by-reference
  // layer's are made before this (shared/serving/service.ts); anything else reaching here (a GET) is told to POST, and
  // a read-only layer is told it is.
  if (edit && editable(service)) throw methodNotAllowed();
  if (first === "applyEdits" && second === undefined) throw readOnly(first);
  if (isLayer && second !== undefined && rest.length === 0 && EDITS.has(second)) throw readOnly(second);
  if (
    service.view &&
    rest.length === 0 &&
    (first === "sources" ? second === undefined : isLayer && second === "sources")
  )
    return viewSources(service, origin, isLayer ? layerId : undefined);
  const isQuery = isLayer && second === "query" && rest.length === 0;
  if (req.contentFormat && !isQuery) {
    throw badRequest("Invalid format.", [`'f' ${req.contentFormat} is answered by 'query' only.`]);
  }
  if (!req.server) throw new Error("a feature resource without its server");
  const pages =
    req.format === "html"
      ? (await import("#shared/features/layer-html.ts")).featurePages(req.server, service)
      : undefined;
  const whole = first === undefined || (first === "layers" && second === undefined);
  if (!whole && (!isLayer || (second !== undefined && !isQuery))) throw invalidUrl();
  /** The service or its layers (every layer's schema, by id; none at a deleted id), or one layer (its own only). */
  const describe = (schemas: readonly (LayerSchema | undefined)[]): object => {
    if (first === undefined) {
      const json = featureServiceJson(service, schemas);
      return pages ? new FeaturePage(pages.service(json)) : json;
    }
    if (first === "layers") {
      const json = layersJson(service, schemas);
      return pages ? new FeaturePage(pages.layers(json)) : json;
    }
    const layer = layerJson(service, schemas[layerId] as LayerSchema, layerId);
    return pages ? new FeaturePage(pages.layer(layer)) : layer;
  };
  const ids = whole ? Array.from({ length: count }, (_, i) => i).filter((i) => servesLayer(source, i)) : [layerId];
  /** Schemas by id, from those of `ids` in order. */
  const byId = (schemas: readonly LayerSchema[]) => {
    const all: (LayerSchema | undefined)[] = Array.from({ length: count }, () => undefined);
    ids.forEach((id, i) => (all[id] = schemas[i]));
    return all;
  };
  try {
    // Loaded by the first query, before the file is opened (no await between opening and reading): tiles and
    // service JSON never pay for the query's libraries (JTS, proj4), nor for the pages' modules.
    const query = isQuery ? await (queryModule ??= import("#shared/features/query.ts")) : undefined;
    const datasets: OpenDataset[] = [];
    for (const id of ids) {
      const opened = await openDataset(source, id);
      const shown = service.view?.layers[id];
      const dataset = shown && views ? views.viewDataset(opened, shown) : opened;
      remember(service.itemId, id, dataset.schema);
      datasets.push(dataset);
    }
    const dataset = datasets[0] as OpenDataset;
    if (!query)
      return describe(
        byId(
          await withLastEdits(
            service,
            ids,
            datasets.map((d) => d.schema),
          ),
        ),
      );
    // The caller's ownership rules on a hosted layer, or a by-reference one whose creator column is named: a
    // condition of the query's plan.
    const restrict =
      source.datastoreId === HOSTED_STORE_ID || "connection" in source
        ? queryRestriction(req.identity, service, dataset.schema)
        : undefined;
    if (!pages) return await query.runQuery(req, dataset, restrict);
    // normalize (what the form shows; whether a query was asked) → validate and compute (the plan, run) → respond.
    const layer = layerJson(service, dataset.schema, layerId);
    const answer = pages.asked(req.params)
      ? await query.answerQuery(req.params, req.contentFormat, dataset, restrict)
      : undefined;
    return new FeaturePage(pages.query(layer, req.params, answer));
  } catch (err) {
    // While its source is down, a layer this function has read still describes itself (clients list it, and
    // its queries say the source is unavailable).
    const known = !isQuery && isSourceFault(err) ? ids.map((id) => lastKnown.get(`${service.itemId}/${id}`)) : [];
    if (known.length === 0 || !known.every((k) => k !== undefined)) return sourceFault(service, err);
    logger.warn("feature layer described from its last known schema", {
      layer: layerName(service),
      itemId: service.itemId,
      reason: (err as Error).message,
    });
    return describe(byId(known));
  }
}
