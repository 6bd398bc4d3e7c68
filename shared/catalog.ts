// The catalog of a hosted server as every surface shows it (the SOAP catalog, the REST services directory,
// each service's URL): one cache per warm function, re-read only when the server's catalog version moved, and
// one rule for who sees what.
import { createHash } from "node:crypto";
import type { ExtraRead, Identity } from "#shared/auth/identity.ts";
import type { CacheInfo } from "#shared/stores/cache-info.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import type { Server } from "#shared/stores/servers.ts";
import { type Access, catalogVersionKey } from "#shared/stores/service-keys.ts";
import {
  type Catalog,
  catalogVersion,
  getServiceInfo,
  readCatalog,
  type Service,
  versionOf,
} from "#shared/stores/services.ts";

const catalogs = new Map<string, Catalog>();

/**
 * The server's catalog, sorted (folders, then services by folder, name and type); one small read when warm,
 * none when the caller read the version already (`known`, e.g. with the request's caller).
 */
export async function catalogOf(serverId: string, known?: number): Promise<Catalog> {
  const version = known ?? (await catalogVersion(serverId));
  const cached = catalogs.get(serverId);
  if (cached && cached.version === version) return cached;
  const fresh = await readCatalog(serverId);
  const sorted: Catalog = {
    version: fresh.version,
    folders: [...fresh.folders].sort((a, b) => a.localeCompare(b)),
    services: [...fresh.services].sort(
      (a, b) => a.folder.localeCompare(b.folder) || a.name.localeCompare(b.name) || a.type.localeCompare(b.type),
    ),
  };
  if (catalogs.size >= 64) catalogs.delete(catalogs.keys().next().value as string);
  catalogs.set(serverId, sorted);
  return sorted;
}

/**
 * Public services for anyone the server admits; org services for members of the service's organization (and
 * its applications); private ones for the owner, the organization's administrators and the members of the
 * groups the item is shared with. Groups belong to one organization and admit only its members, so a group
 * never shows a service to another organization. The caller's groups come with the read of the caller (their
 * user record), the service's with the catalog: deciding costs no read of its own.
 */
export function visibleTo(
  identity: Identity,
  s: {
    readonly access: Access;
    readonly portalId: string;
    readonly owner: string;
    readonly groups?: readonly string[] | undefined;
  },
): boolean {
  if (s.access === "public") return true;
  if (identity.kind === "anonymous" || identity.portal.portalId !== s.portalId) return false;
  if (s.access === "org") return true;
  if (identity.kind !== "user") return false;
  if (s.owner === identity.user.username || identity.user.role === "org_admin") return true;
  const mine = identity.user.groups;
  return s.groups !== undefined && mine.size > 0 && s.groups.some((g) => mine.has(g));
}

// A user's groups, digested once per read of the user (the record object), for cache keys.
const digests = new WeakMap<object, string>();
function groupsDigest(groups: ReadonlySet<string>): string {
  let d = digests.get(groups);
  if (d === undefined) {
    d = createHash("sha256")
      .update([...groups].sort().join(","))
      .digest("base64url");
    digests.set(groups, d);
  }
  return d;
}

/**
 * Whose view of the catalog an answer is, for caches of finished answers: a member's view depends on their
 * groups too, so joining or leaving one changes the key and no answer cached before is served after.
 */
export function viewerKey(identity: Identity): string {
  if (identity.kind === "anonymous") return "anonymous";
  if (identity.kind === "app") return `org:${identity.portal.portalId}`;
  if (identity.user.role === "org_admin") return `admin:${identity.portal.portalId}`;
  const groups = identity.user.groups;
  const base = `user:${identity.portal.portalId}:${identity.user.username}`;
  return groups.size > 0 ? `${base}:${groupsDigest(groups)}` : base;
}

/** A service of the catalog by folder, name and type (folder and name match case-insensitively, as ArcGIS). */
export function findService(catalog: Catalog, folder: string, name: string, type: string): Service | undefined {
  const f = folder.toLowerCase();
  const n = name.toLowerCase();
  return catalog.services.find((s) => s.folder.toLowerCase() === f && s.name.toLowerCase() === n && s.type === type);
}

export function findFolder(catalog: Catalog, folder: string): string | undefined {
  const f = folder.toLowerCase();
  return catalog.folders.find((x) => x.toLowerCase() === f);
}

// What serving a service needs never changes for one item id (republishing makes a new one): kept while warm.
const infos = new Map<string, CacheInfo | undefined>();
export async function serviceInfo(service: Service): Promise<CacheInfo | undefined> {
  if (infos.has(service.itemId)) return infos.get(service.itemId);
  const info = await getServiceInfo(service);
  if (infos.size >= 256) infos.delete(infos.keys().next().value as string);
  infos.set(service.itemId, info);
  return info;
}

/** What a REST route of a server prefetches with its caller: the catalog version, so a warm request reads once. */
export const catalogPrefetch = (server: Server): ExtraRead => ({
  table: "services",
  key: catalogVersionKey(server.serverId),
});

/** The catalog as of the version the pipeline read with the caller. */
export function requestCatalog(req: RestRequest): Promise<Catalog> {
  if (!req.server) throw new Error("a catalog is read on server routes only");
  return catalogOf(req.server.serverId, req.prefetched === undefined ? undefined : versionOf(req.prefetched));
}
