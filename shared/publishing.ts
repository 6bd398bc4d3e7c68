// The rules of data stores and publishing, shared by the request handlers (synchronous validation) and the
// workflow tasks (which check them again when they run: the world may have changed in between).
import { createHash } from "node:crypto";
import { ApiError, badRequest, forbidden, withArticle } from "#shared/errors.ts";
import { type RestRequest, requireMember, requirePrivilege } from "#shared/http/pipeline.ts";
import type { Identity } from "#shared/auth/identity.ts";
import { DataStoreChangedError, DataStoreInputError } from "#shared/datastore-registration.ts";
import { cacheTypeOf, LIST_LIMIT, readCacheInfo } from "#shared/caches/probe.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { DatasetError, QueryTimeoutError } from "#shared/features/errors.ts";
import { isGeoPackageName, splitGeoPackagePath } from "#shared/features/geopackage-paths.ts";
import type { SourceDataset } from "#shared/features/sources.ts";

/** The dataset readers, loaded by the first describe that lists a database or a GeoPackage. */
const sources = () => import("#shared/features/sources.ts");
import { storageAt } from "#shared/storage/open.ts";
import { type Entry, joinPath, StorageError, safeRelativePath } from "#shared/storage/storage.ts";
import { type CacheType, type DataStore, type DataStoreContents, getDataStore } from "#shared/stores/datastores.ts";
import { getJob } from "#shared/stores/jobs.ts";
import { getServer, type Server } from "#shared/stores/servers.ts";
import type { ServiceType } from "#shared/stores/service-keys.ts";
import { releaseServiceName, reserveServiceName, ServiceExistsError } from "#shared/stores/services.ts";

/**
 * What `publish` can make from a cached layer, the caches it serves (the first named in errors), its item
 * type and the privilege it takes. Map and image services both serve tiled caches (Compact Cache V2).
 */
export const PUBLISH_TYPES: Readonly<
  Record<string, { caches: readonly CacheType[]; label: string; privilege: string }>
> = {
  SceneServer: { caches: ["sceneLayerCache"], label: "Scene Service", privilege: "portal:publisher:publishScenes" },
  MapServer: { caches: ["tileCache", "imageCache"], label: "Map Service", privilege: "portal:publisher:publishTiles" },
  VectorTileServer: {
    caches: ["vectorTileCache"],
    label: "Vector Tile Service",
    privilege: "portal:publisher:publishTiles",
  },
  ImageServer: {
    caches: ["imageCache", "tileCache"],
    label: "Image Service",
    privilege: "portal:publisher:publishTiledImagery",
  },
};

/**
 * What a service served from a cache answers, as ArcGIS reports it: tiles (no export, identify or query) for map
 * and image caches, I3S views and queries for scenes.
 */
export const CACHED_CAPABILITIES: Readonly<Record<string, string>> = {
  SceneServer: "View,Query",
  MapServer: "Map,TilesOnly",
  ImageServer: "Image,TilesOnly",
  VectorTileServer: "TilesOnly",
};

export const DESCRIBE_PRIVILEGE = "portal:publisher:registerDataStores";
export const BULK_PRIVILEGE = "portal:publisher:bulkPublishFromDataStores";

/** Service and folder names as the original accepts them. */
export const NAME = /^[A-Za-z0-9_]{1,120}$/;
/** The folder of the hosting server where hosted services (published from users' files) live, as ArcGIS has it. */
export const HOSTED_FOLDER = "Hosted";

export const isAdmin = (req: RestRequest) => req.identity.kind === "user" && req.identity.user.role === "org_admin";

/**
 * A data store of the caller's portal (its record alone: never its registered datasets, which may be a
 * million), or a 400 naming what is wrong (never another portal's store).
 */
