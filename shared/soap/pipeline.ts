// The middy stack of SOAP endpoints: normalize (server, caller, body) → validate (transport, tokens,
// operation) → compute → respond. Errors leave as SOAP 1.1 Faults with HTTP 500: soap:Client for the
// caller's mistakes, soap:Server (with no internal detail) for ours.
import middy, { type MiddlewareObj } from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { requestOrigins } from "#shared/urls.ts";
import { ANONYMOUS, anonymousView, findCredential, type Identity, resolveIdentityWith } from "#shared/auth/identity.ts";
import { config } from "#shared/config.ts";
import { beforeTimeout } from "#shared/deadlines.ts";
import { ApiError } from "#shared/errors.ts";
import { bodyBytes, Params } from "#shared/http/params.ts";
import { clientAddress } from "#shared/http/edge.ts";
import { inRequest, infoEnabled, logger } from "#shared/log.ts";
import { routeOf, requestMetrics } from "#shared/metrics.ts";
import { fault } from "#shared/soap/catalog-xml.ts";
import { ClientFault, type Operation, readOperation } from "#shared/soap/envelope.ts";
import type { Portal } from "#shared/stores/portals.ts";
import { hostedServer, type Server } from "#shared/stores/servers.ts";
import { catalogVersionKey } from "#shared/stores/service-keys.ts";
import { versionOf } from "#shared/stores/services.ts";

export interface SoapRequest {
  readonly event: APIGatewayProxyEventV2;
  readonly server: Server;
  readonly portal: Portal;
  readonly identity: Identity;
  readonly https: boolean;
  /** The origin the request arrived at: WSDL addresses and service URLs point back to it. */
  readonly origin: string;
  readonly httpsOrigin: string;
  /** The token from the query string, if any (kept so the served WSDL's address carries it). */
  readonly token: string | undefined;
  /** The server's catalog version, read with the caller in one BatchGetItem (0 before the first change). */
  readonly catalogVersion: number;
}

export type SoapResult =
  { readonly kind: "wsdl"; readonly xml: string } | { readonly kind: "response"; readonly xml: string };

export interface SoapService {
  readonly name: string;
  /** Whether every GET is answered as a WSDL request (an endpoint whose every answer is the same fault). */
  readonly wsdlForEveryGet?: boolean;
  wsdl(req: SoapRequest): string;
  call(req: SoapRequest, op: Operation): Promise<string>;
}

const XML = "text/xml; charset=utf-8";
const answer = (statusCode: number, body: string, contentType = XML): APIGatewayProxyStructuredResultV2 => ({
  statusCode,
  headers: { "content-type": contentType, "cache-control": "no-store", "x-content-type-options": "nosniff" },
  body,
});

