// GET|POST …/portals/<self | id>/apps: the organization's registered applications (never their secrets).
import { escapeHtml, page, renderValue } from "#shared/http/html.ts";
import { requirePrivilege, restHandler } from "#shared/http/pipeline.ts";
import { APP_ADMIN_PRIVILEGE, appRegistrationAnswer } from "#shared/oauth/apps.ts";
import { listPortalApps } from "#shared/stores/apps.ts";

export const handler = restHandler(
  {
    name: "Applications",
    html: (data) => {
      const { apps } = data as { apps: ReturnType<typeof appRegistrationAnswer>[] };
      const rows = apps.map(
        (a) =>
          `<tr><td>${escapeHtml(a.name)}</td><td><code>${escapeHtml(a.client_id)}</code></td><td>${escapeHtml(a.appType)}</td><td>${renderValue(a.redirect_uris)}</td><td><a href="apps/${encodeURIComponent(a.client_id)}/unregister?f=html">Unregister</a></td></tr>`,
      );
      const table = apps.length
        ? `<table><tr><th>Name</th><th>Client id</th><th>Type</th><th>Redirect URIs</th><th></th></tr>${rows.join("")}</table>`
        : '<p class="muted">No applications are registered.</p>';
      return page(
        "Applications",
        `<h1>Applications</h1>${table}<p><a href="apps/register?f=html">Register an application</a></p>`,
      );
    },
  },
  async (req) => {
    const { portal } = requirePrivilege(req, APP_ADMIN_PRIVILEGE);
    const apps = (await listPortalApps(portal.portalId)).sort((a, b) => a.created - b.created);
    return { apps: apps.map((app) => appRegistrationAnswer(app, undefined)) };
  },
);
