// GET /<server>/services?wsdl and POST /<server>/services: the SOAP service Catalog of a hosted server.
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
import { ClientFault } from "#shared/soap/envelope.ts";
import { type SoapRequest, soapHandler } from "#shared/soap/pipeline.ts";
import { serverUrl } from "#shared/stores/servers.ts";
import { type Catalog, catalogVersion, readCatalog, type Service } from "#shared/stores/services.ts";
import { generateTokenUrl } from "#shared/urls.ts";

const MESSAGE_VERSION: (typeof GIS_VERSIONS)[number] = "vendorGisVersion108";

// The catalog of each server, kept while its version stands (one small read per request checks it).
const catalogs = new Map<string, Catalog>();
async function catalogOf(serverId: string): Promise<Catalog> {
  const version = await catalogVersion(serverId);
  const cached = catalogs.get(serverId);
  if (cached && cached.version === version) return cached;
  const fresh = await readCatalog(serverId);
  const sorted: Catalog = {
    version: fresh.version,
    folders: [...fresh.folders].sort((a, b) => a.localeCompare(b)),
    services: [...fresh.services].sort(
      (a, b) => a.folder.localeCompare(b.folder) || a.name.localeCompare(b.name) || a.type.localeCompare(b.type),
    ),
  };
  catalogs.set(serverId, sorted);
  return sorted;
}

/** Public services for anyone the catalog admits; org services for members; private ones for owner and admins. */
function visible(req: SoapRequest, s: Service): boolean {
  if (s.access === "public") return true;
  if (req.identity.kind !== "user" || req.identity.user.portalId !== s.portalId) return false;
  return s.access === "org" || s.owner === req.identity.user.username || req.identity.user.role === "org_admin";
}

function describe(req: SoapRequest, services: readonly Service[]): Description[] {
  const base = `${serverUrl(req.server, req.origin)}/services`;
  const out: Description[] = [];
  for (const s of services) {
    if (!visible(req, s)) continue;
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

/** Whose view of the catalog an answer is: anonymous, an administrator of the portal, or one member. */
function viewer(req: SoapRequest): string {
  if (req.identity.kind !== "user") return "anonymous";
  return req.identity.user.role === "org_admin"
    ? `admin:${req.identity.user.portalId}`
    : `user:${req.identity.user.username}`;
}

// Finished answers, per catalog version, viewer, origin and question: a repeated question costs one version
// read. Bounded; entries of an older version are simply never asked for again and age out.
const answers = new Map<string, string>();
function remember(key: string, xml: string): string {
  if (answers.size >= 256) answers.delete(answers.keys().next().value as string);
  answers.set(key, xml);
  return xml;
}

async function listing(req: SoapRequest, name: OperationName, folder: string | undefined): Promise<string> {
  const { namespace } = config().soap;
  const catalog = await catalogOf(req.server.serverId);
  const key = [req.server.serverId, catalog.version, viewer(req), req.origin, name, folder ?? ""].join("\u0000");
  const known = answers.get(key);
  if (known) return known;
  if (name === "GetFolders") return remember(key, response(namespace, name, strings("FolderNames", catalog.folders)));
  if (folder === undefined)
    return remember(key, response(namespace, name, descriptions(describe(req, catalog.services))));
  const wanted = folder.trim().replace(/^\/+|\/+$/g, "");
  const match = wanted === "" ? "" : catalog.folders.find((f) => f.toLowerCase() === wanted.toLowerCase());
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

export const handler = soapHandler({
  name: "Catalog",
  wsdl: (req) => {
    const address = `${serverUrl(req.server, req.origin)}/services${req.token ? `?token=${encodeURIComponent(req.token)}` : ""}`;
    return wsdl(config().soap.namespace, address);
  },
  call: async (req, op) => {
    if (op.namespace !== config().soap.namespace) {
      throw new ClientFault(`Unknown namespace '${op.namespace.slice(0, 200)}' for operation ${op.name.slice(0, 64)}.`);
    }
    if (!(OPERATIONS as readonly string[]).includes(op.name))
      throw new ClientFault(`Unknown operation '${op.name.slice(0, 64)}'.`);
    return call(req, op.name as OperationName, op.fields);
  },
});
