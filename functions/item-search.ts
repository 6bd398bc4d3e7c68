// GET|POST …/sharing/rest/search?q=…: items the caller may see that match the query (shared/search-query.ts),
// sorted and paged (start 1-based, num ≤ 100). Never a table scan: the query's owner:, id: or orgid: terms
// pick index partitions (byOwner, the table's key, byPortal); otherwise the caller's organization and the
// public items (the sparse byPublic index) are read. At most MAX_CANDIDATES items are read per search. Index
// pages may lag a change by a moment: the page shown is read again from the table and checked once more.
import { badRequest } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { itemsPage, searchForm } from "#shared/item-pages.ts";
import { FAILED, searchItems, type SearchAnswer, SORT_FIELDS } from "#shared/item-search.ts";
import { readPaging, readSort, SEARCH_PAGING } from "#shared/paging.ts";
import { readQuery } from "#shared/search-query.ts";

export const handler = restHandler(
  {
    name: "Search",
    html: (data, req) => {
      const d = data as SearchAnswer;
      const next =
        d.nextStart > 0
          ? `${req.path}?q=${encodeURIComponent(d.query)}&start=${d.nextStart}&num=${d.num}&f=html`
          : undefined;
      return itemsPage(`Search: ${d.query || "*"}`, d.results, next, searchForm(d.query));
    },
  },
  async (req) => {
    const q = req.params.get("q") ?? "";
    const problems: string[] = [];
    const paging = readPaging(req.params, SEARCH_PAGING, problems);
    // ArcGIS documents "uploaded" among its sort fields: the creation date, sorted here as "created".
    const sort = readSort(req.params, SORT_FIELDS, problems, { uploaded: "created" });
    const query = readQuery(q, problems);
    if (problems.length > 0 || !query) throw badRequest(FAILED, problems);
    return searchItems(req, q, query, paging, sort);
  },
);