export async function dataStoreOf(portalId: string, datastoreId: string | undefined, what: string): Promise<DataStore> {
  if (!datastoreId) throw badRequest(what, ["'datastoreId' must be specified."]);
  const store = /^[0-9a-f]{32}$/.test(datastoreId) ? await getDataStore(datastoreId) : undefined;
  if (!store || store.portalId !== portalId) {
    throw badRequest(what, [`Data store '${datastoreId.slice(0, 64)}' does not exist or is inaccessible.`]);
  }
  return store;
}

/**
 * The one rule of who may use a data store, asked by every data store operation (describe, publish,
 * publishLayers, validate, addToServer, getServers, refreshServer, removeFromServer, getLayers, deleteLayers):
 * its owner or an administrator of its organization. A store holds its owner's credentials (a database login, a
 * bucket, a folder), and whatever is published from it reads with them, so no one else may describe it, publish
 * from it or list what was published from it. Its item is never shared (`managedItem` in items.ts refuses to share it), so
 * sharing opens no other way in.
 */
export function mayUseDataStore(user: { username: string; role: string }, store: DataStore): boolean {
  return store.owner === user.username || user.role === "org_admin";
}

/**
 * The data store the request names (`datastoreId`, or `id` when given) that the caller may use by the rule above,
 * after the caller is checked to be a member holding `privilege` (no privilege: any member, as `getLayers` asks).
 * A store of another organization or none at all is a 400; a store the caller may not use is a 403.
 */
export async function usableDataStore(
  req: RestRequest,
  what: string,
  options: { privilege?: string; id?: string | undefined } = {},
): Promise<{ store: DataStore; identity: Extract<Identity, { kind: "user" }> }> {
  const identity = options.privilege ? requirePrivilege(req, options.privilege) : requireMember(req);
  const id = "id" in options ? options.id : req.params.get("datastoreId");
  const store = await dataStoreOf(identity.portal.portalId, id, what);
  if (!mayUseDataStore(identity.user, store)) throw forbidden();
  return { store, identity };
}

/** A data store the caller may manage (`portal:publisher:registerDataStores`, and the rule above). */
export async function managedDataStore(req: RestRequest, what: string): Promise<DataStore> {
  return (await usableDataStore(req, what, { privilege: DESCRIBE_PRIVILEGE })).store;
}

/** Runs a rule of registration, its refusals answered as a 400 and a concurrent change as a 409. */
export async function registering<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof DataStoreInputError) throw badRequest(what, [err.message]);
    if (err instanceof DataStoreChangedError)
      throw new ApiError(409, what, ["The data store was changed by another request meanwhile; try again."]);
    throw err;
  }
}

/** The server a data store is registered with, or the problem (as text for a 400 or a JobError). */
export async function registeredServer(store: DataStore, serverId: string | undefined): Promise<Server | string> {
  if (!serverId) return "'serverId' must be specified.";
  if (!store.serverIds.includes(serverId)) {
    return `Server '${serverId.slice(0, 64)}' is not registered with data store '${store.datastoreId}'.`;
  }
  const server = await getServer(serverId);
  return server && server.portalId === store.portalId ? server : `Server '${serverId.slice(0, 64)}' does not exist.`;
}

export interface ServiceConfiguration {
  readonly type: ServiceType;
  readonly serviceName: string;
  readonly cacheStoreId: string;
  readonly pathInCachedStore: string;
}

