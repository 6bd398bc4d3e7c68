// Public URLs of the portal and its hosted servers, built from the request's origin.
import { PORTAL_ROOT } from "#shared/system.ts";
import { config } from "#shared/config.ts";

// The portal's sharing REST root is declared with the routes (the description); modules that need the URL and
// nothing else of the description take it from here.
export { PORTAL_ROOT };

/**
 * The versions this deployment reports: a portal of ArcGIS Enterprise 10.9 (whose OAuth is the authorization code
 * flow with PKCE, which mapgate serves: from 8.4 on, the ArcGIS Maps SDK's default OAuthInfo uses it, where before
 * it asks for the implicit flow, which mapgate does not serve) with a 10.8.1 server federated to it.
 */
export const PORTAL_REST_VERSION = "8.4";
export const SERVER_REST_VERSION = 10.81;
export const SERVER_FULL_VERSION = "10.8.1";

const PORTAL_PATH = PORTAL_ROOT.replace(/\/sharing\/rest$/, "");
export const portalUrl = (origin: string) => `${origin}${PORTAL_PATH}`;
export const sharingRestUrl = (origin: string) => `${origin}${PORTAL_ROOT}`;
export const generateTokenUrl = (origin: string) => `${sharingRestUrl(origin)}/generateToken`;

/** Where an item's page is (linked from item, group, job, layer and viewer pages alike). */
export const itemPageHref = (itemId: string) => `${PORTAL_ROOT}/content/items/${encodeURIComponent(itemId)}?f=html`;

export interface RequestOrigins {
  /** Where this request arrived, as absolute URLs back to it start: scheme, host and any base path. */
  readonly origin: string;
  /** The deployment's HTTPS base, for links that must be secure whatever the request used. */
  readonly httpsOrigin: string;
  readonly https: boolean;
}

/**
 * The bases of absolute URLs for a request. API Gateway terminates TLS and says so in X-Forwarded-Proto (the
 * local gateway sets it the same way, overwriting whatever a client sent). A configured public origin
 * (`-c publicOrigin=…`: a custom domain, CloudFront) may carry a base path (`https://gis.example.com/maps`, a
 * custom domain's path mapping): every absolute URL then starts with it, since the function sees paths without it.
 */
export function requestOrigins(
  event: { headers?: Record<string, string | undefined>; requestContext: { domainName: string } },
  configured = config().publicOrigin,
): RequestOrigins {
  const https = (event.headers?.["x-forwarded-proto"] ?? "https") === "https";
  const base = configured?.replace(/\/+$/, "") || undefined;
  const own = `${https ? "https" : "http"}://${event.requestContext.domainName}`;
  return {
    https,
    origin: https && base ? base : own,
    httpsOrigin: base ?? `https://${event.requestContext.domainName}`,
  };
}

const hostsAndPaths = new Map<string, string>();

/** `host[:port][/base path]` of an origin, as the original names its portal and servers (`portalHostname`). */
export const hostAndPath = (origin: string) => {
  let known = hostsAndPaths.get(origin);
  if (known === undefined) {
    const u = new URL(origin);
    known = `${u.host}${u.pathname.replace(/\/+$/, "")}`;
    // A deployment has a handful of origins (its own, a custom domain): a request's keeps its parse.
    if (hostsAndPaths.size >= 64) hostsAndPaths.clear();
    hostsAndPaths.set(origin, known);
  }
  return known;
};

/**
 * The page of this site a form was sent from (path and query, so its prefilled values come back), as the
 * browser's Referer names it (pages set `Referrer-Policy: same-origin`); undefined from elsewhere or without one.
 */
export function formPageOf(event: {
  headers?: Record<string, string | undefined>;
  requestContext: { domainName: string };
}): string | undefined {
  try {
    const referer = new URL(event.headers?.referer ?? "");
    const o = requestOrigins(event);
    const own = [event.requestContext.domainName, new URL(o.origin).host, new URL(o.httpsOrigin).host];
    return own.includes(referer.host) ? `${referer.pathname}${referer.search}` : undefined;
  } catch {
    // No Referer, or not a URL.
    return undefined;
  }
}
