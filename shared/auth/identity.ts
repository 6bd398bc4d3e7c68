// Who is calling. The pipeline finds at most one credential on a request and resolves it here;
// every endpoint sees the same answer.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { BUILT_IN_PRIVILEGES } from "#shared/auth/privileges.ts";
import { type Presented, type TokenClaims, verifyToken } from "#shared/auth/tokens.ts";
import type { TableName } from "#shared/system.ts";
import { tableName } from "#shared/config.ts";
import { cookieValues } from "#shared/auth/cookies.ts";
import { badRequest, invalidToken } from "#shared/errors.ts";
import { type BatchGetRequest, batchGet } from "#shared/stores/dynamo.ts";
import { type Portal, toPortal } from "#shared/stores/portals.ts";
import { getRole } from "#shared/stores/roles.ts";
import { revocationKey } from "#shared/stores/signin.ts";
import { type App, toApp } from "#shared/stores/apps.ts";
import { toUser, type User } from "#shared/stores/users.ts";

export const AUTH_COOKIE = "vendor_authcookie";
/**
 * Secure (never sent in clear), HttpOnly (no script reads the token), SameSite=Lax (no cross-site POST
 * carries it), for the whole host (the portal and its servers).
 */
export const AUTH_COOKIE_ATTRIBUTES = "Path=/; Secure; HttpOnly; SameSite=Lax";
export const CLEARED_AUTH_COOKIE = `${AUTH_COOKIE}=; ${AUTH_COOKIE_ATTRIBUTES}; Max-Age=0`;

export type CredentialSource = "param" | "x-esri-authorization" | "authorization" | "cookie" | "iam";

export interface Credential {
  readonly token: string;
  readonly source: CredentialSource;
}

export type Identity =
  | { readonly kind: "anonymous" }
  | {
      readonly kind: "user";
      readonly user: User;
      readonly portal: Portal;
      readonly claims: TokenClaims;
      readonly credential: Credential;
      /** The privileges the user's role grants now (a custom role is read on every request). */
      readonly privileges: readonly string[];
    }
  | {
      /** An application acting for itself (OAuth client credentials): no user, no privileges. */
      readonly kind: "app";
      readonly app: App;
      readonly portal: Portal;
      readonly claims: TokenClaims;
      readonly credential: Credential;
    };

export const ANONYMOUS: Identity = { kind: "anonymous" };

function bearer(value: string | undefined): string | undefined {
  const m = value?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1];
}

/** The sign-in cookie is URL-encoded JSON with at least `token` (as on the original). */
function cookieToken(event: APIGatewayProxyEventV2): string | undefined {
  const found = cookieValues(event, AUTH_COOKIE);
  const cookie = found[0];
  if (cookie === undefined) return undefined;
  // Two sign-in cookies mean one was planted (a sibling site can set a cookie for a longer path, which the
  // browser sends first): neither signs anyone in.
  if (found.length > 1) return "\0malformed";
  try {
    const parsed: unknown = JSON.parse(decodeURIComponent(cookie));
    const token = (parsed as { token?: unknown } | null)?.token;
    return typeof token === "string" && token !== "" ? token : "\0malformed";
  } catch {
    return "\0malformed";
  }
}

export function hasAuthCookie(event: APIGatewayProxyEventV2): boolean {
  return cookieToken(event) !== undefined;
}

/**
 * The request's credential: the `token` parameter, then `X-Esri-Authorization`, then `Authorization`,
 * then the cookie. Two different explicit tokens on one request are refused rather than guessed at.
 */
export function findCredential(
  event: APIGatewayProxyEventV2,
  params: { get(name: string): string | undefined },
  allowCookie: boolean,
): Credential | undefined {
  const explicit: Credential[] = [];
  const param = params.get("token");
  if (param) explicit.push({ token: param, source: "param" });
  const esri = bearer(event.headers?.["x-esri-authorization"]);
  if (esri) explicit.push({ token: esri, source: "x-esri-authorization" });
  const auth = bearer(event.headers?.authorization);
  if (auth) explicit.push({ token: auth, source: "authorization" });
  const distinct = new Set(explicit.map((c) => c.token));
  if (distinct.size > 1) {
    throw badRequest("Conflicting tokens.", ["The request carries more than one different token."]);
  }
  if (explicit[0]) return explicit[0];
  const cookie = allowCookie ? cookieToken(event) : undefined;
  return cookie === undefined ? undefined : { token: cookie, source: "cookie" };
}

