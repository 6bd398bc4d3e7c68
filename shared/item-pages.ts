// The HTML of items: an item's page (what it is, who sees it, and, for whoever may manage it, the forms that
// share, update and delete it) and lists of items (a user's content, search results).
import type { RestRequest } from "#shared/http/pipeline.ts";
import { escapeHtml, page, renderDate, renderForm } from "#shared/http/html.ts";
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import { DATA_STORE_TYPE } from "#shared/stores/items.ts";
import { viewLink, webmapHref } from "#shared/viewer-links.ts";
import type { Service, ServiceEditing } from "#shared/stores/services.ts";
import { capabilitiesOf, editingEnabled } from "#shared/features/capabilities.ts";
import { anonymousEditing, editingSettings } from "#shared/features/ownership.ts";

type View = Record<string, unknown>;

/** What an item's page shows besides the item (a symbol key: never part of a JSON answer). */
export const ITEM_PAGE = Symbol("itemPage");
export interface ItemPageData {
  [ITEM_PAGE]?: {
    groups: View[];
    /** A hosted feature service's editing settings and where its form posts them (its admin updateDefinition). */
    editing?: { action: string; service: Service };
  };
}

/**
 * The editing form's marker: a request carrying it is the page's form, whose every setting is a checkbox (checked:
 * on; not sent: off), read by the admin wire's updateDefinition (shared/hosted/define.ts editingFormDefinition).
 */
export const EDITING_FORM = "editingForm";
/**
 * Sent by the editing form when it offered who may reach which features (always for a hosted service; for one published
 * by reference once its creator column is named), so boxes a page never showed are not read as turned off.
 */
export const EDITING_SETTINGS_OFFERED = "editingSettings";
/** The editing form's checkboxes: the edits the service allows, then who may edit which features. */
export const EDITING_BOXES = {
  capabilities: ["Create", "Update", "Delete"],
  settings: [
    ["ownershipAccessControl", "Editors can only reach features as set below (ownership-based access control)"],
    ["allowOthersToQuery", "Editors see features others made"],
    ["allowOthersToUpdate", "Editors update features others made"],
    ["allowOthersToDelete", "Editors delete features others made"],
    ["allowAnonymousToQuery", "Anonymous editors see features others made"],
    ["allowAnonymousToUpdate", "Anonymous editors update features"],
    ["allowAnonymousToDelete", "Anonymous editors delete features"],
    ["publicDataCollection", "Anyone, signed in or not, may edit (public data collection)"],
  ],
} as const satisfies {
  capabilities: readonly string[];
  settings: readonly (readonly [keyof ServiceEditing, string])[];
};

/**
 * The editing section of a feature service's page: its form, with the warning anonymous editing needs. A service
 * published by reference from a database is offered its edits, and who may reach which features once its table's
 * creator column is named (shared/hosted/admin-service.ts editingFormDefinition reads the same boxes).
 */
function editingSection(editing: { action: string; service: Service }, csrf: string): string {
  const { service } = editing;
  const source = service.source;
  const byReference = source !== undefined && "connection" in source;
  const ownership = !byReference || source.trackingFields?.creatorField !== undefined;
  const caps = capabilitiesOf(service);
  const settings = editingSettings(service);
  const offered = EDITING_BOXES.settings.filter(
    ([name]) => ownership && !(byReference && name === "publicDataCollection"),
  );
  const form = renderForm(
    [
      ...EDITING_BOXES.capabilities.map((c) => ({
        name: `capability:${c}`,
        label: `Allow ${c.toLowerCase()}`,
        type: "checkbox" as const,
      })),
      ...offered.map(([name, label]) => ({ name, label, type: "checkbox" as const })),
      { name: EDITING_FORM, type: "hidden" },
      ...(offered.length > 0 ? [{ name: EDITING_SETTINGS_OFFERED, type: "hidden" as const }] : []),
      { name: "f", type: "hidden" },
    ],
    new Map<string, string>([
      ...EDITING_BOXES.capabilities.map((c): [string, string] => [
        `capability:${c}`,
        caps.has(c.toLowerCase()) ? "true" : "",
      ]),
      ...offered.map(([name]): [string, string] => [name, settings[name] ? "true" : ""]),
      [EDITING_FORM, "true"],
      [EDITING_SETTINGS_OFFERED, "true"],
      ["f", "html"],
    ]),
    csrf,
    { action: editing.action, submit: "Save editing settings", formats: false },
  );
  const intro =
    "The owner and the organization's administrators may always edit; members it is shared with may make the edits allowed here.";
  if (byReference)
    return (
      `<h2>Editing</h2><p class="muted">${intro} The layer's rows are its database table's: turning an edit on first asks ` +
      `the database whether the data store's login may make it.` +
      (ownership
        ? ""
        : " Who may reach which features (ownership-based access control) needs the table's creator column, named on the admin wire (editFieldsInfo).") +
      `</p>${form}`
    );
  const anyone = anonymousEditing(service) && editingEnabled(service);
  const warning =
    `<p class="warning" role="note" id="public-editing-warning"><strong>Warning:</strong> with public data collection ` +
    `on and the layer shared with everyone, anyone on the internet may add, change or delete its data as the ` +
    `allowed edits above say, without signing in.` +
    (anyone
      ? " <strong>This is the case now.</strong>"
      : service.access === "public"
        ? ""
        : " It takes effect only while the layer is shared with everyone (public).") +
    `</p>`;
  return `<h2>Editing</h2><p class="muted">${intro}</p>${warning}${form}`;
}

