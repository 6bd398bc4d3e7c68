// The one middy stack every REST handler uses: normalize (parameters, format, caller) → validate
// (method and transport rules) → compute (the handler) → respond (render once, errors as envelopes).
// Each middleware is a small factory; the handler returns data or throws a typed error.
import middy, { type MiddlewareObj, type Request } from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { CSRF_FIELD, csrfCookie, csrfField, csrfValid } from "#shared/auth/csrf.ts";
import {
  ANONYMOUS,
  AUTH_COOKIE,
  CLEARED_AUTH_COOKIE,
  type Credential,
  findCredential,
  hasAuthCookie,
  type Identity,
  anonymousView,
  type ExtraRead,
  resolveIdentityWith,
} from "#shared/auth/identity.ts";
import { LAMBDA_PAYLOAD_BYTES, PORTAL_ROOT } from "#infra/system.ts";
import { config } from "#shared/config.ts";
import {
  ApiError,
  badRequest,
  errorBody,
  INTERNAL_ERROR,
  forbidden,
  methodNotAllowed,
  OAuthError,
  sslRequired,
  tokenRequired,
} from "#shared/http/errors.ts";
import { escapeHtml, type FormField, type HtmlPage, page, renderForm, renderValue } from "#shared/http/html.ts";
import { FORM_RESULT, formCookie, openFormResult, sealFormResult } from "#shared/http/form-results.ts";
import { type Params, parseParams } from "#shared/http/params.ts";
import {
  CALLBACK,
  Content,
  FORMATS,
  type Format,
  Redirect,
  Rendered,
  type Rendering,
  renderHtml,
  renderJson,
  renderOAuthError,
  renderContent,
  renderRedirect,
} from "#shared/http/render.ts";
import { beforeTimeout } from "#shared/deadlines.ts";
import { clientAddress } from "#shared/http/edge.ts";
import { inRequest, infoEnabled, logger } from "#shared/log.ts";
import { routeOf, requestMetrics } from "#shared/metrics.ts";
import { formPageOf, requestOrigins } from "#shared/urls.ts";
import { getDefaultPortalId, type Portal } from "#shared/stores/portals.ts";
import type { Server } from "#shared/stores/servers.ts";

