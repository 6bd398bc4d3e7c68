// The first step on the request itself: parameters, output format and JSONP callback, validated before anything
// else runs (no credential is read for a request that is malformed anyway).
import { config } from "#shared/config.ts";
import { badRequest } from "#shared/errors.ts";
import { type Params, parseParams } from "#shared/http/params.ts";
import type { Operation } from "#shared/http/pipeline/request.ts";
import type { PipelineState, RestMiddleware } from "#shared/http/pipeline/state.ts";
import { CALLBACK, FORMATS, type Format } from "#shared/http/render.ts";
import { requestOrigins } from "#shared/urls.ts";

const FORMAT_NAMES: ReadonlySet<string> = new Set(FORMATS);
const isFormat = (f: string): f is Format => FORMAT_NAMES.has(f);

export const normalize = (op: Operation): RestMiddleware => ({
  before: async (request) => {
    const event = request.event;
    const o = requestOrigins(event);
    const params = await parseParams(event, config().maxBodyBytes, op.files, op.bodyTooLarge);
    if (op.bodyOnly && event.rawQueryString) refuseInQuery(op.bodyOnly, event.rawQueryString);
    const contentFormat = chooseRendering(op, params, event.rawPath, o.https, request.internal);
    request.internal.normalized = { params, contentFormat, origin: o.origin, httpsOrigin: o.httpsOrigin };
  },
});

/** Parameters that carry secrets are refused in the query string (Operation.bodyOnly). */
function refuseInQuery(bodyOnly: readonly string[], rawQueryString: string): void {
  const query = new URLSearchParams(rawQueryString);
  const exposed = bodyOnly.filter((name) => query.has(name));
  if (exposed.length > 0) {
    throw badRequest("Credentials in the URL.", [
      `${exposed.map((n) => `'${n}'`).join(", ")} must be sent in the request body, never in the URL.`,
    ]);
  }
}

/**
 * Sets how the answer is rendered, before a bad format or callback is refused (so the refusal is rendered too),
 * and answers the content format `f` asked for when the operation answers it itself.
 */
function chooseRendering(
  op: Operation,
  params: Params,
  path: string,
  https: boolean,
  s: PipelineState,
): string | undefined {
  if (op.protocol === "oauth") {
    // Token answers are never HTML pages nor JSONP (a script any site could include would leak them).
    s.rendering = { format: "json", https };
    return undefined;
  }
  const fallback = typeof op.defaultFormat === "function" ? op.defaultFormat(path) : op.defaultFormat;
  const f = (params.get("f") ?? fallback ?? "html").toLowerCase();
  if (op.contentFormats?.includes(f)) {
    s.rendering = { format: "json", https };
    return f;
  }
  if (!isFormat(f)) {
    s.rendering = { format: "json", https };
    throw badRequest("Invalid format.", [`'f' must be one of ${FORMATS.join(", ")}; got '${f.slice(0, 32)}'.`]);
  }
  const callback = params.get("callback");
  if (callback !== undefined && f === "json") {
    if (callback.length > 128 || !CALLBACK.test(callback)) {
      s.rendering = { format: f, https };
      throw badRequest("Invalid callback.", ["'callback' must be a JavaScript identifier (dots allowed)."]);
    }
    s.rendering = { format: f, https, callback };
  } else s.rendering = { format: f, https };
  return undefined;
}
