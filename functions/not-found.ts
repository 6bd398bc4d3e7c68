// Every request no declared route matches ($default on API Gateway): the error envelope, not a bare 404 — except
// the short addresses people type, sent where they lead: `/portal` and `/portal/home` to the home page,
// `/<server>` and `/<server>/rest` to that server's REST services directory, `/viewer` to the map viewer's page.
// Below a hosted server's SOAP endpoint (/<server>/services/…, where the SOAP catalog's service URLs point), a
// SOAP 1.1 fault instead, naming what is answered over SOAP here (the catalog) and where the service is served.
import type { APIGatewayProxyEventV2, Context } from "aws-lambda";
import { nothingServed } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";
import { parseServicePath } from "#shared/serving/service-path.ts";
import { OPERATIONS } from "#shared/soap/catalog-xml.ts";
import { ClientFault } from "#shared/soap/envelope.ts";
import { type SoapRequest, soapHandler } from "#shared/soap/pipeline.ts";
import { hostedServer, serverUrl } from "#shared/stores/servers.ts";
import { VIEWER_PATH } from "#shared/viewer-links.ts";

const PORTAL_HOME = /^\/portal(\/home)?\/?$/;
const SERVER_HOME = /^\/([^/]+)(\/rest)?\/?$/;

const rest = restHandler({ name: "Not Found" }, async (req) => {
  const path = req.event.rawPath;
  if (req.method === "GET" && PORTAL_HOME.test(path)) return new Redirect("/");
  if (req.method === "GET" && /^\/viewer\/?$/.test(path)) {
    const query = req.event.rawQueryString;
    return new Redirect(`${VIEWER_PATH}${query ? `?${query}` : ""}`);
  }
  const name = req.method === "GET" ? SERVER_HOME.exec(path)?.[1] : undefined;
  const server = name ? await hostedServer(name) : undefined;
  if (server) return new Redirect(`/${encodeURIComponent(server.name)}/rest/services`);
  throw nothingServed(req.method, path);
});

/** A path below a server's SOAP endpoint: the server's name and what follows `services/`. */
const SOAP_PATH = /^\/([A-Za-z][A-Za-z0-9_-]{0,63})\/services\/(.{1,2048})$/;

/** The same fault for every request, whether or not such a service exists (its existence is not told). */
function onlyTheCatalog(req: SoapRequest): never {
  const base = serverUrl(req.server, req.origin);
  const parsed = parseServicePath(SOAP_PATH.exec(req.event.rawPath)?.[2] ?? "");
  const where =
    typeof parsed === "string"
      ? `Services are served over REST: ${base}/rest/services`
      : `This ${parsed.type} is served over REST: ${base}/rest/services/${parsed.folder ? `${parsed.folder}/` : ""}${parsed.name}/${parsed.type}`;
  throw new ClientFault(
    `This server answers SOAP at its Catalog only: ${base}/services (WSDL at ${base}/services?wsdl; operations ${OPERATIONS.join(", ")}). ${where}`,
  );
}

const soap = soapHandler({
  name: "SOAP Service",
  wsdlForEveryGet: true,
  wsdl: onlyTheCatalog,
  call: async (req) => onlyTheCatalog(req),
});

export const handler = (event: APIGatewayProxyEventV2, context: Context) => {
  const server = SOAP_PATH.exec(event.rawPath)?.[1];
  return server
    ? soap({ ...event, pathParameters: { ...event.pathParameters, server } }, context)
    : rest(event, context);
};
