// GET|POST …/portals/<self | id>/roles: the portal's custom roles, paged (start is 1-based, num ≤ 100).
import { badRequest } from "#shared/errors.ts";
import { requireMember, restHandler } from "#shared/http/pipeline.ts";
import { rolesPage, roleView } from "#shared/roles.ts";
import { pageOf, readPaging } from "#shared/paging.ts";
import { listRoles } from "#shared/stores/roles.ts";

export const handler = restHandler({ name: "Roles", html: rolesPage }, async (req) => {
  const { portal } = requireMember(req);
  const problems: string[] = [];
  const { start, num } = readPaging(
    req.params,
    { maxStart: Number.MAX_SAFE_INTEGER, minNum: 1, maxNum: 100, defaultNum: 10 },
    problems,
  );
  const withPrivileges = (req.params.get("returnPrivileges") ?? "false").toLowerCase() === "true";
  if (problems.length > 0) throw badRequest("Unable to list roles.", problems);
  // Sorted by name (case-insensitively) then id, so pages are stable.
  const roles = (await listRoles(portal.portalId)).sort(
    (a, b) => a.name.localeCompare(b.name, "en", { sensitivity: "base" }) || a.roleId.localeCompare(b.roleId),
  );
  const { shown, ...page } = pageOf(roles, start, num);
  return { ...page, roles: shown.map((r) => roleView(r, withPrivileges)) };
});
