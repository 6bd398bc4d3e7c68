// The rules of portal items: what item each published thing has, how an item reads on the wire, and who may
// read or change it. Who *sees* an item is the catalog's one rule (shared/catalog.ts: visibleTo), so an item
// and its service are always visible to the same callers.
import type { Identity } from "#shared/auth/identity.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest, forbidden, notFound, tokenRequired } from "#shared/errors.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import type { DataStore } from "#shared/stores/datastores.ts";
import {
  DATA_STORE_TYPE,
  getItem,
  type Item,
  ItemBusyError,
  ItemGoneError,
  ITEM_TYPES,
  SharedGroupGoneError,
} from "#shared/stores/items.ts";
import type { Service } from "#shared/stores/services.ts";

/** What clients look for in `typeKeywords` to know what they can do with a service. */
const TYPE_KEYWORDS: Readonly<Record<string, readonly string[]>> = {
  SceneServer: ["Scene Service", "Hosted Service", "3DObject"],
  MapServer: ["Data", "Service", "Map Service", "ArcGIS Server", "Tiled"],
  ImageServer: ["Data", "Service", "Image Service", "ArcGIS Server", "Tiled"],
  VectorTileServer: ["Vector Tile Service", "Tiled"],
  FeatureServer: ["ArcGIS Server", "Data", "Feature Access", "Service"],
};

interface ExtentLike {
  readonly xmin?: unknown;
  readonly ymin?: unknown;
  readonly xmax?: unknown;
  readonly ymax?: unknown;
  readonly spatialReference?: { readonly wkid?: unknown; readonly latestWkid?: unknown };
}

const EARTH_RADIUS = 6378137;
const toLon = (x: number) => (x / EARTH_RADIUS) * (180 / Math.PI);
const toLat = (y: number) => (Math.atan(Math.exp(y / EARTH_RADIUS)) * 2 - Math.PI / 2) * (180 / Math.PI);

/** An item's WGS84 extent from a cache's full extent, when it is in WGS84 or Web Mercator (else unknown). */
export function wgs84Extent(raw: unknown): number[][] | undefined {
  const e = (raw ?? {}) as ExtentLike;
  const nums = [e.xmin, e.ymin, e.xmax, e.ymax];
  if (!nums.every((n) => typeof n === "number" && Number.isFinite(n))) return undefined;
  const [xmin, ymin, xmax, ymax] = nums as [number, number, number, number];
  const wkid = Number(e.spatialReference?.latestWkid ?? e.spatialReference?.wkid);
  const clamp = (v: number, limit: number) => Math.max(-limit, Math.min(limit, v));
  if (wkid === 4326)
    return [
      [clamp(xmin, 180), clamp(ymin, 90)],
      [clamp(xmax, 180), clamp(ymax, 90)],
    ];
  if (wkid === 3857 || wkid === 102100) {
    return [
      [clamp(toLon(xmin), 180), clamp(toLat(ymin), 90)],
      [clamp(toLon(xmax), 180), clamp(toLat(ymax), 90)],
    ];
  }
  return undefined;
}

function cacheExtent(info: CacheInfo | undefined): number[][] | undefined {
  if (!info) return undefined;
  if (info.kind === "tiled") return wgs84Extent(info.tiled.fullExtent);
  if (info.kind === "vector") return wgs84Extent(info.root.fullExtent);
  return wgs84Extent(info.layer.fullExtent);
}

/**
 * The item of a service. `url` is the service's path on this deployment (`/<server>/rest/services/…`) for a
 * hosted server, or the external server's URL.
 */
export function serviceItem(
  service: Service,
  url: string,
  more: { info?: CacheInfo; title?: string; snippet?: string; pair?: Item["pair"] } = {},
): Item {
  const extent = cacheExtent(more.info);
  return {
    itemId: service.itemId,
    portalId: service.portalId,
    owner: service.owner,
    title: more.title ?? service.name,
    type: ITEM_TYPES[service.type],
    typeKeywords: TYPE_KEYWORDS[service.type] ?? ["Service"],
    url,
    tags: service.tags,
    description: service.description,
    snippet: more.snippet ?? "",
    access: service.access,
    created: service.created,
    modified: service.created,
    ...(extent ? { extent } : {}),
    service: { serverId: service.serverId, folder: service.folder, name: service.name, type: service.type },
    ...(more.pair ? { pair: more.pair } : {}),
  };
}

/** A registered data store's item: getLayers' `datastoreId` is the item id of a data store. */
export function dataStoreItem(store: DataStore): Item {
  return {
    itemId: store.datastoreId,
    portalId: store.portalId,
    owner: store.owner,
    title: store.title,
    type: DATA_STORE_TYPE,
    typeKeywords: ["Data Store", store.kind],
    url: "",
    tags: [],
    description: "",
    snippet: "",
    access: "private",
    created: store.created,
    modified: store.modified,
  };
}

/** Whether the caller may change the item: its owner, or a default administrator of its organization. */
export function canManage(identity: Identity, item: Item): boolean {
  return (
    identity.kind === "user" &&
    identity.user.portalId === item.portalId &&
    (identity.user.username === item.owner || identity.user.role === "org_admin")
  );
}

