// CORS preflights (OPTIONS). API Gateway hands one to the function of the route its path matches (each route is
// `ANY`, which takes OPTIONS too) and one whose path no route serves to `$default` (not-found); the local engine
// routes them the same way. Every function answers it here, first, before parameters or credentials are read (a
// preflight carries none), by the organization the request addresses. API Gateway's own CORS is not configured:
// it would replace these answers with one list for every organization.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { isPreflight, ownOrigins, preflightHeaders } from "#shared/http/cors.ts";
import type { Operation } from "#shared/http/pipeline/request.ts";
import type { RestMiddleware, RestMiddyRequest } from "#shared/http/pipeline/state.ts";
import { renderNoContent } from "#shared/http/render.ts";
import { logger } from "#shared/log.ts";
import { getDefaultPortalId, getPortal, type Portal } from "#shared/stores/portals.ts";
import { requestOrigins } from "#shared/urls.ts";

const PORTAL_ID = /^[A-Za-z0-9]{1,64}$/;

/**
 * The organization whose allowedOrigins decide a request no caller was resolved for (a preflight, an early
 * refusal): the one its path names (`portals/<id>`), the addressed hosted server's, or the default one. Undefined
 * when none can be read: then no origin is allowed (closed, not open, when the store fails).
 */
export async function corsPortal(event: APIGatewayProxyEventV2, op: Operation): Promise<Portal | undefined> {
  try {
    const named = event.pathParameters?.portalId;
    if (named && named !== "self" && PORTAL_ID.test(named)) {
      const portal = await getPortal(named);
      if (portal) return portal;
    }
    const server = op.at ? await op.at(event).catch(() => undefined) : undefined;
    const portalId = server?.portalId ?? (await getDefaultPortalId());
    return portalId ? await getPortal(portalId) : undefined;
  } catch (err) {
    logger.warn("organization unreadable for CORS", { error: err instanceof Error ? err : new Error(String(err)) });
    return undefined;
  }
}

/** Answers OPTIONS (a preflight, or a client asking what the path takes): 204, `Allow`, and CORS when allowed. */
export const preflight = (op: Operation, logged: (request: RestMiddyRequest) => void): RestMiddleware => ({
  before: async (request) => {
    const event = request.event;
    if (event.requestContext.http.method.toUpperCase() !== "OPTIONS") return undefined;
    const o = requestOrigins(event);
    const cors = isPreflight(event) ? preflightHeaders(event, await corsPortal(event, op), ownOrigins(o)) : {};
    const response = renderNoContent(o.https);
    response.headers = { ...response.headers, allow: "GET, POST, OPTIONS", ...cors };
    // An early answer skips the later steps, the access log's among them: it is logged here.
    request.response = response;
    logged(request);
    return response;
  },
});
