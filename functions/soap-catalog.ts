// GET /<server>/services?wsdl and POST /<server>/services: the SOAP service Catalog of a hosted server.
import { catalogCall, catalogWsdl } from "#shared/soap/catalog.ts";
import { soapHandler } from "#shared/soap/pipeline.ts";

export const handler = soapHandler({ name: "Catalog", wsdl: catalogWsdl, call: catalogCall });