/** One more item a request needs, read in the same BatchGetItem as the caller (e.g. a catalog version). */
export interface ExtraRead {
  readonly table: TableName;
  readonly key: Readonly<Record<string, string>>;
}

/**
 * Turns a credential into the caller: the token is opened and checked, then the user (or application), the
 * organization and the token's revocation records (its own and its refresh family's) are read in one
 * BatchGetItem, with `extra` if asked (null: it does not exist; undefined: no caller). The user is read on every
 * request so a role or privilege change applies to the very next one.
 */
export async function resolveIdentityWith(
  credential: Credential | undefined,
  presented: Presented,
  extra: ExtraRead | undefined,
): Promise<{ identity: Identity; extra?: Record<string, unknown> | null }> {
  if (!credential) return { identity: ANONYMOUS };
  const claims = await verifyToken(credential.token, presented);
  const users = tableName("users");
  const apps = tableName("apps");
  const portals = tableName("portals");
  const tokens = tableName("tokens");
  const revocations = [claims.id, claims.family, claims.parent].flatMap((id) => (id ? [revocationKey(id)] : []));
  // A token issued to an application works only while the application is registered.
  const appId = claims.kind === "app" ? claims.username : claims.clientId;
  const extraTable = extra ? tableName(extra.table) : undefined;
  // Assigned one by one (not spread from conditional objects): this runs on every authenticated request.
  const keys: BatchGetRequest = {};
  // Strongly consistent: a role or group membership changed a moment ago applies to this very request.
  if (claims.kind === "user") keys[users] = { Keys: [{ username: claims.username }], ConsistentRead: true };
  if (appId) keys[apps] = { Keys: [{ clientId: appId }] };
  keys[portals] = { Keys: [{ portalId: claims.portalId }] };
  keys[tokens] = { Keys: revocations };
  // Strongly consistent: a catalog version must show the change just made (sharing, unpublishing).
  if (extra && extraTable) keys[extraTable] = { Keys: [{ ...extra.key }], ConsistentRead: true };
  const found = await batchGet(keys);
  const appItem = found[apps]?.[0];
  const portalItem = found[portals]?.[0];
  if (!portalItem || (found[tokens]?.length ?? 0) > 0 || (appId && appItem?.portalId !== claims.portalId)) {
    throw invalidToken();
  }
  const portal = toPortal(portalItem);
  const extraItem = extraTable ? (found[extraTable]?.[0] ?? null) : undefined;
  const withExtra = (identity: Identity) => ({ identity, ...(extraItem !== undefined ? { extra: extraItem } : {}) });
  if (claims.kind === "app") return withExtra({ kind: "app", app: toApp(appItem ?? {}), portal, claims, credential });
  const userItem = found[users]?.[0];
  if (!userItem) throw invalidToken();
  const user = toUser(userItem);
  // A token names the organization it was issued in: a user moved or recreated elsewhere cannot reuse it.
  if (user.portalId !== claims.portalId) throw invalidToken();
  // A password reset since the token was issued ends it (and every session and refresh token with it).
  if ((claims.generation ?? 0) !== user.tokenGeneration) throw invalidToken();
  // Disabling raised the generation too; this holds should a token be issued in the same moment.
  if (user.disabled) throw invalidToken();
  const privileges = await privilegesOf(user);
  return withExtra({ kind: "user", user, portal, claims, credential, privileges });
}

/** What a user's role grants now: a built-in role's privileges, or a custom role's as stored. */
export async function privilegesOf(user: User): Promise<readonly string[]> {
  return BUILT_IN_PRIVILEGES[user.role] ?? (await getRole(user.portalId, user.role))?.privileges ?? [];
}

/**
 * What an anonymous caller of an organization sees: the organization and, in the same BatchGetItem, one more
 * item the request needs (a catalog version). Undefined when the organization does not exist.
 */
export async function anonymousView(
  portalId: string,
  extra: ExtraRead | undefined,
): Promise<{ portal: Portal; extra?: Record<string, unknown> | null } | undefined> {
  const portals = tableName("portals");
  const extraTable = extra ? tableName(extra.table) : undefined;
  const found = await batchGet({
    [portals]: { Keys: [{ portalId }] },
    ...(extra && extraTable ? { [extraTable]: { Keys: [{ ...extra.key }], ConsistentRead: true } } : {}),
  });
  const portalItem = found[portals]?.[0];
  if (!portalItem) return undefined;
  return { portal: toPortal(portalItem), ...(extraTable ? { extra: found[extraTable]?.[0] ?? null } : {}) };
}
