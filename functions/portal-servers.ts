// GET|POST …/sharing/rest/portals/<self | id>/servers: the organization's federated servers, so a client
// can find the serverURL for a server-token. Members of the organization only.
import { PORTAL_ROOT } from "#shared/urls.ts";
import { escapeHtml, page } from "#shared/http/html.ts";
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { listPortalServers, serverView } from "#shared/stores/servers.ts";

interface Listed {
  readonly name: string;
  readonly url: string;
  readonly adminUrl: string;
  readonly isHosted: boolean;
  readonly serverRole: string;
  readonly hosted: boolean;
}

/**
 * The page links only what answers: a hosted server's services directory, info and SOAP catalog (its `adminUrl`
 * is in the JSON for clients that read it, but no administrator API is served here); a server hosted elsewhere
 * by its own URL.
 */
function render(data: object): string {
  const servers = (data as { servers: Listed[] }).servers;
  const link = (href: string, text: string) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
  const rows = servers.map((s) => {
    const links = s.hosted
      ? [
          link(`${s.url}/rest/services?f=html`, "Services directory"),
          link(`${s.url}/rest/info?f=html`, "Server info"),
          link(`${s.url}/services?wsdl`, "SOAP catalog (WSDL)"),
        ].join(" · ")
      : `${link(s.url, s.url)} <span class="muted">(hosted elsewhere)</span>`;
    return `<tr><td>${escapeHtml(s.name)}</td><td>${escapeHtml(s.serverRole)}</td><td>${links}</td><td>${escapeHtml(s.url)}</td></tr>`;
  });
  const table = servers.length
    ? `<table><tr><th>Name</th><th>Role</th><th>Open</th><th>URL (serverURL for a server-token)</th></tr>${rows.join("")}</table>`
    : '<p class="muted">No server is registered with this organization.</p>';
  return page(
    "Servers",
    `<h1>Servers</h1>${table}<p class="muted">No administrator API is served here: <code>adminUrl</code> in the JSON names where ArcGIS would have it.</p><p><a href="?f=pjson">JSON</a> · <a href="${PORTAL_ROOT}?f=html">Portal directory</a></p>`,
  );
}

export const handler = restHandler({ name: "Servers", html: render }, async (req) => {
  const { portal } = requireMember(req);
  const servers = await listPortalServers(portal.portalId);
  return {
    servers: servers.map((s) => ({
      ...serverView(s, req.httpsOrigin),
      // For the page only (the JSON is as ArcGIS answers it).
      ...(req.format === "html" ? { hosted: s.hosted } : {}),
    })),
  };
});
