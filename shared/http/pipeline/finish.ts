// What every answer carries besides its body, a rendered result or an error alike.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { AUTH_COOKIE, CLEARED_AUTH_COOKIE } from "#shared/auth/identity.ts";
import type { Operation } from "#shared/http/pipeline/request.ts";
import type { PipelineState } from "#shared/http/pipeline/state.ts";

/**
 * The handler's extra headers and the pipeline's cookies, set before the handler's own, so a handler's new
 * sign-in cookie is never followed by the stale one's clearing.
 */
export function finish(response: APIGatewayProxyStructuredResultV2, s: PipelineState, op: Operation) {
  const extra = { ...(op.openCors ? { "access-control-allow-origin": "*" } : {}), ...s.request?.responseHeaders };
  if (Object.keys(extra).length > 0) response.headers = { ...response.headers, ...extra };
  const own = response.cookies ?? [];
  const signsIn = own.some((c) => c.startsWith(`${AUTH_COOKIE}=`));
  const pipeline = (s.cookies ?? []).filter((c) => !(signsIn && c === CLEARED_AUTH_COOKIE));
  if (pipeline.length > 0 || own.length > 0) response.cookies = [...pipeline, ...own];
}
