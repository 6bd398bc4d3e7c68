// GET|POST /viewer/map?url=<a service's or layer's URL>: a map of it (tiles, a vector tile style, features, a
// scene's footprint) drawn in the browser by this site's own copy of maplibre-gl; f=json answers what the page
// draws. Whoever may see the service sees the map (the sign-in cookie works here too); anyone else reads why not.
// GET /viewer/<file>: the page's scripts and stylesheets (maplibre-gl's CSP build, its worker, the viewer's own),
// served from this site so an offline one works; public, kept by browsers for a day (the CDN caches only services).
import { noSuchResource } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { acceptsGzip } from "#shared/serving/read.ts";
import { isViewerAsset, viewerAsset } from "#shared/viewer/assets.ts";
import { VIEWER_PAGE } from "#shared/viewer-links.ts";
import { viewerConfig, viewerPage } from "#shared/viewer/page.ts";

export const handler = restHandler(
  {
    name: "Map Viewer",
    html: viewerPage,
    // A file's errors are JSON, not pages.
    defaultFormat: (path) => (path.endsWith(`/${VIEWER_PAGE}`) ? "html" : "json"),
  },
  async (req) => {
    const name = req.pathParameters.name ?? "";
    if (name === VIEWER_PAGE) return viewerConfig(req);
    if (!isViewerAsset(name)) throw noSuchResource([`The viewer has no file named ${name.slice(0, 64)}.`]);
    return viewerAsset(name, acceptsGzip(req.event.headers));
  },
);
