// Moving items between a member's folders and deleting a folder, as ArcGIS has them: `…/items/<id>/move` and
// `moveItems` (folder: a folder id of the owner's, or "/" for the root), and `…/<folderId>/delete`, which deletes the
// folder with every item in it. Delete protection holds there too: a folder holding a protected item is refused whole,
// before anything is deleted.
import { ApiError, badRequest, forbidden } from "#shared/errors.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { deleteProtected } from "#shared/item-protect.ts";
import { batchIds, eachOwnedItem } from "#shared/item-batch.ts";
import { removeItem } from "#shared/item-removal.ts";
import { changing, managedItem } from "#shared/items.ts";
import { namedFolder } from "#shared/user-content.ts";
import { deleteFolder, getFolder } from "#shared/stores/folders.ts";
import { DATA_STORE_TYPE, getItems, type Item, moveItemToFolder, queryItems } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";
import { checkFolder } from "#shared/upload-parts.ts";

/** The folder `folder` names in `owner`'s content: undefined for the root ("/" or empty). */
async function targetFolder(req: RestRequest, owner: string, what: string): Promise<string | undefined> {
  const raw = (req.params.get("folder") ?? "").trim();
  if (raw === "" || raw === "/") return undefined;
  const folder = await getFolder(req.portal.portalId, owner, raw);
  if (!folder)
    throw badRequest(what, [`Folder '${raw.slice(0, 64)}' does not exist in ${owner.slice(0, 128)}'s content.`]);
  return folder.id;
}

async function move(item: Item, folder: string | undefined, what: string): Promise<void> {
  // A data store's item stands for its registration, kept at its owner's root (as addItem puts it).
  if (item.type === DATA_STORE_TYPE) throw badRequest(what, ["A data store's item stays in its owner's root folder."]);
  if ((item.ownerFolder ?? undefined) !== folder) await changing(item, () => moveItemToFolder(item, folder));
}

/** POST …/items/<id>/move (also in a folder): `folder` → `{success, itemId, owner, folder}`. */
export const moveOperation: FamilyOperation = {
  op: { name: "Move Item", postOnly: true, form: [{ name: "folder", label: "Folder id ('/' for the root)" }] },
  compute: async (req) => {
    const what = "Unable to move item.";
    const item = await managedItem(req, what, true);
    checkFolder(req, item);
    const folder = await targetFolder(req, item.owner, what);
    await move(item, folder, what);
    return { success: true, itemId: item.itemId, owner: item.owner, folder: folder ?? "" };
  },
};

/** The member a request names in its path, if the caller may organize their content (themselves, or an admin). */
async function contentOwner(req: RestRequest, what: string): Promise<string> {
  const { user } = requireUser(req);
  const owner = req.pathParameters.username ?? "";
  if (owner === user.username) return owner;
  if (user.role !== "org_admin") throw forbidden();
  const member = await getUser(owner);
  if (!member || member.portalId !== user.portalId)
    throw badRequest(what, [`User '${owner.slice(0, 128)}' does not exist.`]);
  return owner;
}

/** POST …/moveItems: `items` (ids, comma-separated), `folder` → `{results: [{itemId, success[, error]}]}`. */
export const moveItemsOperation: FamilyOperation = {
  op: { name: "Move Items", postOnly: true },
  compute: async (req) => {
    const what = "Unable to move items.";
    const owner = await contentOwner(req, what);
    const ids = batchIds(req, what);
    const folder = await targetFolder(req, owner, what);
    return eachOwnedItem(req, owner, ids, what, (item) => move(item, folder, what));
  },
};

/** POST …/<folderId>/delete: the folder and every item in it → `{success, folder: {username, id, title}}`. */
export const deleteFolderOperation: FamilyOperation = {
  op: {
    name: "Delete Folder",
    postOnly: true,
    confirm: "the folder goes with every item in it; a service's item unpublishes the service.",
  },
  compute: async (req) => {
    const what = "Unable to delete folder.";
    const owner = await contentOwner(req, what);
    const folder = await namedFolder(req, owner, what);
    if (!folder) throw badRequest(what, ["The root folder cannot be deleted."]);
    const items: Item[] = [];
    let next: Record<string, unknown> | undefined;
    do {
      const page = await queryItems("byOwner", owner, 500, next);
      items.push(...page.items.filter((i) => i.ownerFolder === folder.id));
      next = page.next;
    } while (next);
    // The table as it is now (the index may lag a change by a moment).
    const now = [...(await getItems(items.map((i) => i.itemId))).values()].filter((i) => i.ownerFolder === folder.id);
    const held = now.filter((i) => i.protected);
    if (held.length > 0) {
      const refusal = deleteProtected();
      throw new ApiError(
        400,
        refusal.message,
        [`The folder holds protected items (${held.map((i) => i.itemId).join(", ")}): unprotect or move them first.`],
        refusal.messageCode,
      );
    }
    // One item at a time: a delete refused meanwhile (protected since) stops here, the folder kept with what is left.
    for (const item of now) await removeItem(req, item, what);
    await deleteFolder(req.portal.portalId, owner, folder.id);
    return { success: true, folder: { username: owner, id: folder.id, title: folder.title } };
  },
};
