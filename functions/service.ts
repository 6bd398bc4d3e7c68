// GET|POST /<server>/rest/services/[<folder>/]<name>/<Type>[/…]: a published service at its URL — its JSON
// and its content, read by reference from the data store where its cache lies. Who may read it follows the
// service's access (shared/catalog.ts), the same rule as the directory and the SOAP catalog.
// POST /<server>/rest/admin/services/[<folder>/]<name>/FeatureServer/updateDefinition outside the Hosted folder: a
// by-reference service's capabilities, changed here because this function reaches its database.
import { catalogPrefetch } from "#shared/catalog.ts";
import { addressedServer } from "#shared/http/hosted-server.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { type FamilyOperation, routesHandler } from "#shared/http/router.ts";
import { defaultFormatOf, resourceOf, serveService, servicePage } from "#shared/serving/service.ts";
import { serviceDefinitionPage } from "#shared/http/definition-page.ts";
import { SERVICE_DEFINITION, SERVICE_PATH } from "#shared/system.ts";

const serviceDefinition: FamilyOperation = {
  op: {
    name: "Service Definition",
    postOnly: true,
    defaultFormat: "json",
    at: addressedServer,
    html: serviceDefinitionPage,
  },
  compute: async (req) => (await import("#shared/hosted/byref-define.ts")).byReferenceAdmin(req),
};

export const handler = routesHandler({
  [SERVICE_PATH]: restHandler(
    {
      name: "Service",
      resourceOf,
      html: servicePage,
      at: addressedServer,
      defaultFormat: defaultFormatOf,
      openCors: true,
      prefetch: catalogPrefetch,
      contentFormats: ["geojson", "pbf"],
    },
    serveService,
  ),
  [SERVICE_DEFINITION.inFolder]: serviceDefinition,
  [SERVICE_DEFINITION.atRoot]: serviceDefinition,
});
