// GET|POST /<server>/rest/services/[<folder>/]<name>/<Type>[/…]: a published service at its URL — its JSON
// and its content, read by reference from the data store where its cache lies. Who may read it follows the
// service's access (shared/catalog.ts), the same rule as the directory and the SOAP catalog.
import { catalogPrefetch } from "#shared/catalog.ts";
import { addressedServer } from "#shared/http/hosted-server.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { defaultFormatOf, resourceOf, serveService, servicePage } from "#shared/serving/service.ts";

export const handler = restHandler(
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
);
