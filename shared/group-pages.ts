// The HTML of groups: the list (search results), one group's page (what it is, its members, its content, and
// the forms its members and managers use), linked from the directory.
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import { escapeHtml, page, renderForm } from "#shared/http/html.ts";
import type { Compute, RestRequest } from "#shared/http/pipeline.ts";
import { Redirect } from "#shared/http/render.ts";

type View = Record<string, unknown>;

const text = (v: unknown) => escapeHtml(typeof v === "string" ? v : v === null || v === undefined ? "" : String(v));
const community = `${PORTAL_ROOT}/community`;

/** Where a group's page is. */
export const groupPageHref = (groupId: string) => `${community}/groups/${encodeURIComponent(groupId)}?f=html`;

/** A list of groups, each linking to its page, with a link to the create form for signed-in callers. */
export function groupsPage(title: string, data: object, req: RestRequest): string {
  const results = ((data as View).results ?? []) as View[];
  const rows = results
    .map(
      (g) =>
        `<tr><td><a href="${escapeHtml(groupPageHref(String(g.id)))}">${text(g.title)}</a></td><td>${text(g.owner)}</td><td>${text(g.access)}</td></tr>`,
    )
    .join("");
  const table = rows
    ? `<table><tr><th>Title</th><th>Owner</th><th>Access</th></tr>${rows}</table>`
    : '<p class="muted">No groups.</p>';
  const next = Number((data as View).nextStart);
  const more =
    next > 0
      ? `<p><a href="${escapeHtml(`${req.path}?q=${encodeURIComponent(String((data as View).query ?? ""))}&start=${next}&f=html`)}">Next page</a></p>`
      : "";
  const create =
    req.identity.kind === "user"
      ? `<p><a href="${escapeHtml(`${community}/createGroup?f=html`)}">Create a group</a></p>`
      : "";
  const search = renderForm(
    [{ name: "q", label: "Search groups" }],
    new Map([["q", String((data as View).query ?? "")]]),
    undefined,
    { action: req.path, method: "get", submit: "Search" },
  );
  return page(title, `<h1>${escapeHtml(title)}</h1>${create}${search}${table}${more}`);
}

/** Join requests as a group's page shows them: the pending ones to its managers, the caller's own otherwise. */
export interface JoinRequests {
  readonly pending: boolean;
  readonly applications?: readonly string[];
}

/**
 * One group: its fields, members and items, and the forms the caller may use (join, or ask to join an
 * invitation-only group; leave; manage, with the pending join requests to accept or decline).
 */
export function groupPage(
  group: View,
  members: { owner: string; admins: string[]; users: string[] } | undefined,
  items: readonly View[],
  req: RestRequest,
  requests: JoinRequests = { pending: false },
): string {
  const id = String(group.id);
  const base = `${community}/groups/${encodeURIComponent(id)}`;
  const membership = ((group.userMembership ?? {}) as View).memberType as string | undefined;
  const rows = [
    ["Owner", text(group.owner)],
    ["Access", text(group.access)],
    ["Summary", text(group.snippet)],
    ["Description", text(group.description)],
    ["Tags", text(Array.isArray(group.tags) ? (group.tags as string[]).join(", ") : "")],
    ["Invitation only", text(group.isInvitationOnly)],
    ["View only", text(group.isViewOnly)],
    ["Your membership", text(membership ?? "none")],
    ["Id", `<code>${escapeHtml(id)}</code>`],
  ]
    .map(([k, v]) => `<tr><th>${k}</th><td>${v}</td></tr>`)
    .join("");
  const memberList = members
    ? `<h2>Members</h2><ul>${[
        `<li>${text(members.owner)} (owner)</li>`,
        ...members.admins.filter((a) => a !== members.owner).map((a) => `<li>${text(a)} (manager)</li>`),
        ...members.users.map((u) => `<li>${text(u)}</li>`),
      ].join("")}</ul>`
    : "";
  const itemRows = items
    .map(
      (i) =>
        `<tr><td><a href="${escapeHtml(itemPageHref(String(i.id)))}">${text(i.title)}</a></td><td>${text(i.type)}</td><td>${text(i.owner)}</td></tr>`,
    )
    .join("");
  const content = `<h2>Content</h2>${
    itemRows
      ? `<table><tr><th>Title</th><th>Type</th><th>Owner</th></tr>${itemRows}</table>`
      : '<p class="muted">No items.</p>'
  }`;
  let forms = "";
  if (req.csrf && req.identity.kind === "user") {
    const button = (op: string, label: string) =>
      renderForm([], new Map(), req.csrf, { action: `${base}/${op}`, submit: label, formats: false });
    if (membership && membership !== "none") {
      if (membership !== "owner") forms += button("leave", "Leave");
    } else if (requests.pending) forms += '<p class="muted">Your request to join is pending.</p>';
    else forms += group.isInvitationOnly === true ? button("createApplication", "Ask to join") : button("join", "Join");
    if (membership === "owner" || membership === "admin" || req.identity.user.role === "org_admin") {
      forms +=
        `<h2>Manage</h2>` +
        renderForm([{ name: "users", label: "Add users (comma-separated)", required: true }], new Map(), req.csrf, {
          action: `${base}/addUsers`,
          submit: "Add",
          formats: false,
        }) +
        `<p><a href="${escapeHtml(`${base}/update?f=html`)}">Edit the group</a></p>` +
        (requests.applications && requests.applications.length > 0
          ? `<h2>Join requests</h2><ul>${requests.applications
              .map((u) => {
                const at = `${base}/applications/${encodeURIComponent(u)}`;
                const answer = (op: string, label: string) =>
                  renderForm([], new Map(), req.csrf, { action: `${at}/${op}`, submit: label, formats: false });
                return `<li>${text(u)}${answer("accept", `Accept ${u}`)}${answer("decline", `Decline ${u}`)}</li>`;
              })
              .join("")}</ul>`
          : "") +
        button("delete", "Delete group");
    }
  }
  return page(
    String(group.title),
    `<h1>${text(group.title)}</h1><table>${rows}</table>${forms}${memberList}${content}` +
      `<p><a href="${escapeHtml(`${community}/groups?f=html`)}">Groups</a> · <a href="${escapeHtml(`${PORTAL_ROOT}?f=html`)}">Directory</a></p>`,
  );
}

/**
 * A form of a group's page (or the create form) answers a browser with the group's page, where the change shows
 * (a deleted group: the list of groups); clients asking for JSON get the operation's answer.
 */
export function thenPage(compute: Compute): Compute {
  return async (req) => {
    const out = await compute(req);
    if (req.format !== "html") return out;
    const created = (out as { group?: { id?: unknown } }).group?.id;
    const id = typeof created === "string" ? created : (req.pathParameters.groupId ?? "");
    return new Redirect(
      req.pathParameters.decision === undefined && req.path.endsWith("/delete")
        ? `${community}/groups?f=html`
        : groupPageHref(id),
    );
  };
}
