// Output formats are handled once, here: every REST answer and every error leaves through render().
import { createHash } from "node:crypto";
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { OAuthError } from "#shared/errors.ts";
import { contentSecurityPolicy } from "#shared/http/html.ts";

export const FORMATS = ["html", "json", "pjson"] as const;
export type Format = (typeof FORMATS)[number];

/** What JSONP accepts as a callback name: a dotted JavaScript identifier, nothing that could close the call. */
export const CALLBACK = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/;

export interface Rendering {
  readonly format: Format;
  readonly callback?: string | undefined;
  readonly https: boolean;
}

const BASE_HEADERS = {
  "cache-control": "no-store",
  "x-content-type-options": "nosniff",
  "referrer-policy": "same-origin",
};

function headers(contentType: string, https: boolean): Record<string, string> {
  return {
    ...BASE_HEADERS,
    "content-type": contentType,
    ...(https ? { "strict-transport-security": "max-age=31536000" } : {}),
  };
}

/** An answer without a body (a CORS preflight's): the headers every answer carries, no content type. */
export function renderNoContent(https: boolean): APIGatewayProxyStructuredResultV2 {
  const { "content-type": _none, ...rest } = headers("text/plain", https);
  return { statusCode: 204, headers: rest, body: "" };
}

/**
 * An answer kept whole by its handler (a listing per catalog version and viewer) with its JSON text, so that a
 * json or JSONP answer is not serialised again on every request; pjson and html render `data` as usual.
 */
export class Rendered {
  readonly data: object;
  readonly json: string;

  constructor(data: object) {
    this.data = data;
    this.json = JSON.stringify(data);
  }
}

export function renderJson(data: unknown, how: Rendering, text?: string): APIGatewayProxyStructuredResultV2 {
  if (how.format === "pjson") {
    return {
      statusCode: 200,
      headers: headers("text/plain; charset=utf-8", how.https),
      body: JSON.stringify(data, null, 2),
    };
  }
  const json = text ?? JSON.stringify(data);
  if (how.callback) {
    // The leading comment keeps the first bytes out of the attacker's control (content-sniffing attacks).
    return {
      statusCode: 200,
      headers: headers("application/javascript; charset=utf-8", how.https),
      body: `/**/${how.callback}(${json});`,
    };
  }
  return { statusCode: 200, headers: headers("application/json; charset=utf-8", how.https), body: json };
}

export function renderHtml(
  html: string,
  https: boolean,
  formActions: readonly string[] = [],
  { scripts = false }: { scripts?: boolean } = {},
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: 200,
    headers: {
      ...headers("text/html; charset=utf-8", https),
      "content-security-policy": contentSecurityPolicy(formActions, { scripts }),
    },
    body: html,
  };
}

/** A handler's answer that sends the browser elsewhere (303: the next request is a GET), with cookies to set. */
export class Redirect {
  readonly location: string;
  readonly cookies: readonly string[];

  constructor(location: string, cookies: readonly string[] = []) {
    this.location = location;
    this.cookies = cookies;
  }
}

export function renderRedirect(r: Redirect, https: boolean): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: 303,
    headers: { ...headers("text/plain; charset=utf-8", https), location: r.location },
    ...(r.cookies.length > 0 ? { cookies: [...r.cookies] } : {}),
    body: "",
  };
}

/** RFC 6749 §5.2: `{error, error_description}` with the error's status; no details of our faults. */
export function renderOAuthError(err: OAuthError | undefined, https: boolean): APIGatewayProxyStructuredResultV2 {
  const body = err
    ? { error: err.error, error_description: err.message }
    : { error: "server_error", error_description: "An internal error occurred. It has been logged." };
  return {
    statusCode: err?.status ?? 500,
    headers: {
      ...headers("application/json; charset=utf-8", https),
      pragma: "no-cache",
      ...(err?.status === 401 ? { "www-authenticate": 'Basic realm="mapgate"' } : {}),
    },
    body: JSON.stringify(body),
  };
}

