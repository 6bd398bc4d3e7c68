// The rules of custom-role administration, shared by the role handlers.
import { KNOWN_PRIVILEGES, ROLE_PRIVILEGES } from "#shared/auth/privileges.ts";
import { ApiError, badRequest, forbidden, notFound } from "#shared/errors.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { escapeHtml, page, renderValue, resultPage } from "#shared/http/html.ts";
import { type RestRequest, requireMember } from "#shared/http/pipeline.ts";
import { getRole, NameTakenError, type Role, StaleRoleError } from "#shared/stores/roles.ts";

export const NAME_MAX = 128;
export const DESCRIPTION_MAX = 250;
const ROLE_ID = /^[A-Za-z0-9]{1,32}$/;
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/**
 * Only default administrators (`org_admin`) change roles: a custom role carrying admin privileges does not
 * qualify. The path's portal must be the caller's own (`self` or its id).
 */
export function requireRoleAdmin(req: RestRequest) {
  const identity = requireMember(req);
  if (identity.user.role !== "org_admin") throw forbidden();
  return identity;
}

export function readName(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined) return undefined;
  const name = raw.trim();
  if (name === "") problems.push("'name' must not be empty.");
  else if ([...name].length > NAME_MAX) problems.push(`'name' may have at most ${NAME_MAX} characters.`);
  else if (CONTROL.test(name)) problems.push("'name' may not contain control characters.");
  else return name;
  return undefined;
}

export function readDescription(raw: string | undefined, problems: string[]): string | undefined {
  if (raw === undefined) return undefined;
  if ([...raw].length > DESCRIPTION_MAX) problems.push(`'description' may have at most ${DESCRIPTION_MAX} characters.`);
  else return raw;
  return undefined;
}

/** `privileges={"privileges":[…]}`: every entry a known privilege string; duplicates collapse. */
export function readPrivileges(raw: string | undefined): string[] {
  const what = "Unable to set privileges.";
  if (raw === undefined || raw.trim() === "") throw badRequest(what, ["'privileges' must be specified."]);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw badRequest(what, ['\'privileges\' must be JSON: {"privileges":["portal:user:createItem", …]}.']);
  }
  const list = (parsed as { privileges?: unknown } | null)?.privileges;
  if (!Array.isArray(list)) throw badRequest(what, ["'privileges' must be an object with a 'privileges' array."]);
  if (list.length > KNOWN_PRIVILEGES.size) throw badRequest(what, ["Too many privileges."]);
  const unknown = list.filter((p) => typeof p !== "string" || !KNOWN_PRIVILEGES.has(p));
  if (unknown.length > 0) {
    throw badRequest(
      what,
      // Only a scalar is quoted back: serialising an array or object would recurse through whatever it nests.
      unknown
        .slice(0, 20)
        .map((p) =>
          p !== null && typeof p === "object"
            ? `Unknown privilege (${Array.isArray(p) ? "an array" : "an object"}).`
            : `Unknown privilege ${JSON.stringify(p).slice(0, 100)}.`,
        )
        .concat(`Valid privileges: ${ROLE_PRIVILEGES.join(", ")}.`),
    );
  }
  return [...new Set(list as string[])];
}

export async function loadRole(req: RestRequest, portalId: string): Promise<Role> {
  const roleId = req.pathParameters.roleId ?? "";
  const role = ROLE_ID.test(roleId) ? await getRole(portalId, roleId) : undefined;
  if (!role) throw notFound([`Role '${roleId.slice(0, 64)}' does not exist or is inaccessible.`]);
  return role;
}

export function roleView(role: Role, withPrivileges = false) {
  return {
    id: role.roleId,
    name: role.name,
    description: role.description,
    created: role.created,
    modified: role.modified,
    ...(withPrivileges ? { privileges: role.privileges } : {}),
  };
}

/** `modified` only moves forward, even when two changes land in the same millisecond. */
export const nextModified = (role: Role) => Math.max(Date.now(), role.modified + 1);

