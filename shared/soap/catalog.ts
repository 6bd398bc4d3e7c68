// The SOAP service Catalog of a hosted server (GET /<server>/services?wsdl, POST /<server>/services): its
// operations, and its listings cached per catalog version, viewer, origin and question.
import { catalogOf, findFolder, viewerKey, visibleTo } from "#shared/catalog.ts";
import { config } from "#shared/config.ts";
import {
  type Description,
  descriptions,
  GIS_VERSIONS,
  OPERATIONS,
  type OperationName,
  response,
  strings,
  wsdl,
} from "#shared/soap/catalog-xml.ts";
import { ClientFault, type Operation } from "#shared/soap/envelope.ts";
import type { SoapRequest } from "#shared/soap/pipeline.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import type { Service } from "#shared/stores/services.ts";
import { generateTokenUrl } from "#shared/urls.ts";

const MESSAGE_VERSION: (typeof GIS_VERSIONS)[number] = "vendorGisVersion108";

function describe(req: SoapRequest, services: readonly Service[]): Description[] {
  const base = `${serverUrl(req.server, req.origin)}/services`;
  const out: Description[] = [];
  for (const s of services) {
    if (!visibleTo(req.identity, s)) continue;
    const name = s.folder ? `${s.folder}/${s.name}` : s.name;
    out.push({
      name,
      type: s.type,
      url: `${base}/${name}/${s.type}`,
      parentType: "",
      capabilities: s.capabilities,
      description: s.description,
    });
    for (const x of s.extensions) {
      out.push({
        name,
        type: x.type,
        url: `${base}/${name}/${x.type}`,
        parentType: s.type,
        capabilities: x.capabilities,
        description: s.description,
      });
    }
  }
  return out;
}

// Finished answers, per catalog version, viewer, origin and question: a repeated question costs the request's
// one read (caller and catalog version together). Bounded; entries of an older version are simply never asked
// for again and age out.
const answers = new Map<string, string>();
function remember(key: string, xml: string): string {
  if (answers.size >= 256) answers.delete(answers.keys().next().value as string);
  answers.set(key, xml);
  return xml;
}

async function listing(req: SoapRequest, name: OperationName, folder: string | undefined): Promise<string> {
  const { namespace } = config().soap;
  const catalog = await catalogOf(req.server.serverId, req.catalogVersion);
  const key = [req.server.serverId, catalog.version, viewerKey(req.identity), req.origin, name, folder ?? ""].join(
    "\u0000",
  );
  const known = answers.get(key);
  if (known) return known;
  if (name === "GetFolders") return remember(key, response(namespace, name, strings("FolderNames", catalog.folders)));
  if (folder === undefined)
    return remember(key, response(namespace, name, descriptions(describe(req, catalog.services))));
  const wanted = folder.trim().replace(/^\/+|\/+$/g, "");
  const match = wanted === "" ? "" : findFolder(catalog, wanted);
  if (match === undefined) throw new ClientFault(`Folder '${folder.slice(0, 128)}' does not exist.`);
  return remember(
    key,
    response(
      namespace,
      name,
      descriptions(
        describe(
          req,
          catalog.services.filter((s) => s.folder.toLowerCase() === match.toLowerCase()),
        ),
      ),
    ),
  );
}

async function call(req: SoapRequest, name: OperationName, fields: ReadonlyMap<string, string>): Promise<string> {
  const { namespace, messageFormat } = config().soap;
  switch (name) {
    case "GetMessageVersion":
      return response(namespace, name, `<MessageVersion>${MESSAGE_VERSION}</MessageVersion>`);
    case "GetMessageFormats":
      return response(namespace, name, `<MessageFormats>${messageFormat}</MessageFormats>`);
    case "GetTokenServiceURL":
      return response(namespace, name, `<TokenServiceURL>${generateTokenUrl(req.httpsOrigin)}</TokenServiceURL>`);
    case "RequiresTokens":
      return response(namespace, name, `<Result>${req.portal.requireTokens ? "true" : "false"}</Result>`);
    case "GetFolders":
    case "GetServiceDescriptions":
      return listing(req, name, undefined);
    case "GetServiceDescriptionsEx": {
      const folder = fields.get("FolderName");
      if (folder === undefined) {
        throw new ClientFault("GetServiceDescriptionsEx requires FolderName (empty for the root folder).");
      }
      return listing(req, name, folder);
    }
  }
}

/** The service description (WSDL), its address the one the request came to (with its token, if any). */
export function catalogWsdl(req: SoapRequest): string {
  const address = `${serverUrl(req.server, req.origin)}/services${req.token ? `?token=${encodeURIComponent(req.token)}` : ""}`;
  return wsdl(config().soap.namespace, address);
}

/** The answer to one operation of the catalog, in the catalog's namespace. */
export async function catalogCall(req: SoapRequest, op: Operation): Promise<string> {
  if (op.namespace !== config().soap.namespace) {
    throw new ClientFault(`Unknown namespace '${op.namespace.slice(0, 200)}' for operation ${op.name.slice(0, 64)}.`);
  }
  if (!(OPERATIONS as readonly string[]).includes(op.name))
    throw new ClientFault(`Unknown operation '${op.name.slice(0, 64)}'.`);
  return call(req, op.name as OperationName, op.fields);
}