/** serviceConfiguration as a JSON string; every problem listed. */
export function readServiceConfiguration(
  raw: string | undefined,
  problems: string[],
): ServiceConfiguration | undefined {
  if (raw === undefined || raw.trim() === "") {
    problems.push("'serviceConfiguration' must be specified.");
    return undefined;
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    problems.push("'serviceConfiguration' must be a JSON object.");
    return undefined;
  }
  if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) {
    problems.push("'serviceConfiguration' must be a JSON object.");
    return undefined;
  }
  const c = parsed as {
    type?: unknown;
    serviceName?: unknown;
    properties?: { cacheStoreId?: unknown; pathInCachedStore?: unknown };
  };
  const before = problems.length;
  if (typeof c.type !== "string" || !c.type) problems.push("'serviceConfiguration.type' must be specified.");
  else if (!(c.type in PUBLISH_TYPES)) {
    problems.push(
      `Service type '${c.type.slice(0, 64)}' cannot be published by reference; use one of ${Object.keys(PUBLISH_TYPES).join(", ")}.`,
    );
  }
  if (typeof c.serviceName !== "string" || !c.serviceName)
    problems.push("'serviceConfiguration.serviceName' must be specified.");
  else if (!NAME.test(c.serviceName))
    problems.push("'serviceConfiguration.serviceName' may hold only letters, digits and _ (at most 120).");
  const props = c.properties && typeof c.properties === "object" ? c.properties : {};
  if (typeof props.cacheStoreId !== "string" || !props.cacheStoreId) {
    problems.push("'serviceConfiguration.properties.cacheStoreId' must be specified.");
  }
  if (typeof props.pathInCachedStore !== "string" || !props.pathInCachedStore) {
    problems.push("'serviceConfiguration.properties.pathInCachedStore' must be specified.");
  }
  if (problems.length > before) return undefined;
  return {
    type: c.type as ServiceType,
    serviceName: c.serviceName as string,
    cacheStoreId: props.cacheStoreId as string,
    pathInCachedStore: props.pathInCachedStore as string,
  };
}

/**
 * The cache a configuration names, read from its data store's storage: what serving it needs, or the
 * problem (as text for a 400 or a JobError).
 */
export async function cacheFor(
  store: DataStore,
  config: ServiceConfiguration,
): Promise<{ info: CacheInfo } | { problem: string }> {
  const id = store.datastoreId;
  const location = store.location;
  const shown = config.pathInCachedStore.slice(0, 256);
  if (!location) {
    return {
      problem: `Data store '${id}' has no storage (${withArticle(store.kind)} store): caches are published from folder and cloud stores.`,
    };
  }
  try {
    const storage = await storageAt(location);
    const path = safeRelativePath(config.pathInCachedStore);
    const type = path === "" ? undefined : await cacheTypeOf(storage, path);
    if (!type) return { problem: `Path '${shown}' is not a cached layer of data store '${id}'.` };
    const accepted = PUBLISH_TYPES[config.type]?.caches ?? [];
    if (!accepted.includes(type)) {
      return {
        problem: `A ${config.type} cannot be published from ${withArticle(type)} (it needs ${withArticle(accepted[0] ?? "")}).`,
      };
    }
    return { info: await readCacheInfo(storage, path, type) };
  } catch (err) {
    if (err instanceof StorageError) return { problem: `The cache at '${shown}' cannot be served: ${err.message}` };
    throw err;
  }
}

/**
 * Why a service published by reference cannot go into `folder`: its name, or the Hosted folder, which is kept for
 * hosted services as ArcGIS keeps it (their edits and definitions are served there by the function that writes hosted
 * data: shared/system.ts SERVICE_DEFINITION).
 */
export function folderProblem(folder: string): string | undefined {
  if (folder.toLowerCase() === HOSTED_FOLDER.toLowerCase())
    return `'serverFolder' cannot be '${HOSTED_FOLDER}': that folder holds hosted services (published from files), not services published by reference.`;
  return folder === "" || NAME.test(folder)
    ? undefined
    : "'serverFolder' may hold only letters, digits and _ (at most 120).";
}

export const restServiceUrl = (serverUrl: string, folder: string, name: string, type: string) =>
  `${serverUrl}/rest/services/${folder ? `${folder}/` : ""}${name}/${type}`;

/** Item ids that a retried task computes again identically (so a retry finds its own earlier work). */
export const stableItemId = (...parts: string[]) =>
  createHash("sha256").update(parts.join("\u0000")).digest("hex").slice(0, 32);

