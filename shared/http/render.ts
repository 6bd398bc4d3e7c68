// Output formats are handled once, here: every REST answer and every error leaves through render().
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import type { OAuthError } from "#shared/http/errors.ts";
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

export function renderJson(data: unknown, how: Rendering): APIGatewayProxyStructuredResultV2 {
  if (how.format === "pjson") {
    return {
      statusCode: 200,
      headers: headers("text/plain; charset=utf-8", how.https),
      body: JSON.stringify(data, null, 2),
    };
  }
  const json = JSON.stringify(data);
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
): APIGatewayProxyStructuredResultV2 {
  return {
    statusCode: 200,
    headers: {
      ...headers("text/html; charset=utf-8", https),
      "content-security-policy": contentSecurityPolicy(formActions),
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
