// The API Gateway event an invoked operation becomes: the route it names, its path filled from the event's
// params (the rest sent as the form body), as API Gateway would deliver a POST of that path.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { invokedRoute, ROUTES, routeKeys } from "#shared/system.ts";
import { config } from "#shared/config.ts";
import { ApiError } from "#shared/errors.ts";
import { fillTemplate } from "#shared/http/router.ts";
import type { InvokedEvent } from "#shared/invocation/event.ts";

/**
 * The route's path with its parameters filled: `portalId` from the event, the others taken out of `params`; a
 * greedy `{path+}` takes the operation's own sub-path, filled the same way.
 */
function routeRequest(e: InvokedEvent) {
  const { route: id, path: subPath } = invokedRoute(e.operation);
  const route = ROUTES.find((r) => r.id === id);
  if (!route) throw new Error(`no route for ${e.operation}`);
  const params = new Map(e.params);
  const pathParameters: Record<string, string> = {};
  const missing: string[] = [];
  const fill = (template: string) =>
    fillTemplate(
      template,
      (name) => (name === "portalId" ? e.portalId : params.get(name)),
      (name, value) => {
        params.delete(name);
        if (!value) missing.push(`'params.${name}' must be specified.`);
        pathParameters[name] = value ?? "";
      },
    );
  const greedy = subPath === undefined ? undefined : fill(subPath);
  if (greedy !== undefined) pathParameters.path = decodeURIComponent(greedy);
  const path = fill(route.path).replace("{path+}", greedy ?? "");
  if (missing.length > 0) throw new ApiError(400, "Invalid invocation.", missing);
  return { path, pathParameters, params, routeKey: routeKeys(route)[0] ?? `POST ${route.path}` };
}

/** The event API Gateway would deliver for the operation: a POST of its route's path, its params the form body. */
export function apiEvent(e: InvokedEvent, requestId: string): APIGatewayProxyEventV2 {
  // The route key is the route's template, as API Gateway sets it (the metrics name the route by it).
  const { path, pathParameters, params, routeKey } = routeRequest(e);
  const origin = new URL(config().publicOrigin ?? "https://localhost");
  const body = new URLSearchParams([...params, ["f", "json"]]).toString();
  return {
    version: "2.0",
    routeKey,
    rawPath: path,
    rawQueryString: "",
    headers: { host: origin.host, "content-type": "application/x-www-form-urlencoded", "x-forwarded-proto": "https" },
    requestContext: {
      accountId: "-",
      apiId: "-",
      domainName: origin.host,
      domainPrefix: origin.hostname.split(".")[0] ?? "",
      http: { method: "POST", path, protocol: "HTTP/1.1", sourceIp: "0.0.0.0", userAgent: "mapgate-invoke" },
      requestId,
      routeKey,
      stage: "$default",
      time: new Date().toUTCString(),
      timeEpoch: Date.now(),
    },
    pathParameters,
    body,
    isBase64Encoded: false,
  };
}
