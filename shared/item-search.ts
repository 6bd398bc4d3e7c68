// Searching items (…/sharing/rest/search?q=…): the items the caller may see that match the query
// (shared/search-query.ts), sorted and paged. Never a table scan: the query's owner:, id: or orgid: terms pick index
// partitions (byOwner, the table's key, byPortal); otherwise the caller's organization and the public items (the
// sparse byPublic index) are read. At most MAX_CANDIDATES items are read per search. Index pages may lag a change by
// a moment: the page shown is read again from the table and checked once more.
import { visibleTo } from "#shared/catalog.ts";
import { ApiError } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { itemView } from "#shared/items.ts";
import { matches, type Query, requiredValues } from "#shared/search-query.ts";
import { pageOf, type Paging, SEARCH_PAGING, type Sort } from "#shared/paging.ts";
import { getItems, type Item, type ItemIndex, PUBLIC_PARTITION, queryItems } from "#shared/stores/items.ts";

export const FAILED = "Unable to search.";
const MAX_CANDIDATES = SEARCH_PAGING.maxStart;
export const SORT_FIELDS = ["title", "created", "modified", "type", "owner"] as const;
export type SortField = (typeof SORT_FIELDS)[number];

/** Reads one index partition into `into`, stopping with a 400 past the candidate budget. */
async function readPartition(index: ItemIndex, value: string, into: Map<string, Item>): Promise<void> {
  let next: Record<string, unknown> | undefined;
  do {
    const page = await queryItems(index, value, 500, next);
    for (const item of page.items) into.set(item.itemId, item);
    if (into.size > MAX_CANDIDATES) {
      throw new ApiError(400, FAILED, [
        `The search would read more than ${MAX_CANDIDATES} items: narrow it with owner:, orgid: or id:.`,
      ]);
    }
    next = page.next;
  } while (next);
}

/** The items a query can match, from the fewest partitions its required terms allow. */
async function candidates(req: RestRequest, query: Query): Promise<Item[]> {
  const required = requiredValues(query);
  const found = new Map<string, Item>();
  // Values no key can hold match nothing (and never reach the store as keys).
  const keys = (values: readonly string[]) => [...new Set(values)].filter((v) => v.length > 0 && v.length <= 128);
  if (required.id) {
    const ids = keys(required.id.map((i) => i.toLowerCase())).filter((i) => /^[0-9a-f]{32}$/.test(i));
    for (const item of (await getItems(ids)).values()) found.set(item.itemId, item);
  } else if (required.owner) {
    for (const owner of keys(required.owner)) await readPartition("byOwner", owner, found);
  } else if (required.orgid) {
    // orgid: matches whatever the letter case; the caller's own organization is found as such.
    const own = req.identity.kind === "anonymous" ? undefined : req.identity.portal.portalId;
    const orgs = keys(required.orgid).map((o) => (own && o.toLowerCase() === own.toLowerCase() ? own : o));
    for (const org of orgs) await readPartition("byPortal", org, found);
  } else {
    if (req.identity.kind !== "anonymous") await readPartition("byPortal", req.identity.portal.portalId, found);
    await readPartition("byPublic", PUBLIC_PARTITION, found);
  }
  return [...found.values()];
}

function compare(field: SortField, a: Item, b: Item): number {
  const x = a[field];
  const y = b[field];
  if (typeof x === "number" && typeof y === "number") return x - y;
  return String(x).localeCompare(String(y), "en", { sensitivity: "base" });
}

export interface SearchAnswer {
  query: string;
  total: number;
  start: number;
  num: number;
  nextStart: number;
  results: Record<string, unknown>[];
}

/** The page of items the caller sees that match the query, sorted (newest first without a sort field). */
export async function searchItems(
  req: RestRequest,
  q: string,
  query: Query,
  { start, num }: Paging,
  sort: Sort<SortField>,
): Promise<SearchAnswer> {
  const hit = (item: Item) =>
    visibleTo(req.identity, item) &&
    matches(query, {
      id: item.itemId,
      owner: item.owner,
      orgId: item.portalId,
      title: item.title,
      type: item.type,
      tags: item.tags,
      typeKeywords: item.typeKeywords,
      // As the item reads: private but shared with groups is "shared".
      access: item.access === "private" && (item.groups?.length ?? 0) > 0 ? "shared" : item.access,
      description: item.description,
      snippet: item.snippet,
      ...(item.groups ? { groups: item.groups } : {}),
    });
  const hits = (await candidates(req, query)).filter(hit);
  // Without a sort field: newest first. A sort field sorts ascending unless told otherwise; ties by id.
  const field: SortField = sort.field ?? "created";
  const sign = (sort.order ?? (sort.field ? "asc" : "desc")) === "desc" ? -1 : 1;
  hits.sort((a, b) => sign * compare(field, a, b) || a.itemId.localeCompare(b.itemId));
  const { shown, ...page } = pageOf(hits, start, num);
  // The page as the table holds it now: an item unshared or deleted a moment ago is not shown.
  const now = await getItems(shown.map((i) => i.itemId));
  const answer: SearchAnswer = {
    query: q,
    ...page,
    results: shown.flatMap((i) => {
      const fresh = now.get(i.itemId);
      return fresh && hit(fresh) ? [itemView(fresh, req.identity, req.httpsOrigin)] : [];
    }),
  };
  return answer;
}
