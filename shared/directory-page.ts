// The HTML of the directory (…/sharing/rest): for the signed-in user, what this service offers them, each
// operation linked to its form; for anyone else, a way to sign in.
import { escapeHtml, page, renderForm } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { APP_ADMIN_PRIVILEGE } from "#shared/oauth/apps.ts";
import { DIRECTORY_PATH } from "#shared/oauth/session.ts";
import { BULK_PRIVILEGE, DESCRIBE_PRIVILEGE, PUBLISH_TYPES } from "#shared/publishing.ts";
import type { DataStore } from "#shared/stores/datastores.ts";

export interface Directory {
  readonly currentVersion: string;
  readonly user?: { readonly username: string; readonly role: string; readonly privileges: readonly string[] };
  readonly dataStores?: readonly Pick<DataStore, "datastoreId" | "title" | "kind" | "owner">[];
}

const a = (href: string, text: string) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`;
const list = (items: readonly string[]) => `<ul>${items.map((i) => `<li>${i}</li>`).join("")}</ul>`;

export function directoryPage(data: object, req: RestRequest): string {
  const d = data as Directory;
  const root = DIRECTORY_PATH;
  const portal = `${root}/portals/self`;
  const common = [
    a(`${root}/info?f=html`, "Info"),
    a(`${root}/generateToken?f=html`, "Generate Token"),
    a(`${portal}?f=html`, "Organization"),
  ];
  if (!d.user) {
    const signIn = a(`${root}/oauth2/signin?redirect=${encodeURIComponent(root)}`, "Sign in");
    return page(
      "Directory",
      `<h1>${escapeHtml(req.portal.name)}</h1><p>You are not signed in. ${signIn} to see what you can do.</p>${list(common)}`,
    );
  }
  const may = (p: string) => d.user?.role === "org_admin" || (d.user?.privileges.includes(p) ?? false);
  const account = [
    ...common,
    a(`${root}/community/self?f=html`, "My account"),
    ...(d.user
      ? [a(`${root}/community/users/${encodeURIComponent(d.user.username)}/update?f=html`, "My profile and password")]
      : []),
    a(`${portal}/servers?f=html`, "Servers"),
  ];
  const roles = [a(`${portal}/roles?f=html`, "Roles"), a(`${portal}/createRole?f=html`, "Create a role")];
  // Only what the user may run: publishing takes one of the publish privileges, managing a store its owner (or
  // an administrator) with the privilege to register stores.
  const publishes = Object.values(PUBLISH_TYPES).some((t) => may(t.privilege));
  const stores = (d.dataStores ?? []).map((s) => {
    const q = `datastoreId=${encodeURIComponent(s.datastoreId)}&f=html`;
    const manages = may(DESCRIBE_PRIVILEGE) && (d.user?.role === "org_admin" || s.owner === d.user?.username);
    const ops = [
      ...(may(DESCRIBE_PRIVILEGE) ? [a(`${portal}/datastores/describe?${q}&path=%2F&type=datastore`, "Describe")] : []),
      ...(publishes ? [a(`${portal}/datastores/publish?${q}`, "Publish a service")] : []),
      ...(may(BULK_PRIVILEGE) ? [a(`${portal}/datastores/allDatasets/publishLayers?${q}`, "Publish all layers")] : []),
      a(`${portal}/datastores/getLayers?${q}`, "Layers and datasets"),
      ...(manages
        ? [
            a(`${portal}/datastores/validate?${q}`, "Validate"),
            a(`${portal}/datastores/getServers?${q}`, "Servers"),
            a(`${portal}/datastores/addToServer?${q}`, "Add to a server"),
            a(`${portal}/datastores/refreshServer?${q}`, "Refresh on a server"),
            a(`${portal}/datastores/removeFromServer?${q}`, "Remove from a server"),
            a(`${portal}/datastores/allDatasets/deleteLayers?${q}`, "Delete all layers"),
          ]
        : []),
    ];
    return `${escapeHtml(s.title)} <span class="muted">(${escapeHtml(s.kind)})</span> · ${ops.join(" · ")}`;
  });
  const jobFields = [
    { name: "jobId", label: "Job id", required: true },
    { name: "key", label: "Job key (unless you are an administrator)" },
  ];
  const jobForm = renderForm(jobFields, new Map(), undefined, {
    action: root,
    method: "get",
    formats: false,
    submit: "Show job",
  });
  const signOut = renderForm([{ name: "redirect", type: "hidden" }], new Map([["redirect", root]]), req.csrf, {
    action: `${root}/oauth2/signout`,
    formats: false,
    submit: "Sign out",
  });
  const searchForm = renderForm([{ name: "q", label: "Search items" }], new Map(), undefined, {
    action: `${root}/search`,
    method: "get",
    submit: "Search",
  });
  const content = [
    a(`${root}/content/users/${encodeURIComponent(d.user.username)}?f=html`, "My content"),
    ...(d.user.role === "org_admin" ? [a(`${portal}/users?f=html`, "Users")] : []),
    a(`${root}/community/groups?f=html`, "Groups"),
    ...(may("portal:user:createGroup") ? [a(`${root}/community/createGroup?f=html`, "Create a group")] : []),
  ];
  const sections = [
    `<h2>Account and tokens</h2>${list(account)}`,
    `<h2>Content</h2>${list(content)}${searchForm}`,
    d.user.role === "org_admin" ? `<h2>Roles</h2>${list(roles)}` : "",
    `<h2>Data stores and publishing</h2>${stores.length ? list(stores) : '<p class="muted">No data stores.</p>'}${
      may(DESCRIBE_PRIVILEGE)
        ? list([
            a(
              `${root}/content/users/${encodeURIComponent(d.user.username)}/addItem?type=Data%20Store&f=html`,
              "Register a data store",
            ),
          ])
        : ""
    }`,
    `<h2>Jobs</h2>${jobForm}`,
    may(APP_ADMIN_PRIVILEGE)
      ? `<h2>Applications</h2>${list([a(`${portal}/apps?f=html`, "Applications"), a(`${portal}/apps/register?f=html`, "Register an application")])}`
      : "",
  ];
  const who = `<p>Signed in as <strong>${escapeHtml(d.user.username)}</strong> (${escapeHtml(d.user.role)}).</p>`;
  return page("Directory", `<h1>${escapeHtml(req.portal.name)}</h1>${who}${signOut}${sections.join("")}`);
}
