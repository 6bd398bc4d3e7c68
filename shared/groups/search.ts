// Group search (community/groups?q=…): the item search's query language over an organization's groups.
import { groupView, groupVisibleTo } from "#shared/groups.ts";
import { badRequest } from "#shared/errors.ts";
import type { Compute } from "#shared/http/pipeline.ts";
import { pageOf, readPaging, readSort, SEARCH_PAGING } from "#shared/paging.ts";
import { matches, readQuery } from "#shared/search-query.ts";
import { type Group, listPortalGroups } from "#shared/stores/groups.ts";

const MAX_CANDIDATES = SEARCH_PAGING.maxStart;
const SORT_FIELDS = ["title", "owner", "created", "modified"] as const;

function compare(field: (typeof SORT_FIELDS)[number], a: Group, b: Group): number {
  const x = a[field];
  const y = b[field];
  if (typeof x === "number" && typeof y === "number") return x - y;
  return String(x).localeCompare(String(y), "en", { sensitivity: "base" });
}

export const searchGroups: Compute = async (req) => {
  const problems: string[] = [];
  const q = req.params.get("q") ?? "";
  // Paged and sorted by the rule every list follows, with item search's bounds.
  const { start, num } = readPaging(req.params, SEARCH_PAGING, problems);
  const sort = readSort(req.params, SORT_FIELDS, problems);
  const query = readQuery(q, problems);
  if (problems.length > 0 || !query) throw badRequest("Unable to search.", problems);
  // Groups are read per organization (the sparse byPortal index): the caller's, or the default one for
  // anonymous callers, who see its public groups only.
  const groups = await listPortalGroups(req.portal.portalId, MAX_CANDIDATES + 1);
  if (groups.length > MAX_CANDIDATES) {
    throw badRequest("Unable to search.", [`The search would read more than ${MAX_CANDIDATES} groups.`]);
  }
  const hits = groups.filter(
    (g) =>
      groupVisibleTo(req.identity, g) &&
      matches(query, {
        id: g.groupId,
        owner: g.owner,
        orgId: g.portalId,
        title: g.title,
        type: "Group",
        tags: g.tags,
        typeKeywords: [],
        access: g.access,
        description: g.description,
        snippet: g.snippet,
      }),
  );
  const field = sort.field ?? "title";
  const sign = (sort.order ?? "asc") === "desc" ? -1 : 1;
  hits.sort((a, b) => sign * compare(field, a, b) || a.groupId.localeCompare(b.groupId));
  const { shown, ...page } = pageOf(hits, start, num);
  return { query: q, ...page, results: shown.map((g) => groupView(g)) };
};
