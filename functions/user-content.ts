// GET|POST …/sharing/rest/content/users/<username>: the items a user owns, newest first, paged with
// start (1-based) and num (≤ 100). The user themselves and their organization's administrators only.
import { visibleTo } from "#shared/catalog.ts";
import { badRequest, forbidden } from "#shared/http/errors.ts";
import { intParam } from "#shared/http/params.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { itemsPage } from "#shared/item-pages.ts";
import { itemView } from "#shared/items.ts";
import { type Item, queryItems } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";

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
    const { user } = requireUser(req);
    const username = req.pathParameters.username ?? "";
    const problems: string[] = [];
    const start = intParam(req.params.get("start"), "start", 1, 1, 1_000_000, problems);
    const num = intParam(req.params.get("num"), "num", 10, 0, 100, problems);
    if (problems.length > 0) throw badRequest("Unable to list the user's content.", problems);
    if (username !== user.username) {
      const owner = user.role === "org_admin" ? await getUser(username) : undefined;
      if (!owner || owner.portalId !== user.portalId) throw forbidden();
    }
    // One partition of the byOwner index, read page by page: the cost is the user's own item count.
    const items: Item[] = [];
    let next: Record<string, unknown> | undefined;
    do {
      const page = await queryItems("byOwner", username, 500, next);
      items.push(...page.items.filter((i) => visibleTo(req.identity, i)));
      next = page.next;
    } while (next);
    const shown = items.slice(start - 1, start - 1 + num);
    const after = start - 1 + shown.length;
    const answer: Answer & { currentFolder: null; folders: never[] } = {
      username,
      total: items.length,
      start,
      num,
      nextStart: after < items.length && shown.length > 0 ? after + 1 : -1,
      currentFolder: null,
      items: shown.map((i) => itemView(i, req.identity, req.httpsOrigin)),
      folders: [],
    };
    return answer;
  },
);
