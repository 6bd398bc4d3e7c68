// Clearing a member's content before they leave, as ArcGIS has it: `content/users/<u>/deleteItems` deletes many of
// their items at once (each through the one removal every delete takes, so delete protection holds), and
// `…/items/<id>/reassign` gives one to another member (administrators only), into a folder of theirs named by its
// title (made when missing; "/" the root). A member who still owns items or groups cannot be deleted
// (shared/user-admin.ts), so an administrator reassigns or deletes what they own first.
import { badRequest, forbidden } from "#shared/errors.ts";
import { config } from "#shared/config.ts";
import { requireUser } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { batchIds, eachOwnedItem } from "#shared/item-batch.ts";
import { removeItem } from "#shared/item-removal.ts";
import { changing, managedItem } from "#shared/items.ts";
import { createFolder, FolderRefusedError, listFolders, MAX_FOLDER_TITLE } from "#shared/stores/folders.ts";
import { DATA_STORE_TYPE, getItem, ItemChangedError, reassignItemTo, StorageQuotaError } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";
import { checkFolder } from "#shared/upload-parts.ts";
import { quotaExceeded } from "#shared/uploads.ts";

/** POST …/deleteItems: `items` (ids, comma-separated) → `{results: [{itemId, success[, error]}]}`. */
export const deleteItemsOperation: FamilyOperation = {
  op: {
    name: "Delete Items",
    postOnly: true,
    confirm: "every item named is deleted; a service's item unpublishes it.",
  },
  compute: async (req) => {
    const what = "Unable to delete items.";
    const { user } = requireUser(req);
    const owner = req.pathParameters.username ?? "";
    if (owner !== user.username && user.role !== "org_admin") throw forbidden();
    // Each through the one removal every delete takes (delete protection holds).
    return eachOwnedItem(req, owner, batchIds(req, what), what, (item) => removeItem(req, item, what));
  },
};

/** POST …/items/<id>/reassign: `targetUsername`, `targetFolderName` → `{success, itemId}`. Administrators only. */
export const reassignOperation: FamilyOperation = {
  op: {
    name: "Reassign Item",
    postOnly: true,
    form: [
      { name: "targetUsername", label: "New owner (username)", required: true },
      { name: "targetFolderName", label: "Their folder's title ('/' or empty: the root; made when missing)" },
    ],
  },
  compute: async (req) => {
    const what = "Unable to reassign item.";
    const { user, portal } = requireUser(req);
    if (user.role !== "org_admin") throw forbidden();
    let item = await managedItem(req, what, true);
    checkFolder(req, item);
    const targetName = (req.params.get("targetUsername") ?? "").trim();
    const folderName = (req.params.get("targetFolderName") ?? "").trim();
    const problems: string[] = [];
    if (targetName === "") problems.push("'targetUsername' must name the member who receives the item.");
    if (folderName.length > MAX_FOLDER_TITLE)
      problems.push(`'targetFolderName' is longer than ${MAX_FOLDER_TITLE} characters.`);
    if (problems.length > 0) throw badRequest(what, problems);
    // A data store's item stands for its registration: its owner is the registration's.
    if (item.type === DATA_STORE_TYPE) throw badRequest(what, ["A data store's item is not reassigned."]);
    const target = await getUser(targetName);
    if (!target || target.portalId !== portal.portalId)
      throw badRequest(what, [`User '${targetName.slice(0, 128)}' does not exist.`]);
    if (target.disabled) throw badRequest(what, [`User '${target.username}' is disabled: enable them first.`]);
    // As ArcGIS: a private item shared with groups goes only to a member of each (else its groups would hold an item
    // its owner cannot share there).
    const missing = item.access === "private" ? (item.groups ?? []).filter((g) => !target.groups.has(g)) : [];
    if (missing.length > 0)
      throw badRequest(what, [
        `User '${target.username}' is not a member of every group the item is shared with (${missing.join(", ")}).`,
      ]);
    let folder: string | undefined;
    if (folderName !== "" && folderName !== "/") {
      const lower = folderName.toLowerCase();
      const existing = (await listFolders(portal.portalId, target.username)).find(
        (f) => f.title.toLowerCase() === lower,
      );
      try {
        folder = (existing ?? (await createFolder(portal.portalId, target.username, folderName))).id;
      } catch (err) {
        if (!(err instanceof FolderRefusedError)) throw err;
        if (err.reason === "count")
          throw badRequest(what, [`User '${target.username}' has as many folders as allowed.`]);
        // Made meanwhile by another request: that one.
        folder = (await listFolders(portal.portalId, target.username)).find((f) => f.title.toLowerCase() === lower)?.id;
      }
    }
    for (let attempt = 0; ; attempt++) {
      try {
        const current = item;
        await changing(current, () => reassignItemTo(current, target.username, folder, config().storageQuota));
        break;
      } catch (err) {
        if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
        if (!(err instanceof ItemChangedError) || attempt >= 4) throw err;
        const fresh = await getItem(item.itemId);
        if (!fresh || fresh.owner !== item.owner) throw badRequest(what, ["The item changed hands meanwhile."]);
        item = fresh;
      }
    }
    return { success: true, itemId: item.itemId };
  },
};
