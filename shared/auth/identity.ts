// Who is calling. The pipeline finds at most one credential on a request and resolves it here;
// every endpoint sees the same answer.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { badRequest, invalidToken } from "#shared/http/errors.ts";
import type { Params } from "#shared/http/params.ts";
import type { User } from "#shared/stores/users.ts";

export const AUTH_COOKIE = "vendor_authcookie";

export type CredentialSource = "param" | "x-esri-authorization" | "authorization" | "cookie";

export interface Credential {
  readonly token: string;
  readonly source: CredentialSource;
}

export type Identity =
  { readonly kind: "anonymous" } | { readonly kind: "user"; readonly user: User; readonly credential: Credential };

export const ANONYMOUS: Identity = { kind: "anonymous" };

function bearer(value: string | undefined): string | undefined {
  const m = value?.match(/^Bearer\s+(\S+)\s*$/i);
  return m?.[1];
}

/** The sign-in cookie is URL-encoded JSON with at least `token` (as on the original). */
function cookieToken(event: APIGatewayProxyEventV2): string | undefined {
  for (const cookie of event.cookies ?? []) {
    const eq = cookie.indexOf("=");
    if (eq < 0 || cookie.slice(0, eq).trim() !== AUTH_COOKIE) continue;
    try {
      const parsed: unknown = JSON.parse(decodeURIComponent(cookie.slice(eq + 1).trim()));
      const token = (parsed as { token?: unknown } | null)?.token;
      return typeof token === "string" && token !== "" ? token : "\0malformed";
    } catch {
      return "\0malformed";
    }
  }
  return undefined;
}

/**
 * The request's credential: the `token` parameter, then `X-Esri-Authorization`, then `Authorization`,
 * then the cookie. Two different explicit tokens on one request are refused rather than guessed at.
 */
export function findCredential(
  event: APIGatewayProxyEventV2,
  params: Params,
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

export interface CallContext {
  readonly sourceIp: string;
  readonly referer: string | undefined;
}

/** Turns a credential into the caller. Until token issuance exists no token can be valid. */
export async function resolveIdentity(credential: Credential | undefined, _call: CallContext): Promise<Identity> {
  if (!credential) return ANONYMOUS;
  throw invalidToken();
}
