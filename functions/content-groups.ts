// What no other content route serves (…/sharing/rest/content/…), as ArcGIS has it:
//   GET content/groups/<id>        the group's items the caller may see: start (1-based), num (≤ 100), in the
//                                  order sortField/sortOrder ask for, else the group's own sortField and sortOrder
//   GET content/items/<id>/groups  the groups the item is shared with that the caller may see, by the caller's
//                                  membership: {admin, member, other}
// One function for both (the stack's resource budget counts functions); anything else is the usual 404.
import type { APIGatewayProxyEventV2, Context } from "aws-lambda";
import { itemsPage } from "#shared/item-pages.ts";
import {
  groupItems,
  type GroupSortField,
  groupVisibleTo,
  groupView,
  type ItemOrder,
  membershipOf,
  visibleGroup,
} from "#shared/groups.ts";
import { badRequest, noSuchResource } from "#shared/http/errors.ts";
import { intParam } from "#shared/http/params.ts";
import { type Compute, restHandler } from "#shared/http/pipeline.ts";
import { itemView, visibleItem } from "#shared/items.ts";
import { pageOf } from "#shared/paging.ts";
import { getGroups, GROUP_SORT_FIELDS } from "#shared/stores/groups.ts";

const groupContent: Compute = async (req) => {
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

const itemGroups: Compute = async (req) => {
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

const ROUTES = [
  {
    pattern: /^groups\/([0-9A-Za-z]{1,64})$/,
    name: "groupId",
    handle: restHandler(
      {
        name: "Group Content",
        html: (data) =>
          itemsPage("Group content", (data as { items?: Record<string, unknown>[] }).items ?? [], undefined),
      },
      groupContent,
    ),
  },
  {
    pattern: /^items\/([0-9A-Za-z]{1,64})\/groups$/,
    name: "itemId",
    handle: restHandler({ name: "Item Groups" }, itemGroups),
  },
];

const fallback = restHandler({ name: "Not Found" }, async (req) => {
  throw noSuchResource([`Nothing is served at ${req.method} ${req.event.rawPath.slice(0, 200)}.`]);
});

export const handler = async (event: APIGatewayProxyEventV2, context: Context) => {
  const rest = event.pathParameters?.path ?? "";
  for (const r of ROUTES) {
    const m = r.pattern.exec(rest);
    if (m) return r.handle({ ...event, pathParameters: { ...event.pathParameters, [r.name]: m[1] ?? "" } }, context);
  }
  return fallback(event, context);
};
