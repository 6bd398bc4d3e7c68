// Links to the map viewer ("View"), from every page that shows a service or a layer.
import { escapeHtml } from "#shared/http/html.ts";

/** The viewer's page, beside its files under /viewer/ (one route serves both); `url` names the service or layer. */
export const VIEWER_PAGE = "map";
export const VIEWER_PATH = `/viewer/${VIEWER_PAGE}`;

/** The path of a service's or layer's URL (absolute URLs keep their path only: the viewer reads this site). */
function pathOf(url: string): string {
  if (url.startsWith("/")) return url;
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** Where the map of a service or layer is, from its URL (absolute or a path). */
export const viewerHref = (serviceUrl: string) => `${VIEWER_PATH}?url=${encodeURIComponent(pathOf(serviceUrl))}`;

/** Where a Web Map item is opened in the viewer, by its id. */
export const webmapHref = (itemId: string) => `${VIEWER_PATH}?webmap=${encodeURIComponent(itemId)}`;

/** An HTML link to the viewer, for lists and tables. */
export const viewLink = (serviceUrl: string) => `<a href="${escapeHtml(viewerHref(serviceUrl))}">View</a>`;

/** The service types the viewer draws something of (one without a cache or data says so on the page). */
export const VIEWABLE_TYPES: ReadonlySet<string> = new Set([
  "MapServer",
  "ImageServer",
  "VectorTileServer",
  "FeatureServer",
  "SceneServer",
]);