export interface Operation {
  /** Shown as the page title and logged with each request. */
  readonly name: string;
  /** Operations that change state refuse GET (a browser's GET with f=html gets the form instead). */
  readonly postOnly?: boolean;
  /** The format when `f` is absent; a function of the path where resources under one route differ. */
  readonly defaultFormat?: Format | ((path: string) => Format);
  /** Fields of the HTML form that performs the operation. */
  readonly form?: readonly FormField[];
  /**
   * The form's fields as this caller sees them, when they depend on what the page knows (a choice of the caller's
   * data stores and servers, a role's privileges as checkboxes); `form` is shown to whoever it fails for.
   */
  readonly formFields?: (req: RestRequest) => Promise<readonly FormField[]>;
  /** The form's starting values (e.g. the record an update form edits); the query string's values win. */
  readonly formValues?: (req: RestRequest) => Promise<Record<string, string>>;
  /** A custom page for the result; the default renders the JSON answer as tables. */
  readonly html?: (data: object, req: RestRequest) => string | HtmlPage;
  /**
   * Where the result of an HTML form's POST is a page of its own (a started job's page): the 303 See Other goes
   * there instead of to the sealed result page (see formResultRedirect).
   */
  readonly seeOther?: (data: object, req: RestRequest) => string | undefined;
  /**
   * The operation cannot be undone (a delete): an HTML form's POST (one carrying the CSRF field) runs only with
   * `confirm=true`, a box the form shows with these words; without it the browser gets a page asking to confirm.
   * Clients of the API, which send no CSRF field, are not asked.
   */
  readonly confirm?: string;
  /**
   * The POST's page is answered as it is, not redirected (sign-in pages: a refused sign-in shows its form again).
   */
  readonly answersPostInPlace?: true;
  /** Parameters that carry secrets: refused in the query string (URLs land in logs and browser histories). */
  readonly bodyOnly?: readonly string[];
  /**
   * One item the operation needs on every request, read in the same BatchGetItem as the caller and their
   * organization (a server's catalog version): one store read per request instead of two.
   */
  readonly prefetch?: (server: Server) => ExtraRead;
  /**
   * Where the route lives: the portal (absent), or a hosted server named by the `server` path parameter, found by
   * the function given (`addressedServer`, shared/http/hosted-server.ts).
   */
  readonly at?: (event: APIGatewayProxyEventV2) => Promise<Server>;
  /** Refuses plain HTTP whatever the organization's allSSL says (credentials travel in the request). */
  readonly httpsOnly?: boolean;
  /** Ignores the sign-in cookie: a sign-in operation must work even when a stale cookie is present. */
  readonly ignoreCookie?: boolean;
  /**
   * Any origin may read the answers, errors included (`Access-Control-Allow-Origin: *`): services and their
   * content, which map clients on other origins read with a token in the URL or a header, never a cookie.
   */
  readonly openCors?: boolean;
  /** An OAuth 2.0 endpoint: JSON only (no JSONP), errors as RFC 6749 bodies with real HTTP statuses. */
  readonly protocol?: "oauth";
  /**
   * Formats beyond html/json/pjson the operation answers itself as Content (a feature query's geojson and
   * pbf); errors of such a request are JSON envelopes, as ArcGIS answers them.
   */
  readonly contentFormats?: readonly string[];
  /**
   * What kind of content a path asks for (tile, scene, style, query), counted as `Served` when answered: the
   * dashboard's tiles and queries. A function of the path alone, so it costs nothing when nothing is served.
   */
  readonly resourceOf?: (path: string) => string | undefined;
}

export interface RestRequest {
  readonly event: APIGatewayProxyEventV2;
  readonly method: string;
  readonly params: Params;
  readonly format: Format;
  /** One of the operation's contentFormats when `f` asked for it (`format` is then json, for errors). */
  readonly contentFormat?: string;
  readonly https: boolean;
  /** The origin this request arrived at, e.g. `https://maps.example.com`. */
  readonly origin: string;
  /** The HTTPS origin of the deployment, for links that must be secure whatever the request used. */
  readonly httpsOrigin: string;
  readonly sourceIp: string;
  readonly identity: Identity;
  /** The caller's organization; for anonymous callers the server's organization or the default one. */
  readonly portal: Portal;
  /** The hosted server a server route addresses. */
  readonly server: Server | undefined;
  readonly pathParameters: Readonly<Record<string, string | undefined>>;
  /** The request's path (no query): where this page's forms post, so a field the user edits never conflicts
   * with the same parameter left in the query string. */
  readonly path: string;
  /** The CSRF field for forms on this HTML page (HTTPS only: the cookie it pairs with is Secure). */
  readonly csrf: string | undefined;
  /** Whether this POST carries a CSRF field matching the browser's cookie, sent from one of our pages. */
  readonly csrfValid: boolean;
  /** Headers the handler adds to its answer, error or not (CORS for a registered app's own origin). */
  readonly responseHeaders: Record<string, string>;
  /** The operation's `prefetch` item as read with the caller (null: it does not exist). */
  readonly prefetched?: Record<string, unknown> | null;
  /** Set when another AWS service invoked the operation (IAM): the task token its job answers, if any. */
  readonly invocation?: Invocation;
}

/**
 * An operation invoked through the operations function: the caller was identified by IAM (the alias it was
 * allowed to invoke), not by any credential in the request, which therefore carries none.
 */
export interface Invocation {
  readonly identity: Extract<Identity, { kind: "user" }>;
  readonly callerId: string;
  readonly taskToken?: string | undefined;
}