/** The share form's checkbox of a group; `offeredGroups` lists the boxes shown, so an unchecked one unshares. */
export const GROUP_BOX = "group:";
export const OFFERED_GROUPS = "offeredGroups";

const text = (v: unknown) => escapeHtml(typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));

export function itemPage(data: object, req: RestRequest): string {
  const item = data as View;
  const id = String(item.id);
  const url = typeof item.url === "string" ? item.url : "";
  const tags = Array.isArray(item.tags) ? (item.tags as string[]) : [];
  const rows = [
    [
      "Type",
      // A web map opens in the viewer, which draws its layers as it lists them (those the reader may see).
      item.type === "Web Map"
        ? `${text(item.type)} · <a href="${escapeHtml(webmapHref(id))}">Open in viewer</a>`
        : text(item.type),
    ],
    ["Owner", text(item.owner)],
    ["Access", text(item.access)],
    [
      "URL",
      url
        ? `<a href="${escapeHtml(`${url}?f=html`)}">${escapeHtml(url)}</a> · ${viewLink(url)}`
        : '<span class="muted">(none)</span>',
    ],
    ["Tags", tags.length ? escapeHtml(tags.join(", ")) : '<span class="muted">(none)</span>'],
    ["Summary", text(item.snippet)],
    ["Description", text(item.description)],
    ["Id", `<code>${escapeHtml(id)}</code>`],
    ["Created", typeof item.created === "number" ? renderDate(item.created) : ""],
    ["Modified", typeof item.modified === "number" ? renderDate(item.modified) : ""],
  ]
    .map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`)
    .join("");
  let forms = "";
  if (item.itemControl && req.csrf) {
    const base = `${PORTAL_ROOT}/content/users/${encodeURIComponent(String(item.owner))}/items/${encodeURIComponent(id)}`;
    const remove = renderForm([], new Map(), req.csrf, { action: `${base}/delete`, submit: "Delete", formats: false });
    if (item.type === DATA_STORE_TYPE) {
      // A data store's item is never shared: its page leads to what its owner does with the store instead.
      const stores = `${PORTAL_ROOT}/portals/self/datastores`;
      const q = `datastoreId=${encodeURIComponent(id)}&f=html`;
      const links = [
        [`${PORTAL_ROOT}/content/items/${encodeURIComponent(id)}/data?f=html`, "Its JSON (the password never shown)"],
        [`${base}/update?f=html`, "Change its title or connection"],
        [`${stores}/describe?${q}&path=%2F&type=datastore`, "Describe"],
        [`${stores}/publish?${q}`, "Publish a service"],
        [`${stores}/validate?${q}`, "Validate"],
        [`${stores}/getServers?${q}`, "Servers"],
        [`${stores}/addToServer?${q}`, "Add to a server"],
        [`${stores}/refreshServer?${q}`, "Refresh on a server"],
        [`${stores}/removeFromServer?${q}`, "Remove from a server"],
        [`${stores}/allDatasets/deleteLayers?${q}`, "Delete its bulk-published layers"],
      ]
        .map(([href, label]) => `<li><a href="${escapeHtml(href ?? "")}">${escapeHtml(label ?? "")}</a></li>`)
        .join("");
      const note = "Deleting it removes the data store and its password, once nothing published from it remains.";
      return page(
        String(item.title),
        `<h1>${text(item.title)}</h1><table>${rows}</table><h2>Data store</h2><ul>${links}</ul>` +
          `<h2>Delete</h2><p class="muted">${note}</p>${remove}` +
          `<p><a href="${escapeHtml(`${PORTAL_ROOT}?f=html`)}">Directory</a></p>`,
      );
    }
    const access = String(item.access);
    const groups = (data as ItemPageData)[ITEM_PAGE]?.groups ?? [];
    const sharedWith = new Set(((item.sharing as { groups?: string[] } | undefined)?.groups ?? []).map(String));
    const share = renderForm(
      [
        { name: "everyone", label: "Everyone (public)", type: "checkbox" },
        { name: "org", label: "Organization", type: "checkbox" },
        ...groups.map((g) => ({
          name: `${GROUP_BOX}${String(g.id)}`,
          label: `Group: ${String(g.title)}`,
          type: "checkbox" as const,
        })),
        { name: "checkboxForm", type: "hidden" },
        { name: OFFERED_GROUPS, type: "hidden" },
      ],
      new Map([
        ["everyone", access === "public" ? "true" : ""],
        ["org", access === "org" || access === "public" ? "true" : ""],
        ...groups.map((g): [string, string] => [
          `${GROUP_BOX}${String(g.id)}`,
          sharedWith.has(String(g.id)) ? "true" : "",
        ]),
        ["checkboxForm", "true"],
        [OFFERED_GROUPS, groups.map((g) => String(g.id)).join(",")],
      ]),
      req.csrf,
      { action: `${base}/share`, submit: "Share", formats: false },
    );
    const unshare = renderForm(
      [
        { name: "everyone", type: "hidden" },
        { name: "org", type: "hidden" },
      ],
      new Map([
        ["everyone", "true"],
        ["org", "true"],
      ]),
      req.csrf,
      { action: `${base}/unshare`, submit: "Make private", formats: false },
    );
    const editing = (data as ItemPageData)[ITEM_PAGE]?.editing;
    forms =
      `<h2>Share</h2>${share}${unshare}` +
      (editing ? editingSection(editing, req.csrf) : "") +
      `<p><a href="${escapeHtml(`${base}/update?f=html`)}">Edit title, tags, summary and description</a></p>` +
      `<h2>Delete</h2><p class="muted">Deleting a service's item unpublishes the service.</p>${remove}`;
  }
  return page(
    String(item.title),
    `<h1>${text(item.title)}</h1><table>${rows}</table>${forms}` +
      `<p><a href="${escapeHtml(`${PORTAL_ROOT}?f=html`)}">Directory</a></p>`,
  );
}