const faults = (
  service: string,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context> => ({
  onError: (request) => {
    const err = request.error;
    const log = { requestId: request.event.requestContext.requestId, operation: service };
    if (err instanceof ClientFault) {
      logger.info("soap fault", { ...log, fault: "Client", reason: err.message });
      request.response = answer(500, fault("soap:Client", err.message));
    } else if (err instanceof ApiError && err.code < 500) {
      logger.info("soap fault", { ...log, fault: "Client", reason: err.message });
      request.response = answer(500, fault("soap:Client", err.message));
    } else {
      logger.error("internal error", { ...log, error: err instanceof Error ? err : new Error(String(err)) });
      request.response = answer(
        500,
        fault("soap:Server", "The server could not answer the request. The fault has been logged."),
      );
    }
  },
});

/** A SOAP answer's outcome class: every fault is HTTP 500, so the fault's own code says whose it was. */
function soapCode(response: APIGatewayProxyStructuredResultV2 | undefined): number {
  const status = response?.statusCode ?? 500;
  if (status === 500 && response?.body?.includes("<faultcode>soap:Client</faultcode>")) return 400;
  return status;
}

/** The request's metrics line, as the REST pipeline writes it (shared/metrics.ts), once the answer is known. */
const soapMetrics = (
  name: string,
): MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Error, Context> => {
  const started = new WeakMap<object, number>();
  const done = (request: {
    event: APIGatewayProxyEventV2;
    response?: APIGatewayProxyStructuredResultV2 | null | undefined;
  }) => {
    const ms = performance.now() - (started.get(request.event) ?? performance.now());
    requestMetrics({
      ...routeOf(request.event.routeKey, name),
      code: soapCode(request.response ?? undefined),
      ms: Math.round(ms * 10) / 10,
      bytes: Buffer.byteLength(request.response?.body ?? ""),
      requestId: request.event.requestContext.requestId,
    });
  };
  return {
    before: (request) => {
      started.set(request.event, performance.now());
    },
    after: done,
    onError: done,
  };
};

export function soapHandler(service: SoapService) {
  config();
  // The early timeout is beforeTimeout's (one interval for all requests), not middy's timer per request.
  const chain = middy<APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2>({ timeoutEarlyInMillis: 0 })
    .use(soapMetrics(service.name))
    .use(faults(service.name))
    .handler((event, context) => beforeTimeout(soapRequest(event), context));
  async function soapRequest(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
    const started = performance.now();
    const { origin, httpsOrigin, https } = requestOrigins(event);
    const search = new URLSearchParams(event.rawQueryString ?? "");
    const query = new Params(new Map(search));
    const method = event.requestContext.http.method.toUpperCase();
    const server = await hostedServer(event.pathParameters?.server ?? "");
    if (!server) return answer(404, fault("soap:Client", "No server is hosted here."));
    const wantsWsdl =
      method === "GET" && (service.wsdlForEveryGet || [...search.keys()].some((k) => k.toLowerCase() === "wsdl"));
    // A SOAP call's caller, from the token in the endpoint's query string only (no cookies: a SOAP call is
    // never a browser's). The WSDL is public: its token only travels into the address clients post to.
    // The caller (or, for an anonymous one, the server's organization) and the catalog version: one read.
    const version = catalogVersionKey(server.serverId);
    const resolved =
      method === "POST"
        ? await resolveIdentityWith(
            findCredential({ ...event, headers: {} }, query, false),
            {
              sourceIp: await clientAddress(event),
              referer: event.headers?.referer,
              at: { kind: "server", serverId: server.serverId, portalId: server.portalId },
            },
            { table: "services", key: version },
          )
        : { identity: ANONYMOUS as Identity };
    const identity = resolved.identity;
    // A verified token's organization is the server's (the audience check saw to it), read with the user.
    const anonymous =
      identity.kind === "anonymous"
        ? await anonymousView(server.portalId, { table: "services", key: version })
        : undefined;
    const portal = identity.kind === "anonymous" ? anonymous?.portal : identity.portal;
    if (!portal) throw new Error(`server ${server.serverId} belongs to missing portal ${server.portalId}`);
    const catalogVersion = versionOf(identity.kind === "anonymous" ? anonymous?.extra : resolved.extra);
    if (portal.allSSL && !https) throw new ClientFault("SSL Required");
    const req: SoapRequest = {
      event,
      server,
      portal,
      https,
      origin,
      httpsOrigin,
      token: query.get("token") || undefined,
      identity,
      catalogVersion,
    };
    let result: APIGatewayProxyStructuredResultV2;
    if (wantsWsdl) {
      result = answer(200, service.wsdl(req));
    } else if (method !== "POST") {
      result = answer(
        405,
        "Fetch the service description with ?wsdl and send SOAP 1.1 requests with POST.\n",
        "text/plain; charset=utf-8",
      );
    } else {
      const op = readOperation(bodyBytes(event));
      if (portal.requireTokens && identity.kind === "anonymous") throw new ClientFault("Token Required");
      result = answer(200, await service.call(req, op));
      if (infoEnabled())
        logger.info("request", {
          requestId: event.requestContext.requestId,
          operation: `${service.name}.${op.name}`,
          user: identity.kind === "user" ? identity.user.username : undefined,
          ms: Math.round(performance.now() - started),
        });
    }
    return result;
  }
  return (event: APIGatewayProxyEventV2, context: Context): Promise<APIGatewayProxyStructuredResultV2> =>
    inRequest(event.requestContext?.requestId, () => chain(event, context));
}