interface Normalized {
  params: Params;
  rendering: Rendering;
  contentFormat: string;
  origin: string;
  httpsOrigin: string;
  sourceIp: string;
  started: number;
  errorCode: number;
  /** A browser's GET of a POST-only operation: answered with its form instead of running it. */
  showForm: boolean;
  /** Set-Cookie values the response carries (the CSRF cookie of a first form). */
  cookies: string[];
}

/** Pipeline state rides on the Lambda context object, which middy hands to every middleware. */
export type RestContext = Context & {
  mapgate?: Partial<Normalized> & { request?: RestRequest; invocation?: Invocation };
};
type RestMiddyRequest = Request<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RestContext>;
type RestMiddleware = MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RestContext>;

function state(request: RestMiddyRequest): Partial<Normalized> & { request?: RestRequest; invocation?: Invocation } {
  request.context.mapgate ??= {};
  return request.context.mapgate;
}

/** The size of an answer's body as sent (a base64 body decoded). */
function bodyBytes(response: APIGatewayProxyStructuredResultV2 | null | undefined): number {
  const body = response?.body ?? "";
  return response?.isBase64Encoded ? Buffer.byteLength(body, "base64") : Buffer.byteLength(body);
}

/**
 * Logs one line per request (never parameters, tokens or bodies) once the response is known, and writes its
 * metrics line (shared/metrics.ts): its count by operation and outcome class, its latency and response bytes.
 */
export const accessLog = (op: Operation): RestMiddleware => {
  const operation = op.name;
  const done = (request: RestMiddyRequest) => {
    const s = state(request);
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
        caller: s.invocation?.callerId,
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
      state(request).started = performance.now();
    },
    after: done,
    onError: done,
  };
};

/**
 * Maps every error to the `{error:{…}}` envelope (HTTP 200, as ArcGIS clients expect) in the requested format;
 * on OAuth endpoints, to an RFC 6749 error body with its HTTP status.
 */