/**
 * Applies a change to the freshest copy of a role, retrying when another request changed it meanwhile
 * (last writer wins, as on the original). A name conflict is the caller's error; persistent contention is 409.
 */
export async function changeRole(
  req: RestRequest,
  portalId: string,
  what: string,
  write: (current: Role) => Promise<void>,
): Promise<void> {
  for (let attempt = 0; attempt < 12; attempt++) {
    const current = await loadRole(req, portalId);
    try {
      await write(current);
      return;
    } catch (err) {
      if (err instanceof NameTakenError) throw badRequest(what, [err.message]);
      if (!(err instanceof StaleRoleError)) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * (attempt + 1)));
    }
  }
  throw new ApiError(409, what, ["The role is being changed by other requests; try again."]);
}

const roleLink = (req: RestRequest, roleId: string, op = "") =>
  `${req.path.replace(/\/roles(\/.*)?$/, "")}/roles/${encodeURIComponent(roleId)}${op}?f=html`;

/** The roles page: each role links to its own page, which links to what can be done with it. */
export function rolesPage(data: object, req: RestRequest): string {
  const { roles, total, nextStart } = data as {
    roles: ReturnType<typeof roleView>[];
    total: number;
    nextStart: number;
  };
  const rows = roles.map(
    (r) =>
      `<tr><td><a href="${escapeHtml(roleLink(req, r.id))}">${escapeHtml(r.name)}</a></td><td><code>${escapeHtml(r.id)}</code></td><td>${escapeHtml(r.description)}</td></tr>`,
  );
  const table = rows.length
    ? `<table><tr><th>Name</th><th>Id</th><th>Description</th></tr>${rows.join("")}</table>`
    : '<p class="muted">No custom roles.</p>';
  const more = nextStart > 0 ? `<p><a href="?start=${nextStart}&#38;f=html">Next page</a></p>` : "";
  return page("Roles", `<h1>Roles</h1><p class="muted">${total} in all</p>${table}${more}`);
}

/** One role's page, with links to its operations. */
export function rolePage(data: object, req: RestRequest): string {
  const r = data as ReturnType<typeof roleView>;
  const ops = [
    ["/update", "Update"],
    ["/privileges", "Privileges"],
    ["/setPrivileges", "Set privileges"],
    ["/delete", "Delete"],
  ].map(([op, label]) => `<a href="${escapeHtml(roleLink(req, r.id, op))}">${label}</a>`);
  return page(r.name, `<h1>${escapeHtml(r.name)}</h1>${renderValue(data)}<p>${ops.join(" · ")}</p>`);
}

/** What a role operation did, for its result page (a symbol key: never part of a JSON answer). */
export const ROLE_RESULT = Symbol("roleResult");
export interface RoleResult {
  readonly [ROLE_RESULT]?: { readonly roleId: string; readonly said: string };
}

/** The page after creating or changing a role: what happened, in words, and the ways on. */
export function roleResultPage(title: string) {
  return (data: object, req: RestRequest): string => {
    const result = (data as RoleResult)[ROLE_RESULT];
    if (!result) return page(title, `<h1>${escapeHtml(title)}</h1>${renderValue(data)}`);
    const base = `${PORTAL_ROOT}/portals/${encodeURIComponent(req.pathParameters.portalId ?? "self")}`;
    const role = `${base}/roles/${encodeURIComponent(result.roleId)}`;
    return resultPage(title, result.said, [
      [`${role}?f=html`, "The role"],
      [`${role}/setPrivileges?f=html`, "Set its privileges"],
      [`${role}/update?f=html`, "Rename or describe it"],
      [`${base}/roles?f=html`, "All roles"],
      [`${PORTAL_ROOT}?f=html`, "Directory"],
    ]);
  };
}

/** A role's privileges in words. */
export const privilegesInWords = (privileges: readonly string[]) =>
  privileges.length === 0
    ? "no privileges"
    : `${privileges.length} privilege${privileges.length === 1 ? "" : "s"}: ${privileges.join(", ")}`;
