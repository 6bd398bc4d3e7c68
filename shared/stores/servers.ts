import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, queryByPortal } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";
import { hostAndPath } from "#shared/urls.ts";

/**
 * A federated server. A hosted server is served by this deployment under `/<name>` (its URL follows the
 * deployment's public address); an external one is only registered, with the URL it was given.
 */
export interface Server {
  readonly serverId: string;
  readonly portalId: string;
  readonly name: string;
  readonly hosted: boolean;
  readonly externalUrl?: string;
  readonly serverRole: "HOSTING_SERVER" | "FEDERATED_SERVER";
  readonly created: number;
}

/** Path segments a hosted server may not take: they would shadow the portal or look like a file. */
export const SERVER_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,63}$/;
export const RESERVED_SERVER_NAMES = new Set(["portal", "viewer", "health"]);

function toServer(item: Record<string, unknown>): Server {
  const r = new RecordReader("server", item);
  const externalUrl = r.optionalString("externalUrl");
  return {
    serverId: r.string("serverId"),
    portalId: r.string("portalId"),
    name: r.string("name"),
    hosted: r.boolean("hosted"),
    ...(externalUrl ? { externalUrl } : {}),
    serverRole: r.oneOf("serverRole", ["HOSTING_SERVER", "FEDERATED_SERVER"] as const),
    created: r.number("created"),
  };
}

export function serverUrl(server: Server, baseUrl: string): string {
  return server.hosted ? `${baseUrl}/${server.name}` : (server.externalUrl ?? "");
}

/** A server as the organization's `servers` list (and a data store's) describes it, as ArcGIS answers it. */
export function serverView(s: Server, httpsOrigin: string) {
  const url = serverUrl(s, httpsOrigin);
  return {
    id: s.serverId,
    name: s.hosted ? `${hostAndPath(httpsOrigin)}/${s.name}` : s.name,
    url,
    adminUrl: `${url}/admin`,
    isHosted: s.serverRole === "HOSTING_SERVER",
    serverType: "ArcGIS",
    serverRole: s.serverRole,
    serverFunction: "",
  };
}

export async function getServer(serverId: string): Promise<Server | undefined> {
  const { Item } = await ddb.send(new GetCommand({ TableName: tableName("servers"), Key: { serverId } }));
  return Item ? toServer(Item) : undefined;
}

const nameKey = (name: string) => `@name:${name.toLowerCase()}`;

/** The hosted server answering under `/<name>` (names are reserved case-insensitively at registration). */
export async function getHostedServerByName(name: string): Promise<Server | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("servers"), Key: { serverId: nameKey(name) } }),
  );
  if (typeof Item?.target !== "string") return undefined;
  const server = await getServer(Item.target);
  return server?.hosted && server.name === name ? server : undefined;
}

export async function listPortalServers(portalId: string): Promise<Server[]> {
  const items = await queryByPortal("servers", portalId);
  return items.map(toServer);
}

/** Registers a server; a hosted server first reserves its path name, so two servers never share one. */
export async function createServer(server: Server): Promise<void> {
  if (server.hosted) {
    await ddb.send(
      new PutCommand({
        TableName: tableName("servers"),
        Item: { serverId: nameKey(server.name), target: server.serverId },
        ConditionExpression: "attribute_not_exists(serverId)",
      }),
    );
  }
  await ddb.send(
    new PutCommand({
      TableName: tableName("servers"),
      Item: { ...server },
      ConditionExpression: "attribute_not_exists(serverId)",
    }),
  );
}

// Hosted servers are registered rarely and never renamed: a warm function keeps each lookup for a minute
// (tiles, directory pages and catalogs are read far more often than that). Unknown names are not remembered:
// a server registered a moment later answers at once.
const hostedServers = new Map<string, { server: Server; at: number }>();

/** The hosted server at `/<name>`, as a warm function keeps it. */
export async function hostedServer(name: string): Promise<Server | undefined> {
  const cached = hostedServers.get(name);
  if (cached && Date.now() - cached.at < 60_000) return cached.server;
  const server = SERVER_NAME.test(name) ? await getHostedServerByName(name) : undefined;
  if (!server) return undefined;
  if (hostedServers.size >= 1000) hostedServers.clear();
  hostedServers.set(name, { server, at: Date.now() });
  return server;
}
