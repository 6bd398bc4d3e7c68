// The browser session: the `vendor_authcookie` cookie that carries a token (URL-encoded JSON, as on the
// original), the lifetime of the tokens people and apps get, and where a browser may be sent back to.
import { PORTAL_ROOT } from "#shared/urls.ts";
import { AUTH_COOKIE, AUTH_COOKIE_ATTRIBUTES } from "#shared/auth/identity.ts";
import { issueToken, type NewToken } from "#shared/auth/tokens.ts";
import { config } from "#shared/config.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import type { Portal } from "#shared/stores/portals.ts";
import type { User } from "#shared/stores/users.ts";

/** "Keep me signed in" keeps the cookie this long (two weeks, as on the original). */
export const PERSISTENT_SECONDS = 14 * 24 * 3600;

/** How long an OAuth or sign-in token lasts in this organization: the configured length within its limit. */
export function accessTokenMinutes(portal: Portal): number {
  return Math.min(config().oauth.accessTokenMinutes, portal.maxTokenExpirationMinutes);
}

/** An unbound user token good at the portal and its servers (OAuth and the sign-in page issue these). */
export function issueUserToken(
  user: User,
  portal: Portal,
  extra: Pick<NewToken, "clientId" | "family"> = {},
): Promise<{ token: string; id: string; expires: number }> {
  return issueToken({
    username: user.username,
    portalId: portal.portalId,
    audience: { kind: "portal" },
    client: "none",
    bound: "",
    expires: Date.now() + accessTokenMinutes(portal) * 60_000,
    generation: user.tokenGeneration,
    ...extra,
  });
}

/**
 * The sign-in cookie: Secure (the sign-in page refuses plain HTTP, so it is never sent in clear), HttpOnly
 * (no script reads the token), SameSite=Lax (no cross-site POST carries it); a session cookie unless the user
 * asked to stay signed in, then two weeks (or the token's life, if shorter).
 */
export function authCookie(
  issued: { token: string; expires: number },
  user: User,
  portal: Portal,
  persistent: boolean,
): string {
  const value = encodeURIComponent(
    JSON.stringify({
      token: issued.token,
      expires: issued.expires,
      allSSL: portal.allSSL,
      persistent,
      username: user.username,
      role: user.role,
    }),
  );
  const maxAge = Math.min(PERSISTENT_SECONDS, Math.floor((issued.expires - Date.now()) / 1000));
  return `${AUTH_COOKIE}=${value}; ${AUTH_COOKIE_ATTRIBUTES}${persistent ? `; Max-Age=${maxAge}` : ""}`;
}

export const DIRECTORY_PATH = PORTAL_ROOT;

/**
 * Where the browser may go after signing in or out: a path on this deployment, never another site. Anything
 * else (another origin, `//host`, backslashes, control characters, `javascript:`) falls back to the directory.
 */
export function localRedirect(raw: string | undefined, req: RestRequest): string {
  const unsafe = (c: string) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f || c === "\\";
  if (!raw || raw.length > 2048 || [...raw].some(unsafe)) return DIRECTORY_PATH;
  let url: URL;
  try {
    url = new URL(raw, `${req.httpsOrigin}/`);
  } catch {
    return DIRECTORY_PATH;
  }
  const ours = new Set([new URL(req.origin).origin, new URL(req.httpsOrigin).origin]);
  // `/.//evil.example` normalises to the path `//evil.example`, which a browser reads as another host.
  if (!ours.has(url.origin) || url.pathname.startsWith("//")) return DIRECTORY_PATH;
  return `${url.pathname}${url.search}`;
}
