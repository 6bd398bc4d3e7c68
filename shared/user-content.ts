// A member's content, as `content/users/<username>[/<folderId>]` lists it: the items of their root folder (or of one
// folder) the caller may see, newest first, paged with start (1-based) and num (≤ 100), with the member's folders.
// Served by the user-content function (the root) and by the item-add family (a folder, and createFolder).
import { visibleTo } from "#shared/catalog.ts";
import { badRequest, forbidden } from "#shared/errors.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { itemsPage } from "#shared/item-pages.ts";
import { itemView } from "#shared/items.ts";
import { LIST_PAGING, pageOf, readPaging } from "#shared/paging.ts";
import {
  createFolder,
  type Folder,
  FolderRefusedError,
  getFolder,
  listFolders,
  MAX_FOLDER_TITLE,
  MAX_FOLDERS,
} from "#shared/stores/folders.ts";
import { getItems, type Item, queryItems } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";

export interface UserContent {
  username: string;
  total: number;
  start: number;
  num: number;
  nextStart: number;
  currentFolder: Folder | null;
  items: Record<string, unknown>[];
  folders: Folder[];
}

/** The folder a request names (`folderId` in its path) in `owner`'s content, or undefined for their root folder. */
export async function namedFolder(req: RestRequest, owner: string, what: string): Promise<Folder | undefined> {
  const id = req.pathParameters.folderId;
  if (id === undefined) return undefined;
  const folder = await getFolder(req.portal.portalId, owner, id);
  // Another member's folder is not in this member's content: the same answer as one that does not exist.
  if (!folder)
    throw badRequest(what, [`Folder '${id.slice(0, 64)}' does not exist in ${owner.slice(0, 128)}'s content.`]);
  return folder;
}

/** The listing; `folderId` in the path lists that folder (its owner's and administrators' only: folders are private). */
export async function userContent(req: RestRequest): Promise<UserContent> {
  const { user } = requireUser(req);
  const username = req.pathParameters.username ?? "";
  const what = "Unable to list the user's content.";
  const problems: string[] = [];
  const { start, num } = readPaging(req.params, LIST_PAGING, problems);
  if (username.length > 128) problems.push("'username' has at most 128 characters.");
  if (problems.length > 0) throw badRequest(what, problems);
  // Folders are only their owner's (and administrators' of the organization, who manage every member's content).
  const seesFolders = username === user.username || user.role === "org_admin";
  if (req.pathParameters.folderId !== undefined && !seesFolders) throw forbidden();
  const folder = await namedFolder(req, username, what);
  // One partition of the byOwner index, read page by page: the cost is the user's own item count.
  const items: Item[] = [];
  let next: Record<string, unknown> | undefined;
  do {
    const page = await queryItems("byOwner", username, 500, next);
    items.push(...page.items.filter((i) => (i.ownerFolder ?? undefined) === folder?.id && visibleTo(req.identity, i)));
    next = page.next;
  } while (next);
  const { shown, ...page } = pageOf(items, start, num);
  // The page as the table holds it now (index pages may lag a change by a moment).
  const now = await getItems(shown.map((i) => i.itemId));
  return {
    username,
    ...page,
    currentFolder: folder ?? null,
    items: shown.flatMap((i) => {
      const fresh = now.get(i.itemId);
      return fresh && visibleTo(req.identity, fresh) ? [itemView(fresh, req.identity, req.httpsOrigin)] : [];
    }),
    folders: seesFolders ? [...(await listFolders(req.portal.portalId, username))] : [],
  };
}

/** The listing's page: its items, and the next page when there is one. */
export function userContentPage(data: object, req: RestRequest): string {
  const d = data as UserContent;
  const next = d.nextStart > 0 ? `${req.path}?start=${d.nextStart}&num=${d.num}&f=html` : undefined;
  const where = d.currentFolder ? ` (${d.currentFolder.title})` : "";
  return itemsPage(`Content of ${d.username}${where}`, d.items, next);
}

/** GET|POST …/content/users/<u>/<folderId>: one folder's items (served by the item-add family, see above). */
export const folderContentOperation: FamilyOperation = {
  op: { name: "User Content", html: userContentPage },
  compute: userContent,
};

// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/** POST …/content/users/<u>/createFolder: `title` → `{success, folder: {username, id, title}}`. */
export const createFolderOperation: FamilyOperation = {
  op: {
    name: "Create Folder",
    postOnly: true,
    form: [{ name: "title", label: "Title", required: true }],
  },
  compute: async (req) => {
    const what = "Unable to create folder.";
    const { user } = requireUser(req);
    const owner = req.pathParameters.username ?? "";
    // A member's own content; administrators may organize any member's of their organization.
    if (owner !== user.username) {
      if (user.role !== "org_admin") throw forbidden();
      const member = await getUser(owner);
      if (!member || member.portalId !== user.portalId)
        throw badRequest(what, [`User '${owner.slice(0, 128)}' does not exist.`]);
    }
    const title = (req.params.get("title") ?? "").trim();
    if (title === "" || title.length > MAX_FOLDER_TITLE || CONTROL.test(title) || /[/\\]/.test(title))
      throw badRequest(what, [
        `'title' must have 1–${MAX_FOLDER_TITLE} characters, no control characters and no '/' or '\\'.`,
      ]);
    try {
      const folder = await createFolder(req.portal.portalId, owner, title);
      return { success: true, folder: { username: folder.username, id: folder.id, title: folder.title } };
    } catch (err) {
      if (err instanceof FolderRefusedError)
        throw badRequest(what, [
          err.reason === "title"
            ? `Folder title '${title}' not available: ${owner} has a folder of that title.`
            : `A member may have at most ${MAX_FOLDERS} folders.`,
        ]);
      throw err;
    }
  },
};
