// A group's content (content/groups/<id>) and an item's groups (content/items/<id>/groups), as ArcGIS has them.
import {
  groupItems,
  type GroupSortField,
  groupVisibleTo,
  groupView,
  type ItemOrder,
  membershipOf,
  visibleGroup,
} from "#shared/groups.ts";
import { badRequest } from "#shared/errors.ts";
import { intParam } from "#shared/http/params.ts";
import type { Compute } from "#shared/http/pipeline.ts";
import { itemView, visibleItem } from "#shared/items.ts";
import { pageOf } from "#shared/paging.ts";
import { getGroups, GROUP_SORT_FIELDS } from "#shared/stores/groups.ts";

/**
 * The group's items the caller may see: start (1-based), num (≤ 100), in the order sortField/sortOrder ask for,
 * else the group's own sortField and sortOrder.
 */
export const groupContent: Compute = async (req) => {
  const problems: string[] = [];
  const start = intParam(req.params.get("start"), "start", 1, 1, 10_000, problems);
  const num = intParam(req.params.get("num"), "num", 10, 0, 100, problems);
  const sortField = req.params.get("sortField")?.trim().toLowerCase() || undefined;
  if (sortField !== undefined && !(GROUP_SORT_FIELDS as readonly string[]).includes(sortField)) {
    problems.push(`'sortField' must be one of ${GROUP_SORT_FIELDS.join(", ")}.`);
  }
  const sortOrder = req.params.get("sortOrder")?.trim().toLowerCase() || undefined;
  if (sortOrder !== undefined && sortOrder !== "asc" && sortOrder !== "desc") {
    problems.push("'sortOrder' must be asc or desc.");
  }
  if (problems.length > 0) throw badRequest("Unable to list the group's content.", problems);
  const group = await visibleGroup(req.identity, req.pathParameters.groupId ?? "");
  // The request's order, else the group's (a sortOrder alone turns the group's field around).
  const order: ItemOrder | undefined =
    sortField !== undefined || sortOrder !== undefined
      ? {
          field: (sortField as GroupSortField | undefined) ?? (group.sortField as GroupSortField),
          order: (sortOrder as "asc" | "desc" | undefined) ?? "asc",
        }
      : undefined;
  const items = await groupItems(req.identity, group, order);
  const { shown, ...page } = pageOf(items, start, num);
  return { ...page, items: shown.map((i) => itemView(i, req.identity, req.httpsOrigin)) };
};

/** The groups the item is shared with that the caller may see, by the caller's membership. */
export const itemGroups: Compute = async (req) => {
  const item = await visibleItem(req.identity, req.pathParameters.itemId);
  const groups = await getGroups(item.groups ?? []);
  const out: Record<"admin" | "member" | "other", Record<string, unknown>[]> = { admin: [], member: [], other: [] };
  for (const group of groups.values()) {
    if (!groupVisibleTo(req.identity, group)) continue;
    const member = await membershipOf(req.identity, group);
    const kind = !member ? "other" : member.memberType === "member" ? "member" : "admin";
    out[kind].push(groupView(group));
  }
  return out;
};
