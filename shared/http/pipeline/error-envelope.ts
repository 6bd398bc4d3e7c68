// Every error leaves through here: the `{error:{…}}` envelope (HTTP 200, as ArcGIS clients expect) in the requested
// format, or on OAuth endpoints an RFC 6749 error body with its HTTP status. No stack trace ever reaches a client.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { ApiError, errorBody, INTERNAL_ERROR, OAuthError } from "#shared/errors.ts";
import { escapeHtml, page, renderValue } from "#shared/http/html.ts";
import { corsHeaders, ownOrigins } from "#shared/http/cors.ts";
import { finish } from "#shared/http/pipeline/finish.ts";
import { corsPortal } from "#shared/http/pipeline/preflight.ts";
import type { Operation } from "#shared/http/pipeline/request.ts";
import type { RestMiddleware } from "#shared/http/pipeline/state.ts";
import { type Rendering, renderHtml, renderJson, renderOAuthError } from "#shared/http/render.ts";
import { logger } from "#shared/log.ts";
import { formPageOf, requestOrigins } from "#shared/urls.ts";

export const errorEnvelope = (op: Operation): RestMiddleware => ({
  onError: async (request) => {
    const err = request.error;
    const s = request.internal;
    const https = s.rendering?.https ?? requestOrigins(request.event).https;
    // Refused before its organization was known (a bad token, a bad format): the page of an allowed origin still
    // reads why, by the organization the request addresses.
    if (!s.cors && !request.context.mapgate?.invocation) {
      const event = request.event;
      const portal = event.headers?.origin !== undefined ? await corsPortal(event, op) : undefined;
      s.cors = corsHeaders(event, portal, ownOrigins(requestOrigins(event)), op.openCors === true);
    }
    let body: ReturnType<typeof errorBody> = INTERNAL_ERROR;
    if (err instanceof ApiError) body = errorBody(err);
    else if (!(err instanceof OAuthError) || op.protocol !== "oauth") {
      logger.error("internal error", {
        requestId: request.event.requestContext.requestId,
        operation: op.name,
        error: err instanceof Error ? err : new Error(String(err)),
      });
    }
    if (op.protocol === "oauth") {
      // Transport and parameter faults found by the shared steps (SSL, body size, method) are the client's.
      const oauth =
        err instanceof OAuthError
          ? err
          : err instanceof ApiError
            ? new OAuthError("invalid_request", [err.message, ...err.details].join(" "))
            : undefined;
      s.errorCode = oauth?.status ?? 500;
      request.response = renderOAuthError(oauth, https);
      finish(request.response, s);
      return;
    }
    s.errorCode = body.error.code;
    const rendering: Rendering = s.rendering ?? { format: "json", https };
    request.response =
      rendering.format === "html"
        ? renderHtml(
            page(
              `Error ${body.error.code}`,
              `<div class="error"><h1>${escapeHtml(body.error.message)}</h1>${renderValue(body.error.details)}</div>` +
                errorWayOn(request.event),
            ),
            rendering.https,
          )
        : renderJson(body, rendering);
    finish(request.response, s);
  },
});

/**
 * Where a person goes from an error page, so that a refused form is not a dead end: back to the form they sent
 * (the page it was on, as the browser's same-origin Referer names it, its prefilled values kept), the directory
 * the path belongs to, and home.
 */
function errorWayOn(event: APIGatewayProxyEventV2): string {
  const links: [href: string, label: string][] = [];
  if (event.requestContext.http.method === "POST") {
    links.push([formPageOf(event) ?? `${event.rawPath}?f=html`, "Back to the form"]);
  }
  const server = /^\/([^/]+)\/rest\//.exec(event.rawPath)?.[1];
  if (event.rawPath.startsWith(PORTAL_ROOT)) links.push([`${PORTAL_ROOT}?f=html`, "Directory"]);
  else if (server) links.push([`/${server}/rest/services?f=html`, "Services directory"]);
  links.push(["/", "Home"]);
  return `<p>${links.map(([href, label]) => `<a href="${escapeHtml(href)}">${escapeHtml(label)}</a>`).join(" · ")}</p>`;
}
