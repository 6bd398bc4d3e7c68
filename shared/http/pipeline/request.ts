// What a REST operation declares (its rules) and what its compute step is given (the request as the pipeline
// resolved it). Types only: every middleware and every handler reads them, none runs anything.
import type { FormField, HtmlPage } from "#shared/http/html.ts";
import type { Params } from "#shared/http/params.ts";
import type { Format } from "#shared/http/render.ts";
import type { ExtraRead, Identity } from "#shared/auth/identity.ts";
import type { Portal } from "#shared/stores/portals.ts";
import type { Server } from "#shared/stores/servers.ts";
import type { APIGatewayProxyEventV2 } from "aws-lambda";

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
  /** The refusal of a body over the limit, where the operation says more than the 413 (addPart: the part sizes taken). */
  readonly bodyTooLarge?: (limit: number, got: number) => Error;
  /**
   * The multipart file fields the operation reads (addItem's `file`); a file under any other name, or sent to an
   * operation declaring none, is refused before anything else runs.
   */
  readonly files?: readonly string[];
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
   * Services and their content, which map clients on other origins read with a token in the URL or a header:
   * `Access-Control-Allow-Origin: *` to a request without `Origin` (tools); to a browser page, what every answer
   * gives, the allowed origin echoed (shared/http/cors.ts).
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

export type Compute = (req: RestRequest) => Promise<object>;
