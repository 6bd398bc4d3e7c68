// The rules of data stores and publishing, shared by the request handlers (synchronous validation) and the
// workflow tasks (which check them again when they run: the world may have changed in between).
import { createHash } from "node:crypto";
import { badRequest } from "#shared/http/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { type CacheType, type DataStoreContents, getDataStoreContents } from "#shared/stores/datastores.ts";
import { getJob } from "#shared/stores/jobs.ts";
import { getServer, type Server } from "#shared/stores/servers.ts";
import {
  releaseServiceName,
  reserveServiceName,
  ServiceExistsError,
  type ServiceType,
} from "#shared/stores/services.ts";

/** What `publish` can make from a cached layer, the cache it needs, its item type and the privilege it takes. */
export const PUBLISH_TYPES: Readonly<Record<string, { cache: CacheType; label: string; privilege: string }>> = {
  SceneServer: { cache: "sceneLayerCache", label: "Scene Service", privilege: "portal:publisher:publishScenes" },
  MapServer: { cache: "tileCache", label: "Map Service", privilege: "portal:publisher:publishTiles" },
  VectorTileServer: {
    cache: "vectorTileCache",
    label: "Vector Tile Service",
    privilege: "portal:publisher:publishTiles",
  },
  ImageServer: { cache: "imageCache", label: "Image Service", privilege: "portal:publisher:publishTiledImagery" },
};

export const DESCRIBE_PRIVILEGE = "portal:publisher:registerDataStores";
export const BULK_PRIVILEGE = "portal:publisher:bulkPublishFromDataStores";

/** Service and folder names as the original accepts them. */
export const NAME = /^[A-Za-z0-9_]{1,120}$/;

export const isAdmin = (req: RestRequest) => req.identity.kind === "user" && req.identity.user.role === "org_admin";

/** A data store of the caller's portal, or a 400 naming what is wrong (never another portal's store). */
export async function dataStoreOf(
  portalId: string,
  datastoreId: string | undefined,
  what: string,
): Promise<DataStoreContents> {
  if (!datastoreId) throw badRequest(what, ["'datastoreId' must be specified."]);
  const contents = /^[0-9a-f]{32}$/.test(datastoreId) ? await getDataStoreContents(datastoreId) : undefined;
  if (!contents || contents.store.portalId !== portalId) {
    throw badRequest(what, [`Data store '${datastoreId.slice(0, 64)}' does not exist or is inaccessible.`]);
  }
  return contents;
}

/** The server a data store is registered with, or the problem (as text for a 400 or a JobError). */
export async function registeredServer(
  contents: DataStoreContents,
  serverId: string | undefined,
): Promise<Server | string> {
  if (!serverId) return "'serverId' must be specified.";
  if (!contents.store.serverIds.includes(serverId)) {
    return `Server '${serverId.slice(0, 64)}' is not registered with data store '${contents.store.datastoreId}'.`;
  }
  const server = await getServer(serverId);
  return server && server.portalId === contents.store.portalId
    ? server
    : `Server '${serverId.slice(0, 64)}' does not exist.`;
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

/** The cached layer a configuration names, checked against its data store; the problem text otherwise. */
export function cachedLayerProblem(contents: DataStoreContents, config: ServiceConfiguration): string | undefined {
  const cache = contents.cachedLayers.find((c) => c.path === config.pathInCachedStore);
  if (!cache) {
    return `Path '${config.pathInCachedStore.slice(0, 256)}' is not a cached layer of data store '${contents.store.datastoreId}'.`;
  }
  const needed = PUBLISH_TYPES[config.type]?.cache;
  if (cache.type !== needed) return `A ${config.type} cannot be published from a ${cache.type} (it needs a ${needed}).`;
  return undefined;
}

export function folderProblem(folder: string): string | undefined {
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
}

/** One level of a data store below `path`: datasets and cached layers, and folders that hold more. */
export function childrenOf(contents: DataStoreContents, path: string): Child[] | undefined {
  const prefix = path === "/" ? "/" : `${path.replace(/\/+$/, "")}/`;
  const id = contents.store.datastoreId;
  const leaves = [
    ...contents.datasets.map((d) => ({
      name: d.name,
      displayName: d.displayName,
      type: d.type as string,
      path: d.path,
    })),
    ...contents.cachedLayers.map((c) => ({ name: c.name, displayName: c.name, type: c.type as string, path: c.path })),
  ];
  if (path !== "/" && !leaves.some((l) => l.path.startsWith(prefix))) return undefined;
  const children = new Map<string, Child>();
  for (const leaf of leaves) {
    if (!leaf.path.startsWith(prefix)) continue;
    const rest = leaf.path.slice(prefix.length);
    const slash = rest.indexOf("/");
    if (slash < 0) children.set(leaf.path, { ...leaf, datastoreId: id });
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
  return [...children.values()].sort((a, b) => a.path.localeCompare(b.path));
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

/** What a publish job reserved, so whoever ends the job can give the name back. */
export function reservationOf(
  params: Readonly<Record<string, string>>,
): { serverId: string; folder: string; name: string } | undefined {
  const config = readServiceConfiguration(params.serviceConfiguration, []);
  return config && params.serverId
    ? { serverId: params.serverId, folder: params.serverFolder ?? "", name: config.serviceName }
    : undefined;
}
