// Registered OAuth 2.0 applications. Only a digest of a client secret is stored (see shared/digests.ts).
import { randomBytes } from "node:crypto";
import { DeleteCommand, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { matchesDigest, sha256Hex } from "#shared/digests.ts";
import { tableName } from "#shared/config.ts";
import { ddb, isConditionFailure, queryByPortal } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";

/** `browser` and `native` apps cannot keep a secret (public clients); `server` apps get one. */
export const APP_TYPES = ["browser", "native", "server"] as const;
export type AppType = (typeof APP_TYPES)[number];

export interface App {
  readonly clientId: string;
  readonly portalId: string;
  readonly name: string;
  readonly appType: AppType;
  /** Compared exactly (no prefixes, no wildcards) with the `redirect_uri` of every request. */
  readonly redirectUris: readonly string[];
  /** SHA-256 (hex) of the client secret, for `server` apps. */
  readonly secretHash: string | undefined;
  /**
   * A `server` app that exchanges codes and refresh tokens without its secret (and codes without PKCE), as
   * ArcGIS REST JS's server-side flow does. Off unless the administrator turns it on at registration.
   */
  readonly exchangeWithoutSecret: boolean;
  readonly owner: string;
  readonly created: number;
}

export function toApp(item: Record<string, unknown>): App {
  const r = new RecordReader("app", item);
  const appType = r.string("appType");
  if (!(APP_TYPES as readonly string[]).includes(appType)) throw new Error(`app ${String(item.clientId)}: bad type`);
  return {
    clientId: r.string("clientId"),
    portalId: r.string("portalId"),
    name: r.string("name"),
    appType: appType as AppType,
    redirectUris: r.strings("redirectUris"),
    secretHash: r.optionalString("secretHash"),
    exchangeWithoutSecret: item.exchangeWithoutSecret === true,
    owner: r.string("owner"),
    created: r.number("created"),
  };
}

/** Whether `secret` is the app's client secret (constant time); an app without a secret has none to match. */
export function secretMatches(app: App, secret: string): boolean {
  if (!app.secretHash) return false;
  return matchesDigest(secret, app.secretHash);
}

export async function getApp(clientId: string): Promise<App | undefined> {
  const { Item } = await ddb.send(new GetCommand({ TableName: tableName("apps"), Key: { clientId } }));
  return Item ? toApp(Item) : undefined;
}

export async function listPortalApps(portalId: string): Promise<App[]> {
  const items = await queryByPortal("apps", portalId);
  return items.map(toApp);
}

/** Registers an app; answers it with its client secret (shown once: only its hash is kept). */
export async function registerApp(input: {
  portalId: string;
  name: string;
  appType: AppType;
  redirectUris: readonly string[];
  exchangeWithoutSecret: boolean;
  owner: string;
}): Promise<{ app: App; clientSecret: string | undefined }> {
  // 16 characters like the original's client ids, from a URL-safe alphabet.
  const clientId = randomBytes(12).toString("base64url");
  const clientSecret = input.appType === "server" ? randomBytes(32).toString("base64url") : undefined;
  const app: App = {
    clientId,
    portalId: input.portalId,
    name: input.name,
    appType: input.appType,
    redirectUris: [...input.redirectUris],
    secretHash: clientSecret ? sha256Hex(clientSecret) : undefined,
    exchangeWithoutSecret: input.exchangeWithoutSecret,
    owner: input.owner,
    created: Date.now(),
  };
  await ddb.send(
    new PutCommand({
      TableName: tableName("apps"),
      Item: Object.fromEntries(Object.entries(app).filter(([, v]) => v !== undefined)),
      ConditionExpression: "attribute_not_exists(clientId)",
    }),
  );
  return { app, clientSecret };
}

/** Removes an app of the portal; answers whether there was one. Tokens issued to it stop working at once. */
export async function unregisterApp(portalId: string, clientId: string): Promise<boolean> {
  const { Attributes } = await ddb
    .send(
      new DeleteCommand({
        TableName: tableName("apps"),
        Key: { clientId },
        ConditionExpression: "portalId = :p",
        ExpressionAttributeValues: { ":p": portalId },
        ReturnValues: "ALL_OLD",
      }),
    )
    .catch((err: unknown) => {
      if (isConditionFailure(err)) return { Attributes: undefined };
      throw err;
    });
  return Attributes !== undefined;
}
