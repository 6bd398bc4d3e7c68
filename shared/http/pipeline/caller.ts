// The caller (one credential, resolved once, in the same read as the organization) and the transport rules of the
// operation and the organization: what turns a normalized request into the RestRequest the operation computes on.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { CSRF_FIELD, csrfCookie, csrfField, csrfValid } from "#shared/auth/csrf.ts";
import {
  ANONYMOUS,
  anonymousView,
  CLEARED_AUTH_COOKIE,
  type Credential,
  type ExtraRead,
  findCredential,
  hasAuthCookie,
  type Identity,
  resolveIdentityWith,
} from "#shared/auth/identity.ts";
import { cookieMayAuthenticate, corsHeaders, ownOrigins } from "#shared/http/cors.ts";
import { clientAddress } from "#shared/http/edge.ts";
import { ApiError, forbidden, methodNotAllowed, sslRequired } from "#shared/errors.ts";
import type { Invocation, Operation, RestRequest } from "#shared/http/pipeline/request.ts";
import { type Normalized, ran, type RestMiddleware } from "#shared/http/pipeline/state.ts";
import type { Rendering } from "#shared/http/render.ts";
import { getDefaultPortalId, type Portal } from "#shared/stores/portals.ts";
import type { Server } from "#shared/stores/servers.ts";
import { requestOrigins } from "#shared/urls.ts";

const NO_ORGANIZATION = () =>
  new ApiError(404, "No organization has been set up on this deployment.", [
    "An operator creates one with: npm run admin -- bootstrap",
  ]);

async function anonymousPortal(server: Server | undefined, extra: ExtraRead | undefined) {
  const portalId = server?.portalId ?? (await getDefaultPortalId());
  const found = portalId ? await anonymousView(portalId, extra) : undefined;
  if (!found) throw NO_ORGANIZATION();
  return found;
}

/** An invoked operation's request: the caller IAM identified; no credential, cookie or CSRF field applies. */
function invokedRequest(
  op: Operation,
  n: Normalized,
  rendering: Rendering,
  event: APIGatewayProxyEventV2,
  invocation: Invocation,
): RestRequest {
  if (op.at) throw new Error(`${op.name} is served by a hosted server: it cannot be invoked`);
  return {
    event,
    method: "POST",
    params: n.params,
    format: rendering.format,
    https: true,
    origin: n.httpsOrigin,
    httpsOrigin: n.httpsOrigin,
    sourceIp: event.requestContext.http.sourceIp,
    identity: invocation.identity,
    portal: invocation.identity.portal,
    server: undefined,
    pathParameters: event.pathParameters ?? {},
    path: event.rawPath,
    csrf: undefined,
    csrfValid: false,
    responseHeaders: {},
    ...(op.prefetch ? { prefetched: null } : {}),
    invocation,
  };
}

