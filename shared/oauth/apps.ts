// What an application registration may say, checked the same way for the admin endpoint and the operator
// command, and how a registration is answered.
import type { RestRequest } from "#shared/http/pipeline.ts";
import { APP_TYPES, type App, type AppType } from "#shared/stores/apps.ts";

export const MAX_REDIRECT_URIS = 20;
/** Who may register, list and remove applications: administrators of security settings. */
export const APP_ADMIN_PRIVILEGE = "portal:admin:manageSecurity";
const LOOPBACK = new Set(["127.0.0.1", "[::1]", "localhost"]);

/**
 * A redirect URI an app may register: HTTPS anywhere; plain HTTP only to this machine's loopback (native apps,
 * RFC 8252 §7.3); a private-use scheme (`com.example.app:/cb`, RFC 8252 §7.1) only for native apps. Never
 * a fragment, never credentials in the URL.
 */
export function redirectUriProblem(uri: string, appType: AppType): string | undefined {
  if (uri.length > 2048) return "a redirect URI may have at most 2048 characters";
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return `'${uri.slice(0, 64)}' is not an absolute URI`;
  }
  if (url.hash || uri.includes("#")) return "a redirect URI may not have a fragment";
  if (url.username || url.password) return "a redirect URI may not carry credentials";
  if (url.protocol === "https:") return undefined;
  if (url.protocol === "http:") {
    return LOOPBACK.has(url.hostname) ? undefined : "plain-HTTP redirect URIs must point at the loopback address";
  }
  if (appType === "native" && /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol)) return undefined;
  return `the scheme ${url.protocol} is not allowed (HTTPS; loopback HTTP; reverse-DNS schemes for native apps)`;
}

export interface AppRegistration {
  readonly name: string;
  readonly appType: AppType;
  readonly redirectUris: readonly string[];
  readonly exchangeWithoutSecret: boolean;
}

export function readAppRegistration(raw: {
  name: string | undefined;
  appType: string | undefined;
  redirectUris: readonly string[];
  exchangeWithoutSecret?: string | boolean | undefined;
}): { ok: true; value: AppRegistration } | { ok: false; problems: string[] } {
  const problems: string[] = [];
  const name = (raw.name ?? "").trim();
  if (!name) problems.push("'name' must be specified.");
  else if (name.length > 128) problems.push("'name' may have at most 128 characters.");
  const appType = raw.appType ?? "";
  if (!(APP_TYPES as readonly string[]).includes(appType)) {
    problems.push(`'appType' must be one of ${APP_TYPES.join(", ")}.`);
  }
  const uris = [...new Set(raw.redirectUris.map((u) => u.trim()).filter((u) => u !== ""))];
  if (uris.length === 0) problems.push("'redirect_uris' must list at least one URI.");
  if (uris.length > MAX_REDIRECT_URIS) problems.push(`'redirect_uris' may list at most ${MAX_REDIRECT_URIS} URIs.`);
  for (const uri of uris.slice(0, MAX_REDIRECT_URIS)) {
    const problem = redirectUriProblem(uri, appType as AppType);
    if (problem) problems.push(`'redirect_uris': ${problem}.`);
  }
  const flag = raw.exchangeWithoutSecret;
  const exchangeWithoutSecret = flag === true || flag === "true";
  if (flag !== undefined && flag !== "" && typeof flag === "string" && !["true", "false"].includes(flag)) {
    problems.push("'exchangeWithoutSecret' must be true or false.");
  } else if (exchangeWithoutSecret && appType !== "server") {
    problems.push("'exchangeWithoutSecret' applies to server apps only.");
  }
  if (problems.length > 0) return { ok: false, problems };
  return { ok: true, value: { name, appType: appType as AppType, redirectUris: uris, exchangeWithoutSecret } };
}

/** The registration as the original's registerApp answers it; the secret appears only at registration. */
export function appRegistrationAnswer(app: App, clientSecret: string | undefined) {
  return {
    client_id: app.clientId,
    ...(clientSecret ? { client_secret: clientSecret } : {}),
    name: app.name,
    appType: app.appType,
    redirect_uris: app.redirectUris,
    ...(app.exchangeWithoutSecret ? { exchangeWithoutSecret: true } : {}),
    owner: app.owner,
    registered: app.created,
  };
}

/**
 * A browser app redeems its code with `fetch` from its own pages: the token and revocation answers may be read
 * by the origins of its registered redirect URIs, whatever the organization's allowedOrigins say. Credentials are
 * allowed because the ArcGIS Maps SDK sends them to the portal (these endpoints never read a cookie).
 */
export function allowAppOrigin(req: RestRequest, app: App): void {
  const origin = req.event.headers?.origin;
  if (!origin || app.appType !== "browser") return;
  const allowed = app.redirectUris.some((u) => URL.canParse(u) && new URL(u).origin === origin);
  if (!allowed) return;
  req.responseHeaders["access-control-allow-origin"] = origin;
  req.responseHeaders["access-control-allow-credentials"] = "true";
  req.responseHeaders.vary = "Origin";
}

/** What a form whose answer redirects to `redirectUri` must be allowed to reach (CSP form-action). */
export function formActionFor(redirectUri: string): string {
  const url = new URL(redirectUri);
  return url.protocol === "http:" || url.protocol === "https:" ? url.origin : url.protocol;
}
