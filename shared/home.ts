// The home page (`/`): what this site is, signing in, the portal's directory, each hosted server's REST services
// directory, and the services the caller may see with a "View" link to their map. Read from the caller's
// organization's servers and each server's catalog (cached per warm function, as every surface reads it).
import { catalogOf, visibleTo } from "#shared/catalog.ts";
import { escapeHtml, page } from "#shared/http/html.ts";
import { searchForm } from "#shared/item-pages.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { listPortalServers } from "#shared/stores/servers.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { VIEWABLE_TYPES, viewerHref } from "#shared/viewer-links.ts";

/** How many services the home page lists per server; the directory lists them all. */
export const HOME_SERVICES = 100;

interface HomeService {
  readonly name: string;
  readonly type: string;
  readonly url: string;
  /** Its map, for a service with content to draw (a cache or data); a service only listed has none. */
  readonly viewer?: string;
}

export interface Home {
  readonly name: string;
  readonly portal: { readonly name: string; readonly directory: string };
  readonly signedIn: string | null;
  readonly signIn: string;
  readonly servers: readonly {
    readonly name: string;
    readonly directory: string;
    readonly services: readonly HomeService[];
    readonly more: boolean;
  }[];
}

export async function home(req: RestRequest): Promise<Home> {
  const servers = (await listPortalServers(req.portal.portalId)).filter((s) => s.hosted);
  servers.sort((a, b) => a.name.localeCompare(b.name));
  const listed = await Promise.all(
    servers.map(async (server) => {
      const catalog = await catalogOf(server.serverId);
      const services: HomeService[] = [];
      let more = false;
      for (const s of catalog.services) {
        if (!visibleTo(req.identity, s)) continue;
        const name = s.folder ? `${s.folder}/${s.name}` : s.name;
        for (const type of [s.type, ...s.extensions.map((x) => x.type)]) {
          if (services.length >= HOME_SERVICES) {
            more = true;
            break;
          }
          const url = `/${server.name}/rest/services/${name}/${type}`;
          const drawn = (s.source !== undefined || s.view !== undefined) && VIEWABLE_TYPES.has(type);
          services.push({ name, type, url, ...(drawn ? { viewer: viewerHref(url) } : {}) });
        }
      }
      return { name: server.name, directory: `/${server.name}/rest/services`, services, more };
    }),
  );
  return {
    name: "mapgate",
    portal: { name: req.portal.name, directory: PORTAL_ROOT },
    signedIn: req.identity.kind === "user" ? req.identity.user.username : null,
    // Signing in takes HTTPS (the cookie is Secure): from a plain HTTP page, the link goes there.
    signIn: `${req.https ? "" : req.httpsOrigin}${PORTAL_ROOT}/oauth2/signin?redirect=${encodeURIComponent("/")}`,
    servers: listed,
  };
}

const link = (href: string, text: string) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;

export function homePage(data: object, req: RestRequest): string {
  const h = data as Home;
  const who = h.signedIn
    ? `<p>Signed in as <strong>${escapeHtml(h.signedIn)}</strong>. ${link(`${PORTAL_ROOT}/community/self?f=html`, "You")} · ${link(`${PORTAL_ROOT}/community/users/${encodeURIComponent(h.signedIn)}/update?f=html`, "My profile and password")}</p>`
    : `<p>${link(h.signIn, "Sign in")} to see and manage what your organization shares; public services are listed below without signing in.</p>` +
      (req.https
        ? ""
        : `<p class="muted">This page came over plain HTTP: signing in takes ${link(`${req.httpsOrigin}/`, "this site's HTTPS address")}.</p>`);
  const servers = h.servers
    .map((s) => {
      const rows = s.services
        .map(
          (x) =>
            `<tr><td>${link(`${x.url}?f=html`, x.name)}</td><td>${escapeHtml(x.type)}</td><td>` +
            (x.viewer ? link(x.viewer, "View") : '<span class="muted">(listed only)</span>') +
            "</td></tr>",
        )
        .join("");
      const table = rows
        ? `<table><tr><th>Service</th><th>Type</th><th>Map</th></tr>${rows}</table>`
        : '<p class="muted">No service you can see yet.</p>';
      const more = s.more ? `<p>${link(`${s.directory}?f=html`, "All services in the directory")}</p>` : "";
      return `<h3>Server ${escapeHtml(s.name)}</h3><p>${link(`${s.directory}?f=html`, "REST services directory")} · ${link(`/${s.name}/services?wsdl`, "SOAP catalog")}</p>${table}${more}`;
    })
    .join("");
  return page(
    "Home",
    `<h1>${escapeHtml(h.portal.name)}</h1>` +
      "<p>mapgate serves a GIS portal and its servers on the wire ArcGIS clients speak: sign in, publish services " +
      "from data stores, share them, and read them from ArcGIS clients, GDAL, QGIS or this site's own map viewer.</p>" +
      who +
      `<h2>Portal</h2>${searchForm()}<p>${link(`${h.portal.directory}?f=html`, "Portal directory")} (sharing REST API)</p>` +
      `<h2>Servers</h2>${servers || '<p class="muted">No hosted server yet.</p>'}` +
      `<p class="muted">${link("/health", "Health")}</p>`,
  );
}
