// GET|POST …/sharing/rest/content/users/<username>: the items a user owns that the caller may see, newest
// first, paged with start (1-based) and num (≤ 100). Signed-in callers only.
import { visibleTo } from "#shared/catalog.ts";
import { badRequest } from "#shared/http/errors.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { itemsPage } from "#shared/item-pages.ts";
import { itemView } from "#shared/items.ts";
import { LIST_PAGING, pageOf, readPaging } from "#shared/paging.ts";
import { getItems, type Item, queryItems } from "#shared/stores/items.ts";

interface Answer {
  username: string;
  total: number;
  start: number;
  num: number;
  nextStart: number;
  items: Record<string, unknown>[];
}

export const handler = restHandler(
  {
    name: "User Content",
    html: (data, req) => {
      const d = data as Answer & { currentFolder: null };
      const next = d.nextStart > 0 ? `${req.path}?start=${d.nextStart}&num=${d.num}&f=html` : undefined;
      return itemsPage(`Content of ${d.username}`, d.items, next);
    },
  },
  async (req) => {
    requireUser(req);
    const username = req.pathParameters.username ?? "";
    const problems: string[] = [];
    const { start, num } = readPaging(req.params, LIST_PAGING, problems);
    if (username.length > 128) problems.push("'username' has at most 128 characters.");
    if (problems.length > 0) throw badRequest("Unable to list the user's content.", problems);
    // One partition of the byOwner index, read page by page: the cost is the user's own item count.
    const items: Item[] = [];
    let next: Record<string, unknown> | undefined;
    do {
      const page = await queryItems("byOwner", username, 500, next);
      items.push(...page.items.filter((i) => visibleTo(req.identity, i)));
      next = page.next;
    } while (next);
    const { shown, ...page } = pageOf(items, start, num);
    // The page as the table holds it now (index pages may lag a change by a moment).
    const now = await getItems(shown.map((i) => i.itemId));
    const answer: Answer & { currentFolder: null; folders: never[] } = {
      username,
      ...page,
      currentFolder: null,
      items: shown.flatMap((i) => {
        const fresh = now.get(i.itemId);
        return fresh && visibleTo(req.identity, fresh) ? [itemView(fresh, req.identity, req.httpsOrigin)] : [];
      }),
      folders: [],
    };
    return answer;
  },
);