export function tagsOf(raw: string | undefined): string[] {
  return [
    ...new Set(
      (raw ?? "")
        .split(",")
        .map((t) => t.trim())
        .filter((t) => t !== ""),
    ),
  ]
    .slice(0, 128)
    .map((t) => t.slice(0, 256));
}

export interface Child {
  readonly name: string;
  readonly displayName: string;
  readonly type: string;
  readonly datastoreId: string;
  readonly path: string;
  /** Why bulk publishing leaves this dataset out (no integer key, a geometry type no layer has…). */
  readonly unpublishable?: string;
}

/** What a path of a data store is: the root, a folder, a cached layer or a dataset; undefined if nothing. */
export interface Described {
  readonly type: string;
  readonly children: readonly Child[];
}

/** A dataset a store's source holds, as describe lists it. */
const datasetChild = (datastoreId: string, d: SourceDataset): Child => ({
  name: d.name,
  displayName: d.displayName,
  type: d.type,
  datastoreId,
  path: d.path,
  ...(d.unpublishable ? { unpublishable: d.unpublishable } : {}),
});

/**
 * One level of a data store below `path`: the registered datasets and the folders that hold more, and what
 * its storage really holds there, each folder recognised as a cache by its own files (or a plain folder).
 */
export async function describePath(contents: DataStoreContents, rawPath: string): Promise<Described | undefined> {
  const relative = safeRelativePath(rawPath);
  const path = `/${relative}`;
  const prefix = relative === "" ? "/" : `${path}/`;
  const id = contents.store.datastoreId;
  const dataset = contents.datasets.find((d) => d.path === path);
  if (dataset) return { type: dataset.type, children: [] };
  const children = new Map<string, Child>();
  for (const d of contents.datasets) {
    if (!d.path.startsWith(prefix)) continue;
    const rest = d.path.slice(prefix.length);
    const slash = rest.indexOf("/");
    if (slash < 0)
      children.set(d.path, { name: d.name, displayName: d.displayName, type: d.type, datastoreId: id, path: d.path });
    else {
      const folder = rest.slice(0, slash);
      const folderPath = `${prefix}${folder}`;
      if (!children.has(folderPath))
        children.set(folderPath, {
          name: folder,
          displayName: folder,
          type: "folder",
          datastoreId: id,
          path: folderPath,
        });
    }
  }
  let exists = relative === "" || children.size > 0;
  if (contents.store.connection) {
    // A database is one level: its tables and views, named schema.table.
    const { databaseDatasets } = await sources();
    const datasets = await databaseDatasets(id, contents.store.connection).catch((err: unknown) => {
      // Said as storage that cannot be read: describe's callers answer it as a problem of the path.
      if (err instanceof DatasetError) throw new StorageError(err.message);
      if (err instanceof QueryTimeoutError) throw new StorageError("The database took too long to answer.");
      throw err;
    });
    if (relative !== "") {
      const found = datasets.find((d) => d.path === path);
      return found ? { type: found.type, children: [] } : undefined;
    }
    return {
      type: "folder",
      children: datasets.map((d) => datasetChild(id, d)),
    };
  }
  if (contents.store.location) {
    const location = contents.store.location;
    const inFile = splitGeoPackagePath(path);
    if (inFile) {
      const { geoPackageDatasets } = await sources();
      const found = (await geoPackageDatasets(location, inFile.file))?.find((d) => d.path === path);
      return found ? { type: found.type, children: [] } : undefined;
    }
    if (isGeoPackageName(relative)) {
      const { geoPackageDatasets } = await sources();
      const datasets = await geoPackageDatasets(location, relative);
      if (datasets) {
        return {
          type: "geoPackage",
          children: datasets.map((d) => datasetChild(id, d)),
        };
      }
    }
    const storage = await storageAt(location);
    const entries: Entry[] = await storage.list(relative, LIST_LIMIT);
    if (entries.length > 0) exists = true;
    if (relative !== "") {
      const own = await cacheTypeOf(storage, relative, entries);
      if (own) return { type: own, children: [] };
    }
    for (const e of entries) {
      if (e.kind !== "file" || !isGeoPackageName(e.name) || children.has(`${prefix}${e.name}`)) continue;
      children.set(`${prefix}${e.name}`, {
        name: e.name,
        displayName: e.name,
        type: "geoPackage",
        datastoreId: id,
        path: `${prefix}${e.name}`,
      });
    }
    const folders = entries.filter((e) => e.kind === "folder" && !children.has(`${prefix}${e.name}`));
    // A few at a time: each recognition is a listing (and perhaps a read) of its own.
    const types: (CacheType | undefined)[] = [];
    for (let i = 0; i < folders.length; i += 16) {
      const batch = folders.slice(i, i + 16).map((e) =>
        cacheTypeOf(storage, joinPath(relative, e.name)).catch((err: unknown) => {
          if (err instanceof StorageError) return undefined;
          throw err;
        }),
      );
      types.push(...(await Promise.all(batch)));
    }
    folders.forEach((e, i) => {
      const childPath = `${prefix}${e.name}`;
      children.set(childPath, {
        name: e.name,
        displayName: e.name,
        type: types[i] ?? "folder",
        datastoreId: id,
        path: childPath,
      });
    });
  }
  if (!exists) return undefined;
  return {
    type: relative === "" ? "datastore" : "folder",
    children: [...children.values()].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  };
}

