// What the data store forms offer as choices: the data stores the caller may use (their own first) and the
// servers they are registered with, by title and name rather than ids to type; and a ready serviceConfiguration per
// service type publishing takes, naming the chosen store.
import type { FormField } from "#shared/http/html.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import { mayUseDataStore, PUBLISH_TYPES } from "#shared/publishing.ts";
import { type DataStore, listPortalDataStores } from "#shared/stores/datastores.ts";
import { listPortalServers, type Server } from "#shared/stores/servers.ts";

/** How many stores a form offers (an organization with more types the id). */
const MAX_CHOICES = 200;

export interface StoreChoices {
  readonly stores: readonly DataStore[];
  /** The servers the offered stores are registered with. */
  readonly servers: readonly Server[];
  /** Every server of the organization (a store may be added to any). */
  readonly allServers: readonly Server[];
}

/**
 * The stores the caller may use (their own; an administrator sees every store of the organization, their own
 * first) and the servers those stores are registered with.
 */
export async function storeChoices(req: RestRequest): Promise<StoreChoices> {
  const { user, portal } = requireUser(req);
  const [stores, servers] = await Promise.all([
    listPortalDataStores(portal.portalId),
    listPortalServers(portal.portalId),
  ]);
  const own = (s: DataStore) => (s.owner === user.username ? 0 : 1);
  // Only the stores the caller may use (the rule every data store operation asks): no other member's store is
  // offered, nor its title and id shown.
  const mine = stores
    .filter((s) => mayUseDataStore(user, s))
    .sort((a, b) => own(a) - own(b) || a.title.localeCompare(b.title))
    .slice(0, MAX_CHOICES);
  const registered = new Set(mine.flatMap((s) => s.serverIds));
  return { stores: mine, servers: servers.filter((s) => registered.has(s.serverId)), allServers: servers };
}

/**
 * A data store field: a choice of the organization's stores when there are any, else the id to type. `blank`
 * offers no store first, sent as an empty value the operation reads as "none".
 */
export function storeField(name: string, choices: StoreChoices, blank?: string): FormField {
  if (choices.stores.length === 0) {
    return { name, label: "Data store id", required: blank === undefined, hint: "No data store is registered yet." };
  }
  return {
    name,
    label: "Data store",
    ...(blank !== undefined ? { blank } : {}),
    options: choices.stores.map((s) => ({ value: s.datastoreId, label: `${s.title} (${s.kind}, ${s.datastoreId})` })),
  };
}

/** A server field: a choice of the servers the stores are registered with (or of every server, with `all`). */
export function serverField(choices: StoreChoices, all = false): FormField {
  const servers = all ? choices.allServers : choices.servers;
  if (servers.length === 0) return { name: "serverId", label: "Server id", required: true };
  return {
    name: "serverId",
    label: "Server",
    options: servers.map((s) => ({ value: s.serverId, label: `${s.name} (${s.serverId})` })),
  };
}

/**
 * The store a form is about: the one its link names (`datastoreId`, or the `cacheStoreId` of a prefilled
 * serviceConfiguration, as a Describe result's "Publish" links carry it) when it is one of the choices, else the
 * first choice. A link followed from one store's page must never prefill another store.
 */
export function chosenStore(req: RestRequest, choices: StoreChoices): DataStore | undefined {
  const named = req.params.get("datastoreId") ?? cacheStoreIdOf(req.params.get("serviceConfiguration"));
  return choices.stores.find((s) => s.datastoreId === named) ?? choices.stores[0];
}

/** The store a serviceConfiguration names, if it is a JSON object naming one (a form's prefill, not validated). */
function cacheStoreIdOf(raw: string | undefined): string | undefined {
  // A prefill longer than any real configuration is not read at all.
  if (!raw || raw.length > 8192) return undefined;
  try {
    const id = (JSON.parse(raw) as { properties?: { cacheStoreId?: unknown } } | null)?.properties?.cacheStoreId;
    return typeof id === "string" ? id : undefined;
  } catch {
    return undefined;
  }
}

/** The fields of an operation on one store and one server, as choices. */
export async function storeAndServerFields(req: RestRequest, allServers = false): Promise<readonly FormField[]> {
  const choices = await storeChoices(req);
  return [storeField("datastoreId", choices), serverField(choices, allServers)];
}

/** Where each kind of cache lies in the demo store, as an example path (any cache path of the store will do). */
const EXAMPLE_PATHS: Readonly<Record<string, string>> = {
  SceneServer: "/caches/scene/Buildings3D",
  MapServer: "/caches/tiles/Basemap",
  VectorTileServer: "/caches/vectortiles/Streets",
  ImageServer: "/caches/imagery/Ortho2024",
};

/** A serviceConfiguration publishing accepts: a service of `type` from the cache at `path` of store `storeId`. */
export function serviceConfiguration(type: string, storeId: string, path: string, serviceName: string): string {
  return JSON.stringify({ type, serviceName, properties: { cacheStoreId: storeId, pathInCachedStore: path } });
}

/** One ready serviceConfiguration per type publishing takes, for the hint under the field. */
export function serviceConfigurationExamples(storeId: string): string {
  return Object.keys(PUBLISH_TYPES)
    .map(
      (type) =>
        `${type}:\n${serviceConfiguration(type, storeId, EXAMPLE_PATHS[type] ?? "/path/to/cache", `My_${type}`)}`,
    )
    .join("\n");
}

/** The example the field starts with: a map service from the first store's example tile cache. */
export function defaultServiceConfiguration(storeId: string): string {
  return serviceConfiguration("MapServer", storeId, EXAMPLE_PATHS.MapServer ?? "/", "My_Map");
}

/**
 * Publishing's form: the servers of the caller's stores to choose from, and a ready configuration per type
 * naming the store the link came from (`datastoreId`, or the cacheStoreId of a Describe result's prefilled
 * configuration), else the caller's first store.
 */
export async function publishFormFields(req: RestRequest): Promise<readonly FormField[]> {
  const choices = await storeChoices(req);
  const store = chosenStore(req, choices);
  const examples = serviceConfigurationExamples(store?.datastoreId ?? "<data store id>");
  const from = store ? `Data store: ${store.title} (${store.kind}, ${store.datastoreId}).\n` : "";
  return [
    {
      name: "serviceConfiguration",
      label: "serviceConfiguration (JSON)",
      type: "textarea",
      required: true,
      hint: `${from}pathInCachedStore is a cached layer's path, as Describe lists it. One example per service type:\n${examples}`,
    },
    serverField(choices),
    { name: "serverFolder", label: "Server folder", hint: "Empty: the root folder." },
    { name: "tags", label: "Tags (comma-separated)" },
    { name: "description", label: "Description", type: "textarea" },
  ];
}

/** Publishing's form values: the chosen store's example configuration, and a server it is registered with (the
 * query's values win). */
export async function publishFormValues(req: RestRequest): Promise<Record<string, string>> {
  const store = chosenStore(req, await storeChoices(req));
  if (!store) return {};
  const server = store.serverIds[0];
  return {
    serviceConfiguration: defaultServiceConfiguration(store.datastoreId),
    ...(server ? { serverId: server } : {}),
  };
}
