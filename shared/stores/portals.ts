import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, isConditionFailure, scanAll } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";

export interface Portal {
  readonly portalId: string;
  readonly name: string;
  /** HTTPS for everything: plain HTTP requests are refused with 403 `SSL Required`. */
  readonly allSSL: boolean;
  /** The longest token this organization issues, in minutes (at most 15 days). */
  readonly maxTokenExpirationMinutes: number;
  /** Whether the SOAP catalog and server resources demand a token. */
  readonly requireTokens: boolean;
  /** Whether the OAuth `password` grant is allowed (off by default: it hands passwords to applications). */
  readonly allowPasswordGrant: boolean;
  /**
   * The origins (`scheme://host[:port]`) whose pages may read this organization's answers across origins
   * (shared/http/cors.ts); empty: every origin, as on ArcGIS.
   */
  readonly allowedOrigins: readonly string[];
  /** The basemap new maps get, as JSON text (shared/portal-basemap.ts); unset: the demo's tiled basemap. */
  readonly defaultBasemap?: string;
  /** Where apps find the basemaps to choose from (a search query); unset: the organization's "Basemaps" group. */
  readonly basemapGalleryGroupQuery?: string;
  readonly useVectorBasemaps?: boolean;
  readonly created: number;
  readonly modified: number;
}

export const MAX_TOKEN_MINUTES = 15 * 24 * 60;

/** The marker item naming the portal anonymous callers see as `self`. */
const DEFAULT_KEY = "@default";

export function toPortal(item: Record<string, unknown>): Portal {
  const r = new RecordReader("portal", item);
  return {
    portalId: r.string("portalId"),
    name: r.string("name"),
    allSSL: r.boolean("allSSL"),
    maxTokenExpirationMinutes: r.number("maxTokenExpirationMinutes"),
    requireTokens: r.boolean("requireTokens"),
    allowPasswordGrant: item.allowPasswordGrant === true,
    allowedOrigins: r.strings("allowedOrigins"),
    ...(typeof item.defaultBasemap === "string" ? { defaultBasemap: item.defaultBasemap } : {}),
    ...(typeof item.basemapGalleryGroupQuery === "string"
      ? { basemapGalleryGroupQuery: item.basemapGalleryGroupQuery }
      : {}),
    ...(typeof item.useVectorBasemaps === "boolean" ? { useVectorBasemaps: item.useVectorBasemaps } : {}),
    created: r.number("created"),
    modified: r.number("modified"),
  };
}

export async function getPortal(portalId: string): Promise<Portal | undefined> {
  if (portalId === DEFAULT_KEY) return undefined;
  const { Item } = await ddb.send(new GetCommand({ TableName: tableName("portals"), Key: { portalId } }));
  return Item ? toPortal(Item) : undefined;
}

// The default portal is claimed once and never changes, so one read per warm function suffices.
let defaultPortalId: string | undefined;

export async function getDefaultPortalId(): Promise<string | undefined> {
  if (defaultPortalId) return defaultPortalId;
  const { Item } = await ddb.send(new GetCommand({ TableName: tableName("portals"), Key: { portalId: DEFAULT_KEY } }));
  if (typeof Item?.target === "string") defaultPortalId = Item.target;
  return defaultPortalId;
}

export async function createPortal(portal: Portal): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: tableName("portals"),
      Item: { ...portal },
      ConditionExpression: "attribute_not_exists(portalId)",
    }),
  );
}

/** Makes `portalId` the default portal unless one is set already; answers the default in force. */
export async function claimDefaultPortal(portalId: string): Promise<string> {
  try {
    await ddb.send(
      new PutCommand({
        TableName: tableName("portals"),
        Item: { portalId: DEFAULT_KEY, target: portalId },
        ConditionExpression: "attribute_not_exists(portalId)",
      }),
    );
    return portalId;
  } catch (err) {
    if (isConditionFailure(err)) return (await getDefaultPortalId()) ?? portalId;
    throw err;
  }
}

/** Operator listing only (the portals table is small: one item per organization). */
export async function listPortals(): Promise<Portal[]> {
  const items = await scanAll({ TableName: tableName("portals") });
  return items.filter((item) => item.portalId !== DEFAULT_KEY).map(toPortal);
}

export type PortalSettings = Partial<
  Pick<
    Portal,
    | "allSSL"
    | "maxTokenExpirationMinutes"
    | "requireTokens"
    | "allowPasswordGrant"
    | "name"
    | "allowedOrigins"
    | "defaultBasemap"
    | "basemapGalleryGroupQuery"
    | "useVectorBasemaps"
  >
>;

/** Changes an organization's settings; `modified` advances. Answers the portal as stored afterwards. */
export async function updatePortal(portalId: string, settings: PortalSettings): Promise<Portal> {
  const entries = Object.entries(settings).filter(([, v]) => v !== undefined);
  const names: Record<string, string> = { "#m": "modified" };
  const values: Record<string, unknown> = { ":m": Date.now() };
  const sets = ["#m = :m"];
  entries.forEach(([k, v], i) => {
    names[`#a${i}`] = k;
    values[`:a${i}`] = v;
    sets.push(`#a${i} = :a${i}`);
  });
  const { Attributes } = await ddb.send(
    new UpdateCommand({
      TableName: tableName("portals"),
      Key: { portalId },
      UpdateExpression: `SET ${sets.join(", ")}`,
      ConditionExpression: "attribute_exists(portalId)",
      ExpressionAttributeNames: names,
      ExpressionAttributeValues: values,
      ReturnValues: "ALL_NEW",
    }),
  );
  return toPortal(Attributes ?? {});
}