/** A reservation whose job was never written is abandoned once it is older than any request can live. */
const ABANDONED_AFTER_MS = 5 * 60_000;

/**
 * Reserves a folder/name for a publishing job. A reservation left behind (its job ended without giving the
 * name back, or its request died before writing the job) is taken over rather than blocking the name forever.
 */
export async function reserveName(serverId: string, folder: string, name: string, jobId: string): Promise<void> {
  try {
    await reserveServiceName(serverId, folder, name, jobId);
  } catch (err) {
    if (!(err instanceof ServiceExistsError) || !err.pending) throw err;
    const holder = await getJob(err.pending.jobId);
    const abandoned = holder ? holder.status !== "processing" : Date.now() - err.pending.since > ABANDONED_AFTER_MS;
    if (!abandoned) throw err;
    await releaseServiceName(serverId, folder, name, err.pending.jobId);
    await reserveServiceName(serverId, folder, name, jobId);
  }
}

/** How long a job may take before it is declared failed on read (the state machine's own limit is one hour). */
export const JOB_DEADLINE_MS = 75 * 60_000;

/**
 * What a publish job reserved (a service by reference, or a hosted one), so whoever ends the job can give the name
 * back; other jobs reserve nothing.
 */
export function reservationOf(job: {
  readonly operation: string;
  readonly params: Readonly<Record<string, string>>;
}): { serverId: string; folder: string; name: string } | undefined {
  const { operation, params } = job;
  if (operation === "publishHosted")
    return params.serverId && params.serviceName
      ? { serverId: params.serverId, folder: params.serverFolder ?? "", name: params.serviceName }
      : undefined;
  if (operation !== "publish") return undefined;
  const config = readServiceConfiguration(params.serviceConfiguration, []);
  return config && params.serverId
    ? { serverId: params.serverId, folder: params.serverFolder ?? "", name: config.serviceName }
    : undefined;
}

/** Tags as clients send them: comma-separated, or a JSON array of strings. */
export function readTags(raw: string, problems: string[]): string[] {
  if (raw.trim().startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(raw);
      if (Array.isArray(parsed) && parsed.every((t) => typeof t === "string")) return tagsOf(parsed.join(","));
    } catch {
      // falls through to the problem below
    }
    problems.push("'tags' must be a comma-separated list or a JSON array of strings.");
    return [];
  }
  return tagsOf(raw);
}
