// What every answer carries besides its body, a rendered result or an error alike.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { AUTH_COOKIE, CLEARED_AUTH_COOKIE } from "#shared/auth/identity.ts";
import { mergeVary } from "#shared/http/cors.ts";
import type { PipelineState } from "#shared/http/pipeline/state.ts";

/**
 * The CORS headers (shared/http/cors.ts), the handler's extra headers (which win: a registered app's origin at
 * the token endpoint) and the pipeline's cookies, set before the handler's own, so a handler's new sign-in cookie
 * is never followed by the stale one's clearing. `Vary` adds to what the answer varies on already.
 *
 * The one place CORS is decided for every answer kind (JSON, HTML, content, redirects, errors): whatever a
 * renderer wrote under `Access-Control-*` is dropped first, so no answer can allow an origin the organization
 * refuses (a refused origin's CORS headers are only `Vary`, which would otherwise leave a renderer's `*` in place).
 */
export function finish(response: APIGatewayProxyStructuredResultV2, s: PipelineState) {
  if (response.headers)
    response.headers = Object.fromEntries(
      Object.entries(response.headers).filter(([name]) => !name.toLowerCase().startsWith("access-control-")),
    );
  const extra: Record<string, string | number | boolean> = { ...s.cors, ...s.request?.responseHeaders };
  if (Object.keys(extra).length > 0) {
    const vary = mergeVary(String(response.headers?.vary ?? ""), typeof extra.vary === "string" ? extra.vary : "");
    response.headers = { ...response.headers, ...extra, ...(vary ? { vary } : {}) };
  }
  const own = response.cookies ?? [];
  const signsIn = own.some((c) => c.startsWith(`${AUTH_COOKIE}=`));
  const pipeline = (s.cookies ?? []).filter((c) => !(signsIn && c === CLEARED_AUTH_COOKIE));
  if (pipeline.length > 0 || own.length > 0) response.cookies = [...pipeline, ...own];
}
