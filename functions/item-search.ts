// GET|POST …/sharing/rest/search?q=…: items the caller may see that match the query (shared/search-query.ts),
// sorted and paged (start 1-based, num ≤ 100). Never a table scan: the query's owner:, id: or orgid: terms
// pick index partitions (byOwner, the table's key, byPortal); otherwise the caller's organization and the
// public items (the sparse byPublic index) are read. At most MAX_CANDIDATES items are read per search. Index
// pages may lag a change by a moment: the page shown is read again from the table and checked once more.
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { itemsPage } from "#shared/item-pages.ts";
import { itemView } from "#shared/items.ts";
import { matches, type Query, readQuery, requiredValues } from "#shared/search-query.ts";
import { pageOf, readPaging, readSort, SEARCH_PAGING } from "#shared/paging.ts";
import { getItems, type Item, type ItemIndex, PUBLIC_PARTITION, queryItems } from "#shared/stores/items.ts";

const FAILED = "Unable to search.";
const MAX_CANDIDATES = SEARCH_PAGING.maxStart;
const SORT_FIELDS = ["title", "created", "modified", "type", "owner"] as const;
type SortField = (typeof SORT_FIELDS)[number];

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

interface Answer {
  query: string;
  total: number;
  start: number;
  num: number;
  nextStart: number;
  results: Record<string, unknown>[];
}

export const handler = restHandler(
  {
    name: "Search",
    html: (data, req) => {
      const d = data as Answer;
      const next =
        d.nextStart > 0
          ? `${req.path}?q=${encodeURIComponent(d.query)}&start=${d.nextStart}&num=${d.num}&f=html`
          : undefined;
      return itemsPage(`Search: ${d.query || "*"}`, d.results, next);
    },
  },
  async (req) => {
    const q = req.params.get("q") ?? "";
    const problems: string[] = [];
    const { start, num } = readPaging(req.params, SEARCH_PAGING, problems);
    // ArcGIS documents "uploaded" among its sort fields: the creation date, sorted here as "created".
    const sort = readSort(req.params, SORT_FIELDS, problems, { uploaded: "created" });
    const query = readQuery(q, problems);
    if (problems.length > 0 || !query) throw badRequest(FAILED, problems);
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
    const answer: Answer = {
      query: q,
      ...page,
      results: shown.flatMap((i) => {
        const fresh = now.get(i.itemId);
        return fresh && hit(fresh) ? [itemView(fresh, req.identity, req.httpsOrigin)] : [];
      }),
    };
    return answer;
  },
);
