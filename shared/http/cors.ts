// Cross-origin answers as ArcGIS gives them: an organization lists the origins whose pages may read its answers
// (`allowedOrigins`; an empty list allows every origin). An allowed origin is echoed with
// `Access-Control-Allow-Credentials: true` (the ArcGIS Maps SDK sends portal requests with credentials, which `*`
// does not allow); any other origin gets no CORS header and the browser keeps the answer from the page. Which
// answers a caller's credentials may authorize cross-origin is decided here too: tokens only, never the cookie.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import type { Portal } from "#shared/stores/portals.ts";

/** How many origins an organization may list (ArcGIS sets no documented limit; a portal record stays small). */
export const MAX_ALLOWED_ORIGINS = 100;

/** How long a browser may keep a preflight's answer: two hours, the longest Chromium honours. */
export const PREFLIGHT_MAX_AGE_SECONDS = 7200;

/** What the ArcGIS Maps SDK and ArcGIS REST JS send: allowed when a preflight names no headers of its own. */
const DEFAULT_ALLOWED_HEADERS = "Authorization, X-Esri-Authorization, Content-Type, X-Requested-With";
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/;

/**
 * An entry of `allowedOrigins` as it is kept: `scheme://host[:port]` (http or https), lower-case, no default
 * port, no path, query, fragment or credentials; or why it is not one.
 */
export function readOrigin(entry: string): { origin: string } | { problem: string } {
  const raw = entry.trim();
  const problem = (why: string) => ({ problem: `'${raw.slice(0, 64)}' is not an origin: ${why}.` });
  if (raw.length > 512) return problem("it is too long");
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return problem("write it as scheme://host[:port]");
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return problem("the scheme must be http or https");
  if (url.username || url.password) return problem("it may not carry credentials");
  // `https://a.example/` is the origin with the slash every URL parser adds; anything more is a path.
  if (url.search || url.hash || raw.includes("?") || raw.includes("#")) return problem("it may not have a query");
  if (url.pathname !== "/" || /^[a-z][a-z0-9+.-]*:\/\/[^/]+\/./i.test(raw)) return problem("it may not have a path");
  return { origin: url.origin };
}

/**
 * The `allowedOrigins` parameter of `portals/self/update`: ArcGIS takes a comma-separated list (a JSON array is
 * taken too); an empty value clears the list, which allows every origin again.
 */
export function readAllowedOrigins(raw: string): { ok: true; origins: string[] } | { ok: false; problems: string[] } {
  let entries: unknown[];
  const text = raw.trim();
  if (text.startsWith("[")) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (!Array.isArray(parsed)) return { ok: false, problems: ["'allowedOrigins' must be a list of origins."] };
      entries = parsed;
    } catch {
      return { ok: false, problems: ["'allowedOrigins' is not valid JSON."] };
    }
  } else entries = text === "" ? [] : text.split(",");
  const problems: string[] = [];
  const origins = new Set<string>();
  for (const entry of entries) {
    if (typeof entry !== "string") {
      problems.push("'allowedOrigins' lists origins as strings.");
      continue;
    }
    if (entry.trim() === "") continue;
    const read = readOrigin(entry);
    if ("problem" in read) problems.push(read.problem);
    else origins.add(read.origin);
  }
  if (origins.size > MAX_ALLOWED_ORIGINS) problems.push(`'allowedOrigins' may list at most ${MAX_ALLOWED_ORIGINS}.`);
  return problems.length > 0 ? { ok: false, problems: problems.slice(0, 20) } : { ok: true, origins: [...origins] };
}

/** The origins of mapgate's own pages for this request: where it arrived and the deployment's public origins. */
export function ownOrigins(origins: { readonly origin: string; readonly httpsOrigin: string }): string[] {
  return [origins.origin, origins.httpsOrigin].map((o) => new URL(o).origin);
}

/** The request's `Origin` header as a browser sends it (a serialized origin), or undefined. */
function requestOrigin(event: APIGatewayProxyEventV2): string | undefined {
  return event.headers?.origin;
}

/**
 * THE cookie rule: a request whose `Origin` names another origin than mapgate's own (another port of the same
 * host, a sibling subdomain: places a SameSite=Lax cookie still reaches) is never authenticated by the sign-in
 * cookie. Such a page signs in as an app (OAuth) or with generateToken and sends its token; a page elsewhere
 * must not act as whoever is signed in to mapgate in the same browser.
 *
 * Nor is a subresource another site asked for: an `<img>` or `<script>` on a sibling subdomain or another port is
 * fetched without `Origin` yet with the Lax cookie, and although the page cannot read the answer, whether it
 * loads tells whether a private item exists, and a private image shows. Browsers say so in `Sec-Fetch-Site`
 * (`same-site`, `cross-site`) and `Sec-Fetch-Mode` (not `navigate`). What stays: mapgate's own pages' reads
 * (`same-origin`), top-level navigations from anywhere (a link someone follows, the HTML pages and their forms),
 * a URL typed or bookmarked (`none`), and clients that send neither header.
 */