export const caller = (op: Operation): RestMiddleware => ({
  before: async (request) => {
    const s = request.internal;
    const event = request.event;
    const n = ran(s.normalized, "normalize");
    const rendering = ran(s.rendering, "normalize");
    const invocation = request.context.mapgate?.invocation;
    if (invocation) {
      s.request = invokedRequest(op, n, rendering, event, invocation);
      return;
    }
    const params = n.params;
    const address = clientAddress(event);
    const sourceIp = typeof address === "string" ? address : await address;
    // A path's GET and POST are one `ANY` route (shared/system.ts): every other method stops here.
    const verb = event.requestContext.http.method.toUpperCase();
    if (verb !== "GET" && verb !== "POST") throw methodNotAllowed("Only GET and POST are supported.");
    if (op.httpsOnly && !rendering.https) {
      // Why, and the way there (a page shows the address as a link); never the query, which may hold secrets.
      throw sslRequired([
        `${op.name} answers over HTTPS only, so that passwords and tokens never travel in clear. The same address over HTTPS:`,
        `${requestOrigins(event).httpsOrigin}${event.rawPath}`,
      ]);
    }
    const server = op.at ? await op.at(event) : undefined;
    const method = event.requestContext.http.method.toUpperCase();
    // What a browser's Origin header says of our pages: scheme and host, never the base path.
    const own = ownOrigins(n);
    const csrfChecked =
      method === "POST" && rendering.https ? await csrfValid(event, params.get(CSRF_FIELD), own) : false;
    // The browser's ambient cookie never authorizes a JSONP answer (any site can read one), nor an operation that
    // changes state unless the request is one of our own forms (its CSRF field matches): a cross-site form
    // could submit it otherwise.
    const statechanging = op.postOnly === true && method === "POST";
    // Nor a request from another origin's page, whatever it asks (shared/http/cors.ts: the one cookie rule).
    const sameOrigin = cookieMayAuthenticate(event, own);
    const useCookie =
      sameOrigin && rendering.callback === undefined && !op.ignoreCookie && (!statechanging || csrfChecked);
    // OAuth endpoints authenticate clients their own way, and their `token` parameter is the token at hand
    // (RFC 7009), not the caller's credential.
    const credential: Credential | undefined =
      op.protocol === "oauth" ? undefined : findCredential(event, params, useCookie);
    // Another origin's request was never going to use the cookie: it goes on without one (and is told it needs a
    // token), rather than being told a form of ours failed its check.
    if (!credential && sameOrigin && statechanging && !op.ignoreCookie && hasAuthCookie(event) && !csrfChecked) {
      throw forbidden(["The form could not be verified (CSRF check failed): reload the page and submit it again."]);
    }
    const presented = {
      sourceIp,
      referer: event.headers?.referer,
      at: server
        ? { kind: "server" as const, serverId: server.serverId, portalId: server.portalId }
        : { kind: "portal" as const },
    };
    const extra = op.prefetch && server ? op.prefetch(server) : undefined;
    let identity: Identity;
    let prefetched: Record<string, unknown> | null | undefined;
    try {
      ({ identity, extra: prefetched } = await resolveIdentityWith(credential, presented, extra));
    } catch (err) {
      // A cookie whose token expired or was revoked means "not signed in" (a browser sends it unasked): the
      // request goes on anonymously and the stale cookie is cleared. An explicit bad token stays a 498.
      if (credential?.source !== "cookie" || !(err instanceof ApiError) || err.code !== 498) throw err;
      identity = ANONYMOUS;
      (s.cookies ??= []).push(CLEARED_AUTH_COOKIE);
    }
    let portal: Portal;
    if (identity.kind === "anonymous") ({ portal, extra: prefetched } = await anonymousPortal(server, extra));
    else portal = identity.portal;
    // Known before any refusal below, so that the page of an allowed origin can read it.
    s.cors = corsHeaders(event, portal, own, op.openCors === true);
    if (portal.allSSL && !rendering.https) throw sslRequired();
    let csrf: string | undefined;
    if (rendering.format === "html" && rendering.https) {
      const cookie = csrfCookie(event);
      if (cookie.setCookie) (s.cookies ??= []).push(cookie.setCookie);
      csrf = await csrfField(cookie.value);
    }
    s.request = {
      event,
      method,
      params,
      format: rendering.format,
      ...(n.contentFormat ? { contentFormat: n.contentFormat } : {}),
      https: rendering.https,
      origin: n.origin,
      httpsOrigin: n.httpsOrigin,
      sourceIp,
      identity,
      portal,
      server,
      pathParameters: event.pathParameters ?? {},
      path: event.rawPath,
      csrf,
      csrfValid: csrfChecked,
      responseHeaders: {},
      ...(extra ? { prefetched: prefetched ?? null } : {}),
    };
    if (op.postOnly && method !== "POST") {
      if (rendering.format !== "html") throw methodNotAllowed();
      s.showForm = true;
    }
  },
});
