// GET|POST …/sharing/rest/search?q=…: items the caller may see that match the query (shared/search-query.ts),
// sorted and paged (start 1-based, num ≤ 100). Never a table scan: the query's owner:, id: or orgid: terms
// pick index partitions (byOwner, the table's key, byPortal); otherwise the caller's organization and the
// public items (the sparse byPublic index) are read. At most MAX_CANDIDATES items are read per search.
import { visibleTo } from "#shared/catalog.ts";
import { ApiError, badRequest } from "#shared/http/errors.ts";
import { intParam } from "#shared/http/params.ts";
import { type RestRequest, restHandler } from "#shared/http/pipeline.ts";
import { itemsPage } from "#shared/item-pages.ts";
import { itemView } from "#shared/items.ts";
import { matches, parseQuery, type Query, QueryError, requiredValues } from "#shared/search-query.ts";
import { getItem, type Item, type ItemIndex, publicPartition, queryItems } from "#shared/stores/items.ts";

const FAILED = "Unable to search.";
const MAX_CANDIDATES = 10_000;
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
  if (required.id) {
    const ids = [...new Set(required.id.map((i) => i.toLowerCase()))].slice(0, 100);
    for (const item of await Promise.all(ids.map((id) => getItem(id)))) if (item) found.set(item.itemId, item);
  } else if (required.owner) {
    for (const owner of new Set(required.owner)) await readPartition("byOwner", owner, found);
  } else if (required.orgid) {
    for (const org of new Set(required.orgid)) await readPartition("byPortal", org, found);
  } else {
    if (req.identity.kind !== "anonymous") await readPartition("byPortal", req.identity.portal.portalId, found);
    await readPartition("byPublic", publicPartition, found);
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
    const start = intParam(req.params.get("start"), "start", 1, 1, MAX_CANDIDATES, problems);
    const num = intParam(req.params.get("num"), "num", 10, 0, 100, problems);
    const sortRaw = req.params.get("sortField")?.trim().toLowerCase() || undefined;
    const sortField = sortRaw === "uploaded" ? "created" : sortRaw;
    if (sortField !== undefined && !(SORT_FIELDS as readonly string[]).includes(sortField)) {
      problems.push(`'sortField' must be one of ${SORT_FIELDS.join(", ")}.`);
    }
    const order = req.params.get("sortOrder")?.trim().toLowerCase() || undefined;
    if (order !== undefined && order !== "asc" && order !== "desc") problems.push("'sortOrder' must be asc or desc.");
    let query: Query | undefined;
    try {
      query = parseQuery(q);
    } catch (err) {
      if (!(err instanceof QueryError)) throw err;
      problems.push(err.message);
    }
    if (problems.length > 0 || !query) throw badRequest(FAILED, problems);
    const parsed = query;
    const hits = (await candidates(req, parsed)).filter(
      (item) =>
        visibleTo(req.identity, item) &&
        matches(parsed, {
          id: item.itemId,
          owner: item.owner,
          orgId: item.portalId,
          title: item.title,
          type: item.type,
          tags: item.tags,
          typeKeywords: item.typeKeywords,
          access: item.access,
          description: item.description,
          snippet: item.snippet,
        }),
    );
    // Without a sort field: newest first. A sort field sorts ascending unless told otherwise; ties by id.
    const field: SortField = (sortField as SortField | undefined) ?? "created";
    const sign = (order ?? (sortField ? "asc" : "desc")) === "desc" ? -1 : 1;
    hits.sort((a, b) => sign * compare(field, a, b) || a.itemId.localeCompare(b.itemId));
    const shown = hits.slice(start - 1, start - 1 + num);
    const after = start - 1 + shown.length;
    const answer: Answer = {
      query: q,
      total: hits.length,
      start,
      num,
      nextStart: after < hits.length && shown.length > 0 ? after + 1 : -1,
      results: shown.map((i) => itemView(i, req.identity, req.httpsOrigin)),
    };
    return answer;
  },
);