/**
 * Content served as stored (tiles, scene layer resources, styles, service JSON of published services): bytes
 * with their own type and caching headers. `status` 404 with no body is how a missing tile is answered.
 */
export class Content {
  readonly body: Buffer;
  readonly contentType: string;
  readonly status: 200 | 204 | 404;
  /** Content-Encoding of `body` as stored (gzip files passed through). */
  readonly encoding: string | undefined;
  /** `public` content may be kept by shared caches (a CDN); anything else only by the caller's browser. */
  readonly shared: boolean;
  /** Seconds a cache may keep it without asking again. */
  readonly maxAge: number;
  /**
   * A file a user uploaded, served under this name: as an attachment, in a sandbox without scripts, so nothing in
   * it runs as mapgate's own content (an HTML or SVG file would otherwise act with the reader's session).
   */
  readonly attachment: string | undefined;

  constructor(
    body: Buffer,
    contentType: string,
    options: {
      status?: 200 | 204 | 404;
      encoding?: string;
      shared?: boolean;
      maxAge?: number;
      attachment?: string;
    } = {},
  ) {
    this.body = body;
    this.contentType = contentType;
    this.status = options.status ?? 200;
    this.encoding = options.encoding;
    this.shared = options.shared ?? false;
    this.maxAge = options.maxAge ?? 0;
    this.attachment = options.attachment;
  }
}

/**
 * `Content-Disposition: attachment` with the file's name (RFC 6266): an ASCII fallback, and the name itself
 * percent-encoded as UTF-8 (RFC 8187), so no character of it can end the header or add another.
 */
export function attachmentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, "_");
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/** Lambda's 6 MB response limit applies to the base64 text: the bytes must stay under three quarters of it. */
export const MAX_CONTENT_BYTES = Math.floor((6 * 1024 * 1024 * 3) / 4) - 64 * 1024;

/** The ETag of some bytes: a digest, so an unchanged resource keeps its tag across warm functions and engines. */
export function etagOf(body: Buffer, encoding: string | undefined): string {
  return `"${createHash("sha256")
    .update(body)
    .update(encoding ?? "")
    .digest("base64url")
    .slice(0, 27)}"`;
}

function matches(ifNoneMatch: string | undefined, etag: string): boolean {
  if (!ifNoneMatch) return false;
  if (ifNoneMatch.trim() === "*") return true;
  // Linear: one split; weak validators compare equal for GET (RFC 9110 §13.1.2).
  return ifNoneMatch.split(",").some((t) => t.trim().replace(/^W\//, "") === etag);
}

export function renderContent(
  c: Content,
  https: boolean,
  ifNoneMatch: string | undefined,
  { shareable = true }: { shareable?: boolean } = {},
): APIGatewayProxyStructuredResultV2 {
  const base: Record<string, string> = {
    "x-content-type-options": "nosniff",
    // No CORS header here: finish() gives every answer kind the one the organization's allowedOrigins decide.
    ...(https ? { "strict-transport-security": "max-age=31536000" } : {}),
  };
  if (c.status !== 200) {
    return { statusCode: c.status, headers: { ...base, "cache-control": "no-cache" }, body: "" };
  }
  const etag = etagOf(c.body, c.encoding);
  const headers: Record<string, string> = {
    ...base,
    "content-type": c.contentType,
    etag,
    "cache-control": `${c.shared && shareable ? "public" : "private"}, max-age=${c.maxAge}`,
    ...(c.encoding ? { "content-encoding": c.encoding, vary: "Accept-Encoding" } : {}),
    ...(c.attachment !== undefined
      ? {
          "content-disposition": attachmentDisposition(c.attachment),
          "content-security-policy": "sandbox; default-src 'none'",
        }
      : {}),
  };
  if (matches(ifNoneMatch, etag)) return { statusCode: 304, headers, body: "" };
  return { statusCode: 200, headers, body: c.body.toString("base64"), isBase64Encoded: true };
}
