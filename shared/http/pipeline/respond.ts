// Renders the operation's answer once, in the requested format: the only place a successful answer is rendered.
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { LAMBDA_PAYLOAD_BYTES } from "#shared/system.ts";
import { ApiError } from "#shared/errors.ts";
import { escapeHtml, page, renderValue } from "#shared/http/html.ts";
import type { Params } from "#shared/http/params.ts";
import { finish } from "#shared/http/pipeline/finish.ts";
import { FormStart, formPage, formResultRedirect, ShownPage } from "#shared/http/pipeline/forms.ts";
import type { Operation } from "#shared/http/pipeline/request.ts";
import { ran, type RestMiddleware } from "#shared/http/pipeline/state.ts";
import {
  Content,
  Redirect,
  Rendered,
  renderContent,
  renderHtml,
  renderJson,
  renderRedirect,
} from "#shared/http/render.ts";

const PAYLOAD_ROOM = LAMBDA_PAYLOAD_BYTES - 64 * 1024;

/**
 * Whether a rendered answer could pass Lambda's payload limit: a character of the body takes at most 6 bytes once
 * JSON-escaped (a control character or a lone surrogate becomes `\uXXXX`), so only an answer whose body could come
 * near the limit is serialised to be measured exactly (most never are).
 */
function mayExceedPayload(response: APIGatewayProxyStructuredResultV2): boolean {
  return 6 * (response.body?.length ?? 0) + 16 * 1024 > PAYLOAD_ROOM;
}

export const respond = (op: Operation): RestMiddleware => ({
  after: async (request) => {
    const s = request.internal;
    const req = ran(s.request, "caller");
    const answer = ran(s.answer, "compute");
    const data = answer instanceof Rendered ? answer.data : answer;
    if (data instanceof ShownPage) request.response = renderHtml(data.html, req.https);
    else if (data instanceof FormStart) request.response = formPage(op, req, data);
    else if (data instanceof Redirect) request.response = renderRedirect(data, req.https);
    else if (data instanceof Content)
      request.response = renderContent(data, req.https, req.event.headers?.["if-none-match"], {
        shareable: !carriesCredentials(req.event, req.params),
      });
    else if (req.format === "html") {
      const custom = op.html?.(data, req);
      const html = custom ?? page(op.name, `<h1>${escapeHtml(op.name)}</h1>${renderValue(data)}`);
      const there = await formResultRedirect(op, req, data, html);
      request.response = there
        ? renderRedirect(new Redirect(there), req.https)
        : typeof html === "string"
          ? renderHtml(html, req.https)
          : renderHtml(html.body, req.https, html.formActions, { scripts: html.scripts === true });
    } else
      request.response = renderJson(
        data,
        ran(s.rendering, "normalize"),
        answer instanceof Rendered ? answer.json : undefined,
      );
    finish(request.response, s);
    // What Lambda returns is the whole result (headers, base64 body): past 6 MB, AWS answers a bare 500.
    // Measured on the rendered answer, so pjson's indentation, HTML's tables and JSONP count too.
    if (mayExceedPayload(request.response) && Buffer.byteLength(JSON.stringify(request.response)) > PAYLOAD_ROOM) {
      throw new ApiError(400, "The answer is too large.", [
        "It would exceed the 6 MB a response may hold: ask for less (page it with 'start' and 'num', or use f=json).",
      ]);
    }
  },
});

/**
 * Whether a request carries anything that could be a credential: a token (parameter or either header) or any
 * cookie. Its answer is never marked `public`, so no shared cache (the CDN) stores what a credential was
 * answered, even where the content itself is public.
 */
export function carriesCredentials(event: APIGatewayProxyEventV2, params: Params): boolean {
  const h = event.headers ?? {};
  return (
    params.get("token") !== undefined ||
    h.authorization !== undefined ||
    h["x-esri-authorization"] !== undefined ||
    (event.cookies?.length ?? 0) > 0 ||
    h.cookie !== undefined
  );
}