export function cookieMayAuthenticate(event: APIGatewayProxyEventV2, own: readonly string[]): boolean {
  const origin = requestOrigin(event);
  if (origin !== undefined && !own.includes(origin)) return false;
  const site = event.headers?.["sec-fetch-site"]?.trim().toLowerCase();
  const mode = event.headers?.["sec-fetch-mode"]?.trim().toLowerCase();
  return !((site === "same-site" || site === "cross-site") && mode !== "navigate");
}

/** Whether `origin` may read this organization's answers: its own pages, or a listed origin (all when none is). */
function allowed(origin: string, portal: Portal, own: readonly string[]): boolean {
  // `null` (sandboxed frames, files) is never echoed: every such page would share it.
  if (origin === "null" || !URL.canParse(origin) || new URL(origin).origin !== origin) return false;
  if (own.includes(origin)) return true;
  return portal.allowedOrigins.length === 0 || portal.allowedOrigins.includes(origin);
}

/**
 * The CORS headers of an answer (errors included, so that a page can read a 498 or 403 envelope), every kind of
 * answer alike (finish() applies them and drops any a renderer wrote). Every answer says `Vary: Origin`: the same
 * URL is answered differently to different origins. `Vary` is for browsers and the caches that honour it;
 * CloudFront does not, which is why the CDN's content cache policy keys on `Origin` itself (infra/aws/cdn.ts).
 * `portal` undefined (the organization could not be read): no origin is allowed.
 *
 * An `openCors` operation (services and their content) answers `*` to a request without `Origin` (a tool, a
 * server; no browser page is involved) and, to a browser, what every other answer does: the allowed origin echoed
 * with credentials allowed. Echoing rather than `*` is what lets the SDK read a service it sends credentials to,
 * and it is what ArcGIS Server does when the organization lists its origins: a page of an origin the
 * organization does not list reads no service either.
 */
export function corsHeaders(
  event: APIGatewayProxyEventV2,
  portal: Portal | undefined,
  own: readonly string[],
  openCors: boolean,
): Record<string, string> {
  const origin = requestOrigin(event);
  if (origin === undefined)
    return openCors ? { "access-control-allow-origin": "*", vary: "Origin" } : { vary: "Origin" };
  if (!portal || !allowed(origin, portal, own)) return { vary: "Origin" };
  return { "access-control-allow-origin": origin, "access-control-allow-credentials": "true", vary: "Origin" };
}

/** Whether a request is a CORS preflight: OPTIONS with `Origin` and `Access-Control-Request-Method`. */
export function isPreflight(event: APIGatewayProxyEventV2): boolean {
  return (
    event.requestContext.http.method.toUpperCase() === "OPTIONS" &&
    requestOrigin(event) !== undefined &&
    event.headers?.["access-control-request-method"] !== undefined
  );
}

/**
 * A preflight's answer headers: for an allowed origin, GET and POST (all mapgate answers), the headers the page
 * asked to send (a token header, a JSON body's Content-Type) and how long to keep this answer; nothing for any
 * other origin, so the browser never sends the request.
 */
export function preflightHeaders(
  event: APIGatewayProxyEventV2,
  portal: Portal | undefined,
  own: readonly string[],
): Record<string, string> {
  const vary = { vary: "Origin, Access-Control-Request-Method, Access-Control-Request-Headers" };
  const origin = requestOrigin(event);
  if (origin === undefined || !portal || !allowed(origin, portal, own)) return vary;
  const asked = (event.headers?.["access-control-request-headers"] ?? "")
    .split(",")
    .map((h) => h.trim())
    .filter((h) => h !== "");
  // Echoed only when each is a header name (no line breaks or separators reach the answer), at most 32.
  const echo = asked.length > 0 && asked.length <= 32 && asked.every((h) => HEADER_NAME.test(h));
  return {
    ...vary,
    "access-control-allow-origin": origin,
    "access-control-allow-credentials": "true",
    "access-control-allow-methods": "GET, POST, OPTIONS",
    "access-control-allow-headers": echo ? asked.join(", ") : DEFAULT_ALLOWED_HEADERS,
    "access-control-max-age": String(PREFLIGHT_MAX_AGE_SECONDS),
  };
}

/** Joins two `Vary` values without repeating a field. */
export function mergeVary(a: string | undefined, b: string | undefined): string | undefined {
  const fields = [a, b].flatMap((v) => (v ?? "").split(",").map((f) => f.trim())).filter((f) => f !== "");
  const seen = new Map<string, string>();
  for (const f of fields) if (!seen.has(f.toLowerCase())) seen.set(f.toLowerCase(), f);
  return seen.size > 0 ? [...seen.values()].join(", ") : undefined;
}