/**
 * The item, if the caller may see it. An anonymous caller is asked to sign in for anything not public
 * (whether it exists or not: its existence is not told); a signed-in one gets "does not exist or is
 * inaccessible" for both.
 */
export async function visibleItem(identity: Identity, itemId: string | undefined): Promise<Item> {
  const item = itemId ? await getItem(itemId) : undefined;
  if (item && visibleTo(identity, item)) return item;
  if (identity.kind === "anonymous") throw tokenRequired();
  throw itemNotFound(itemId ?? "");
}

const itemNotFound = (itemId: string) => notFound([`Item '${itemId.slice(0, 64)}' does not exist or is inaccessible.`]);

/** Runs a change of an item, answering a concurrent delete as "does not exist" and lasting contention as 409. */
export async function changing<T>(item: Item, change: () => Promise<T>): Promise<T> {
  try {
    return await change();
  } catch (err) {
    if (err instanceof ItemGoneError) throw itemNotFound(item.itemId);
    if (err instanceof SharedGroupGoneError) {
      throw badRequest("Unable to share item.", ["A group named was deleted meanwhile; nothing was shared."]);
    }
    if (err instanceof ItemBusyError) {
      throw new ApiError(409, "Unable to change the item.", [
        "The item is being changed by other requests; try again.",
      ]);
    }
    throw err;
  }
}

/**
 * What the item keeps and is charged for: its file, a hosted service's data (and its features' attachments) or its
 * text, with its resources and thumbnail (as ArcGIS counts resources in the item's size); -1 for an item that keeps
 * nothing (a reference).
 */
function keptSize(item: Item): number {
  const data = item.file?.size ?? item.hostedData ?? item.text?.size;
  const extra = (item.resourceBytes ?? 0) + (item.attachmentBytes ?? 0) + (item.thumbnail?.size ?? 0);
  return data === undefined && extra === 0 ? -1 : (data ?? 0) + extra;
}

/**
 * An item as the sharing API answers it. A hosted service's URL is stored as a path and answered under the
 * deployment's HTTPS origin, so a new host name or port never leaves items pointing at the old one.
 */
export function itemView(item: Item, identity: Identity, origin: string): Record<string, unknown> {
  return {
    id: item.itemId,
    owner: item.owner,
    orgId: item.portalId,
    created: item.created,
    modified: item.modified,
    guid: null,
    name: item.file?.name ?? item.service?.name ?? null,
    title: item.title,
    type: item.type,
    typeKeywords: item.typeKeywords,
    description: item.description,
    tags: item.tags,
    snippet: item.snippet,
    thumbnail: item.thumbnail?.name ?? null,
    documentation: null,
    extent: item.extent ?? [],
    categories: [],
    spatialReference: item.spatialReference || null,
    accessInformation: item.accessInformation || null,
    licenseInfo: item.licenseInfo || null,
    culture: "en-us",
    properties: item.properties ? (JSON.parse(item.properties) as unknown) : null,
    url: item.url.startsWith("/") ? `${origin}${item.url}` : item.url || null,
    proxyFilter: null,
    // As ArcGIS: a private item shared with groups reads as "shared".
    access: item.access === "private" && (item.groups?.length ?? 0) > 0 ? "shared" : item.access,
    size: keptSize(item),
    appCategories: [],
    industries: [],
    languages: [],
    largeThumbnail: null,
    banner: null,
    screenshots: [],
    listed: false,
    // Folders are their owner's alone (and administrators'): others see the item, not where its owner filed it.
    ownerFolder: canManage(identity, item) ? (item.ownerFolder ?? null) : null,
    protected: item.protected ?? false,
    numComments: 0,
    numRatings: 0,
    avgRating: 0,
    numViews: 0,
    ...(canManage(identity, item)
      ? { itemControl: "admin", sharing: { access: item.access, groups: [...(item.groups ?? [])] } }
      : {}),
  };
}

/**
 * The item a `content/users/<username>/items/<id>/…` operation changes, if the caller may change it: its
 * owner or an administrator of its organization (`what` names the operation in a refusal); a data store's
 * item only where `dataStores` says the operation handles one. The path's username must be the owner's (or, as clients
 * send when an administrator acts, the caller's).
 */
export async function managedItem(req: RestRequest, what: string, dataStores = false): Promise<Item> {
  const identity = requireUser(req);
  const { user } = identity;
  const item = await visibleItem(req.identity, req.pathParameters.itemId);
  const named = req.pathParameters.username;
  if (named !== undefined && named !== item.owner && named !== user.username) throw itemNotFound(item.itemId);
  if (!canManage(req.identity, item)) throw forbidden();
  if (item.type === DATA_STORE_TYPE) {
    // A data store's item stands for its registration: updated and deleted with it (by those who may register
    // data stores), never shared.
    if (!dataStores) throw badRequest(what, ["A data store's item is not shared: it stays private."]);
    if (user.role !== "org_admin" && !identity.privileges.includes("portal:publisher:registerDataStores"))
      throw forbidden();
  }
  return item;
}
