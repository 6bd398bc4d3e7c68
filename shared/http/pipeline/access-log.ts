// One line per request (never parameters, tokens or bodies) once the response is known, and its metrics line
// (shared/metrics.ts): its count by operation and outcome class, its latency and response bytes.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { infoEnabled, logger } from "#shared/log.ts";
import { requestMetrics, routeOf } from "#shared/metrics.ts";
import type { Operation } from "#shared/http/pipeline/request.ts";
import type { RestMiddleware, RestMiddyRequest } from "#shared/http/pipeline/state.ts";

/** The size of an answer's body as sent (a base64 body decoded). */
function bodyBytes(response: APIGatewayProxyStructuredResultV2 | null | undefined): number {
  const body = response?.body ?? "";
  return response?.isBase64Encoded ? Buffer.byteLength(body, "base64") : Buffer.byteLength(body);
}

/** The outermost step: it starts the clock first and writes its lines last, whether the request failed or not. */
export const accessLog = (op: Operation): RestMiddleware & { done: (request: RestMiddyRequest) => void } => {
  const operation = op.name;
  const done = (request: RestMiddyRequest) => {
    const s = request.internal;
    const caller = s.request?.identity;
    const ms = s.started === undefined ? 0 : performance.now() - s.started;
    const event = request.event;
    if (infoEnabled())
      logger.info("request", {
        requestId: event.requestContext.requestId,
        operation,
        method: event.requestContext.http.method,
        path: event.rawPath,
        https: s.rendering?.https,
        format: s.rendering?.format,
        user: caller?.kind === "user" ? caller.user.username : undefined,
        caller: request.context.mapgate?.invocation?.callerId,
        app: caller?.kind === "app" ? caller.app.clientId : undefined,
        errorCode: s.errorCode,
        ms: Math.round(ms),
      });
    requestMetrics({
      ...routeOf(event.routeKey, operation),
      code: s.errorCode ?? request.response?.statusCode ?? 200,
      ms: Math.round(ms * 10) / 10,
      bytes: bodyBytes(request.response),
      requestId: event.requestContext.requestId,
      resource: op.resourceOf?.(event.rawPath),
    });
  };
  return {
    before: (request) => {
      request.internal.started = performance.now();
    },
    after: done,
    onError: done,
    // An answer given early (a preflight's) skips `after`: its step logs it with this.
    done,
  };
};