/** A list of items (a user's content, search results), each linking to its page. */
/**
 * The portal's search box: a GET form to `search` answering its page (f=html), `query` filled in; the search
 * grammar is the sharing REST one (words, "a phrase", type:"Web Map", owner:…).
 */
export function searchForm(query = ""): string {
  return (
    `<form role="search" method="get" action="${escapeHtml(`${PORTAL_ROOT}/search`)}">` +
    `<label for="search-q">Search items</label> <input id="search-q" type="search" name="q" maxlength="2048" value="${escapeHtml(query)}">` +
    '<input type="hidden" name="f" value="html"> <button type="submit">Search</button></form>'
  );
}

export function itemsPage(title: string, items: readonly View[], nextHref: string | undefined, before = ""): string {
  const rows = items
    .map(
      (i) =>
        `<tr><td><a href="${escapeHtml(itemPageHref(String(i.id)))}">${text(i.title)}</a></td><td>${text(i.type)}</td><td>${text(i.owner)}</td><td>${text(i.access)}</td></tr>`,
    )
    .join("");
  const table = rows
    ? `<table><tr><th>Title</th><th>Type</th><th>Owner</th><th>Access</th></tr>${rows}</table>`
    : '<p class="muted">No items.</p>';
  const more = nextHref ? `<p><a href="${escapeHtml(nextHref)}">Next page</a></p>` : "";
  return page(title, `<h1>${escapeHtml(title)}</h1>${before}${table}${more}`);
}