export const errorEnvelope = (op: Operation): RestMiddleware => ({
  onError: (request) => {
    const err = request.error;
    const s = state(request);
    const https = s.rendering?.https ?? requestOrigins(request.event).https;
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
      finish(request.response, s, op);
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
    finish(request.response, s, op);
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

/** Parameters, output format and JSONP callback, validated before anything else runs. */
export const normalize = (op: Operation): RestMiddleware => ({
  before: (request) => {
    const event = request.event;
    const s = state(request);
    const o = requestOrigins(event);
    Object.assign(s, { origin: o.origin, httpsOrigin: o.httpsOrigin, sourceIp: event.requestContext.http.sourceIp });
    const params = parseParams(event, config().maxBodyBytes);
    s.params = params;
    if (op.bodyOnly && event.rawQueryString) {
      const query = new URLSearchParams(event.rawQueryString);
      const exposed = op.bodyOnly.filter((name) => query.has(name));
      if (exposed.length > 0) {
        throw badRequest("Credentials in the URL.", [
          `${exposed.map((n) => `'${n}'`).join(", ")} must be sent in the request body, never in the URL.`,
        ]);
      }
    }
    if (op.protocol === "oauth") {
      // Token answers are never HTML pages nor JSONP (a script any site could include would leak them).
      s.rendering = { format: "json", https: o.https };
      return;
    }
    const fallback = typeof op.defaultFormat === "function" ? op.defaultFormat(event.rawPath) : op.defaultFormat;
    const f = (params.get("f") ?? fallback ?? "html").toLowerCase();
    if (op.contentFormats?.includes(f)) {
      s.rendering = { format: "json", https: o.https };
      s.contentFormat = f;
      return;
    }
    if (!(FORMATS as readonly string[]).includes(f)) {
      s.rendering = { format: "json", https: o.https };
      throw badRequest("Invalid format.", [`'f' must be one of ${FORMATS.join(", ")}; got '${f.slice(0, 32)}'.`]);
    }
    const callback = params.get("callback");
    s.rendering = { format: f as Format, https: o.https };
    if (callback !== undefined && f === "json") {
      if (callback.length > 128 || !CALLBACK.test(callback)) {
        throw badRequest("Invalid callback.", ["'callback' must be a JavaScript identifier (dots allowed)."]);
      }
      s.rendering = { ...s.rendering, callback };
    }
  },
});

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

/** An invoked operation's request: the caller IAM identified; no credential, cookie or CSRF field applies. */
function invokedRequest(
  op: Operation,
  s: Partial<Normalized>,
  event: APIGatewayProxyEventV2,
  invocation: Invocation,
): RestRequest {
  if (op.at) throw new Error(`${op.name} is served by a hosted server: it cannot be invoked`);
  const rendering = s.rendering as Rendering;
  return {
    event,
    method: "POST",
    params: s.params as Params,
    format: rendering.format,
    https: true,
    origin: s.httpsOrigin as string,
    httpsOrigin: s.httpsOrigin as string,
    sourceIp: s.sourceIp as string,
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

/** The caller (one credential, resolved once) and the organization's transport rules. */
export const caller = (op: Operation): RestMiddleware => ({
  before: async (request) => {
    const s = state(request);
    const event = request.event;
    if (s.invocation) {
      s.request = invokedRequest(op, s, event, s.invocation);
      return;
    }
    const params = s.params as Params;
    const rendering = s.rendering as Rendering;
    const address = clientAddress(event);
    s.sourceIp = typeof address === "string" ? address : await address;
    // A path's GET and POST are one `ANY` route (infra/system.ts): every other method stops here.
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
    // What a browser's Origin header says of our pages: scheme and host, never the base path (parsed only for
    // the requests that check it).
    const csrfChecked =
      method === "POST" && rendering.https
        ? await csrfValid(
            event,
            params.get(CSRF_FIELD),
            [s.origin as string, s.httpsOrigin as string].map((o) => new URL(o).origin),
          )
        : false;
    // The browser's ambient cookie never authorizes a JSONP answer (any site can read one), nor an operation that
    // changes state unless the request is one of our own forms (its CSRF field matches): a cross-site form
    // could submit it otherwise.
    const statechanging = op.postOnly === true && method === "POST";
    const useCookie = rendering.callback === undefined && !op.ignoreCookie && (!statechanging || csrfChecked);
    // OAuth endpoints authenticate clients their own way, and their `token` parameter is the token at hand
    // (RFC 7009), not the caller's credential.
    const credential: Credential | undefined =
      op.protocol === "oauth" ? undefined : findCredential(event, params, useCookie);
    if (!credential && statechanging && !op.ignoreCookie && hasAuthCookie(event) && !csrfChecked) {
      throw forbidden(["The form could not be verified (CSRF check failed): reload the page and submit it again."]);
    }
    const presented = {
      sourceIp: s.sourceIp as string,
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
      ...(s.contentFormat ? { contentFormat: s.contentFormat } : {}),
      https: rendering.https,
      origin: s.origin as string,
      httpsOrigin: s.httpsOrigin as string,
      sourceIp: s.sourceIp as string,
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

/** The fields formFields answered, kept on the form's starting values under a key no JSON answer has. */
const FORM_FIELDS = Symbol("formFields");

/** The box an operation that cannot be undone asks to be checked (Operation.confirm). */
const CONFIRM = "confirm";
const confirmField = (op: Operation): FormField => ({
  name: CONFIRM,
  label: `I understand: ${op.confirm ?? ""}`,
  type: "checkbox",
  required: true,
});

function formPage(op: Operation, req: RestRequest, initial: object): APIGatewayProxyStructuredResultV2 {
  const signedIn =
    req.identity.kind === "user" ? `<p class="muted">Signed in as ${escapeHtml(req.identity.user.username)}</p>` : "";
  const values = new Map([...Object.entries(initial as Record<string, string>), ...req.params.asMap()]);
  const fields = (initial as { [FORM_FIELDS]?: readonly FormField[] })[FORM_FIELDS] ?? op.form ?? [];
  const form = renderForm(op.confirm ? [...fields, confirmField(op)] : fields, values, req.csrf, { action: req.path });
  return renderHtml(page(op.name, `<h1>${escapeHtml(op.name)}</h1>${signedIn}${form}`), req.https);
}

/** A page the pipeline answers itself, whatever the operation: a sealed form result, or a confirmation. */
class ShownPage {
  readonly html: string;

  constructor(html: string) {
    this.html = html;
  }
}

/**
 * The second step of a form whose operation cannot be undone, sent without its box checked (a Delete button on
 * an item's page): what it will do, the same form again with its values kept and the box to check, and a way
 * back. It works without any script; nothing has been done yet.
 */
function confirmationPage(op: Operation, req: RestRequest): ShownPage {
  const carried = [...req.params.asMap()].filter(([name]) => name !== CSRF_FIELD && name !== CONFIRM);
  const form = renderForm(
    [...carried.map(([name]): FormField => ({ name, type: "hidden" })), confirmField(op)],
    new Map(carried),
    req.csrf,
    { action: req.path, submit: op.name, formats: false },
  );
  const back = formPageOf(req.event) ?? `${PORTAL_ROOT}?f=html`;
  return new ShownPage(
    page(
      `Confirm: ${op.name}`,
      `<h1>${escapeHtml(op.name)}?</h1><p role="status">Nothing has been done yet. This cannot be undone: ${escapeHtml(op.confirm ?? "")}</p>` +
        `${form}<p><a href="${escapeHtml(back)}">Cancel</a></p>`,
    ),
  );
}

/** Who a sealed form result belongs to: the signed-in user (of their organization), an app, or nobody. */
function whoSent(req: RestRequest): string {
  const id = req.identity;
  if (id.kind === "user") return `user:${id.portal.portalId}:${id.user.username}`;
  if (id.kind === "app") return `app:${id.app.clientId}`;
  return "anonymous";
}

/**
 * Post/redirect/get: where a browser is sent after an HTML form's POST, so that reloading the result never sends
 * the form again. A started job's own page (Operation.seeOther), else the page itself sealed into a GET of the
 * same path (shared/http/form-results.ts). Undefined (the page is answered as it is) over plain HTTP or without
 * the CSRF cookie a form's browser holds, for a page of its own rules (scripts, OAuth redirects), or for a page
 * too large for an address.
 */
async function formResultRedirect(
  op: Operation,
  req: RestRequest,
  data: object,
  html: string | HtmlPage,
): Promise<string | undefined> {
  if (req.method !== "POST" || op.answersPostInPlace || !req.https) return undefined;
  const cookie = formCookie(req.event);
  if (!cookie) return undefined;
  const there = op.seeOther?.(data, req);
  if (there) return there;
  if (typeof html !== "string" && (html.formActions.length > 0 || html.scripts === true)) return undefined;
  const ticket = await sealFormResult(typeof html === "string" ? html : html.body, cookie, req.path, whoSent(req));
  return ticket ? `${req.path}?${new URLSearchParams({ f: "html", [FORM_RESULT]: ticket })}` : undefined;
}

/**
 * What every answer carries besides its body: the handler's extra headers and the pipeline's cookies, set
 * before the handler's own, so a handler's new sign-in cookie is never followed by the stale one's clearing.
 */
function finish(
  response: APIGatewayProxyStructuredResultV2,
  s: Partial<Normalized> & { request?: RestRequest },
  op: Operation,
) {
  const extra = { ...(op.openCors ? { "access-control-allow-origin": "*" } : {}), ...s.request?.responseHeaders };
  if (Object.keys(extra).length > 0) response.headers = { ...response.headers, ...extra };
  const own = response.cookies ?? [];
  const signsIn = own.some((c) => c.startsWith(`${AUTH_COOKIE}=`));
  const pipeline = (s.cookies ?? []).filter((c) => !(signsIn && c === CLEARED_AUTH_COOKIE));
  if (pipeline.length > 0 || own.length > 0) response.cookies = [...pipeline, ...own];
}

const PAYLOAD_ROOM = LAMBDA_PAYLOAD_BYTES - 64 * 1024;

/**
 * Whether a rendered answer could pass Lambda's payload limit: a character of the body takes at most 6 bytes once
 * JSON-escaped (a control character or a lone surrogate becomes `\uXXXX`), so only an answer whose body could come
 * near the limit is serialised to be measured exactly (most never are).
 */
function mayExceedPayload(response: APIGatewayProxyStructuredResultV2): boolean {
  return 6 * (response.body?.length ?? 0) + 16 * 1024 > PAYLOAD_ROOM;
}

/** Renders the handler's data in the requested format. */
export const respond = (op: Operation): RestMiddleware => ({
  after: async (request) => {
    const s = state(request);
    const req = s.request as RestRequest;
    const answer = request.response as unknown as object;
    const data = answer instanceof Rendered ? answer.data : answer;
    if (data instanceof ShownPage) request.response = renderHtml(data.html, req.https);
    else if (s.showForm) request.response = formPage(op, req, data);
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
        s.rendering as Rendering,
        answer instanceof Rendered ? answer.json : undefined,
      );
    finish(request.response, s, op);
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

export type Compute = (req: RestRequest) => Promise<object>;

/** A REST handler: the operation's rules plus its compute step, wrapped in the shared stack. */
export function restHandler(op: Operation, compute: Compute) {
  // Read and validated at cold start (module load), so a misconfigured function fails before serving.
  config();
  // The early timeout is beforeTimeout's (one interval for all requests), not middy's timer per request.
  const chain = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, RestContext>({
    timeoutEarlyInMillis: 0,
  })
    .use(accessLog(op))
    .use(errorEnvelope(op))
    .use(normalize(op))
    .use(caller(op))
    .use(respond(op))
    .handler((_event, context) => beforeTimeout(run(context), context));
  async function run(context: RestContext): Promise<APIGatewayProxyStructuredResultV2> {
    const req = context.mapgate?.request;
    if (!req) throw new Error("pipeline state missing: caller() did not run");
    const sealed = req.method === "GET" && req.format === "html" ? req.params.get(FORM_RESULT) : undefined;
    if (sealed !== undefined) {
      // The page a form's POST produced (post/redirect/get): shown again, never run again.
      const html = await openFormResult(sealed, formCookie(req.event), req.path, whoSent(req));
      if (html === undefined) {
        throw badRequest("This result is no longer shown.", [
          "A form's result is shown for 10 minutes, in the browser that sent the form. Nothing was sent again.",
        ]);
      }
      return new ShownPage(html) as unknown as APIGatewayProxyStructuredResultV2;
    }
    if (
      op.confirm &&
      req.method === "POST" &&
      req.params.get(CSRF_FIELD) !== undefined &&
      req.params.get(CONFIRM) !== "true"
    ) {
      return confirmationPage(op, req) as unknown as APIGatewayProxyStructuredResultV2;
    }
    if (context.mapgate?.showForm) {
      // A form is shown to anyone (it runs nothing); whoever may not read the starting values gets it empty.
      const initial = op.formValues
        ? await op.formValues(req).catch((err: unknown) => {
            if (err instanceof ApiError) return {};
            throw err;
          })
        : {};
      const fields = op.formFields
        ? await op.formFields(req).catch((err: unknown) => {
            if (err instanceof ApiError) return undefined;
            throw err;
          })
        : undefined;
      return { ...initial, [FORM_FIELDS]: fields } as unknown as APIGatewayProxyStructuredResultV2;
    }
    // The handler's data travels to respond() as the response; respond() replaces it with the rendering.
    return (await compute(req)) as unknown as APIGatewayProxyStructuredResultV2;
  }
  // Every line logged while the request runs (in shared code too) carries its request id.
  return (event: APIGatewayProxyEventV2, context: RestContext): Promise<APIGatewayProxyStructuredResultV2> =>
    inRequest(event.requestContext?.requestId, () => chain(event, context));
}
