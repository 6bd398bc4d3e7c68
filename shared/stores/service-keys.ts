// The keys of the services table, shared by the services and items stores (an item's transactions change its
// service's record and the catalog version with it).
import { tableName } from "#shared/config.ts";

export const SERVICE_TYPES = [
  "MapServer",
  "FeatureServer",
  "ImageServer",
  "SceneServer",
  "VectorTileServer",
  "GPServer",
  "GeocodeServer",
] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];

/** Who may see a service: anyone the catalog admits, members of the organization, or its owner (and admins). */
export const ACCESS = ["public", "org", "private"] as const;
export type Access = (typeof ACCESS)[number];

export const CATALOG = "#catalog";
export const folderEntry = (folder: string) => `folder#${folder.toLowerCase()}`;
export const serviceEntry = (folder: string, name: string) => `svc#${folder.toLowerCase()}#${name.toLowerCase()}`;
/**
 * What serving a published service needs from its cache, kept in a partition of its own beside the server's
 * (a catalog read never loads it).
 */
export const infoKey = (serverId: string, folder: string, name: string) => ({
  serverId: `${serverId}#info`,
  entry: `svc#${folder.toLowerCase()}#${name.toLowerCase()}`,
});

/** The key of a server's catalog version (for readers that fetch it along with other items). */
export const catalogVersionKey = (serverId: string) => ({ serverId, entry: CATALOG });

/** The key of a service's record. */
export const serviceKey = (ref: { serverId: string; folder: string; name: string }) => ({
  serverId: ref.serverId,
  entry: serviceEntry(ref.folder, ref.name),
});

/** The key of what serving a service keeps from its cache. */
export const serviceInfoKey = (ref: { serverId: string; folder: string; name: string }) =>
  infoKey(ref.serverId, ref.folder, ref.name);

/** The write that advances a server's catalog version: part of every transaction that changes its catalog. */
export const catalogBump = (serverId: string) => ({
  Update: {
    TableName: tableName("services"),
    Key: { serverId, entry: CATALOG },
    UpdateExpression: "ADD #v :one",
    ExpressionAttributeNames: { "#v": "version" },
    ExpressionAttributeValues: { ":one": 1 },
  },
});
