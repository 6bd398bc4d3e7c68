// The one middy stack every REST handler uses: a CORS preflight answered first, then normalize (parameters,
// format, caller) → validate (method and transport rules) → compute (the handler) → respond (render once, errors
// as envelopes).
// Each middleware is a small factory in shared/http/pipeline/; their state travels in middy's `request.internal`
// (shared/http/pipeline/state.ts). The handler returns data or throws a typed error.
import middy from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { config } from "#shared/config.ts";
import { forbidden, tokenRequired } from "#shared/errors.ts";
import { accessLog } from "#shared/http/pipeline/access-log.ts";
import { caller } from "#shared/http/pipeline/caller.ts";
import { compute } from "#shared/http/pipeline/compute.ts";
import { errorEnvelope } from "#shared/http/pipeline/error-envelope.ts";
import { normalize } from "#shared/http/pipeline/normalize.ts";
import { preflight } from "#shared/http/pipeline/preflight.ts";
import type { Compute, Operation, RestRequest } from "#shared/http/pipeline/request.ts";
import { respond } from "#shared/http/pipeline/respond.ts";
import type { PipelineState, RestContext } from "#shared/http/pipeline/state.ts";
import type { Identity } from "#shared/auth/identity.ts";
import { inRequest } from "#shared/log.ts";

// Handlers name these types where they always have: the stack's entry point.
export type { Compute, Invocation, Operation, RestRequest } from "#shared/http/pipeline/request.ts";
export type { RestContext } from "#shared/http/pipeline/state.ts";

export function requireUser(req: RestRequest): Extract<Identity, { kind: "user" }> {
  if (req.identity.kind === "app") throw forbidden(["An application token does not act for a user."]);
  if (req.identity.kind !== "user") throw tokenRequired();
  return req.identity;
}

/** A signed-in member of the portal the path names (`self` or the caller's own id); other portals are 403. */
export function requireMember(req: RestRequest): Extract<Identity, { kind: "user" }> {
  const identity = requireUser(req);
  const requested = req.pathParameters.portalId;
  if (requested !== "self" && requested !== identity.portal.portalId) throw forbidden();
  return identity;
}

/** A member of the path's portal whose role grants `privilege` (administrators hold every privilege). */
export function requirePrivilege(req: RestRequest, privilege: string): Extract<Identity, { kind: "user" }> {
  const identity = requireMember(req);
  if (identity.user.role !== "org_admin" && !identity.privileges.includes(privilege)) throw forbidden();
  return identity;
}

/** A REST handler: the operation's rules plus its compute step, wrapped in the shared stack. */
export function restHandler(op: Operation, fn: Compute) {
  // Read and validated at cold start (module load), so a misconfigured function fails before serving.
  config();
  // The early timeout is beforeTimeout's (one interval for all requests, in compute()), not middy's timer per
  // request. middy's own handler does nothing: the operation runs in compute(), which sees the request state.
  const log = accessLog(op);
  const chain = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RestContext, PipelineState>({
    timeoutEarlyInMillis: 0,
  })
    .use(log)
    .use(errorEnvelope(op))
    .use(preflight(op, log.done))
    .use(normalize(op))
    .use(caller(op))
    .use(respond(op))
    .use(compute(op, fn));
  // Every line logged while the request runs (in shared code too) carries its request id.
  return (event: APIGatewayProxyEventV2, context: RestContext): Promise<APIGatewayProxyStructuredResultV2> =>
    inRequest(event.requestContext?.requestId, () => chain(event, context));
}
