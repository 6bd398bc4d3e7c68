// The HTML of a job: its progress in words, the services a publish job made, the contents a describe job found
// (each leading on to the next form), then the job as tables.
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import { serviceConfiguration } from "#shared/form-choices.ts";
import { escapeHtml, page, renderValue } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import type { Child } from "#shared/publishing.ts";
import { viewLink } from "#shared/viewer-links.ts";

/** The service type each kind of cache is published as (the first PUBLISH_TYPES entry that takes it). */
const PUBLISHED_AS: Readonly<Record<string, string>> = {
  sceneLayerCache: "SceneServer",
  tileCache: "MapServer",
  vectorTileCache: "VectorTileServer",
  imageCache: "ImageServer",
};

interface DescribeView {
  readonly definition?: { operation?: string; serverId?: string; datastoreId?: string };
  readonly result?: { children?: readonly Child[] };
}

/**
 * A finished describe's children, each a link to the describe form for the next level, and each cache a link to
 * the publish form with its serviceConfiguration filled in (forms, not actions: a link changes nothing).
 */
function describedChildren(data: object, req: RestRequest): string {
  const { definition, result } = data as DescribeView;
  if (definition?.operation !== "describe" || !Array.isArray(result?.children)) return "";
  const stores = `${PORTAL_ROOT}/portals/${encodeURIComponent(req.pathParameters.portalId ?? "self")}/datastores`;
  const serverId = definition.serverId ?? "";
  const rows = result.children.slice(0, 1000).map((c) => {
    const q = new URLSearchParams({ datastoreId: c.datastoreId, serverId, path: c.path, type: c.type, f: "html" });
    const describe = `<a href="${escapeHtml(`${stores}/describe?${q}`)}">Describe</a>`;
    const as = PUBLISHED_AS[c.type];
    const publish = as
      ? ` · <a href="${escapeHtml(
          `${stores}/publish?${new URLSearchParams({
            serverId,
            serviceConfiguration: serviceConfiguration(
              as,
              c.datastoreId,
              c.path,
              c.name.replace(/[^A-Za-z0-9_]/g, "_").slice(0, 120) || "Service",
            ),
            f: "html",
          })}`,
        )}">Publish as ${escapeHtml(as)}</a>`
      : "";
    return `<tr><td>${escapeHtml(c.displayName || c.name)}</td><td>${escapeHtml(c.type)}</td><td><code>${escapeHtml(c.path)}</code></td><td>${describe}${publish}</td></tr>`;
  });
  return rows.length
    ? `<h2>Contents</h2><table><tr><th>Name</th><th>Type</th><th>Path</th><th>Next</th></tr>${rows.join("")}</table>`
    : '<h2>Contents</h2><p class="muted">Nothing here.</p>';
}

/** The job as tables; a finished publish job links each service to its item's page and to the service. */
export function jobPage(data: object, req: RestRequest): string {
  const services = ((data as { result?: { services?: unknown } }).result?.services ?? []) as {
    serviceItemId?: unknown;
    serviceUrl?: unknown;
  }[];
  const links = Array.isArray(services)
    ? services
        .filter((s) => typeof s.serviceItemId === "string")
        .map(
          (s) =>
            `<li><a href="${escapeHtml(itemPageHref(String(s.serviceItemId)))}">Item ${escapeHtml(String(s.serviceItemId))}</a>` +
            (typeof s.serviceUrl === "string"
              ? ` · <a href="${escapeHtml(`${s.serviceUrl}?f=html`)}">Service</a> · ${viewLink(s.serviceUrl)}`
              : "") +
            "</li>",
        )
        .join("")
    : "";
  return page(
    "Job",
    `<h1>Job</h1>${progress(data, req)}${warnings(data)}${links ? `<h2>Published</h2><ul>${links}</ul>` : ""}${describedChildren(data, req)}${renderValue(data)}` +
      `<p><a href="${PORTAL_ROOT}?f=html">Directory</a> · <a href="/">Home</a></p>`,
  );
}

/** The job's warnings: the datasets a publishLayers job did not publish, and why. */
function warnings(data: object): string {
  const messages = (data as { messages?: readonly { type?: unknown; message?: unknown }[] }).messages ?? [];
  const items = messages.filter((m) => m.type === "warning").map((m) => `<li>${escapeHtml(String(m.message))}</li>`);
  return items.length ? `<h2>Not published</h2><ul class="warnings">${items.join("")}</ul>` : "";
}

/**
 * What the job's state means for the person waiting on it, in words: a running job's page links to itself (its
 * result shows once it has ended), a failed one says why.
 */
function progress(data: object, req: RestRequest): string {
  const { status, statusMessage } = data as { status?: string; statusMessage?: string };
  if (status === "processing") {
    const again = `${req.path}?${new URLSearchParams({ ...(req.params.get("key") ? { key: req.params.get("key") ?? "" } : {}), f: "html" })}`;
    return `<p role="status">The job is still running: <a href="${escapeHtml(again)}">reload this page</a> to see how it ended.</p>`;
  }
  if (status === "failed")
    return `<p role="status" class="error">The job failed${statusMessage ? `: ${escapeHtml(statusMessage)}` : "."}</p>`;
  return "";
}
