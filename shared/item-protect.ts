// `…/content/users/<owner>/[<folder>/]items/<id>/protect` and `unprotect`: delete protection, as ArcGIS has it. The
// owner or an administrator turns it on or off; a protected item's delete answers ArcGIS's CONT_0048 and deletes
// nothing (checked in the delete's own write, so a protect made meanwhile still holds).
import { ApiError, badRequest } from "#shared/errors.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { changing, managedItem } from "#shared/items.ts";
import { DATA_STORE_TYPE, setItemProtected } from "#shared/stores/items.ts";
import { checkFolder } from "#shared/upload-parts.ts";

/** ArcGIS's answer to deleting a protected item. */
export const deleteProtected = () =>
  new ApiError(400, "Unable to delete item. Delete protection is turned on.", [], "CONT_0048");

const protection = (on: boolean): FamilyOperation => {
  const what = on ? "Unable to protect item." : "Unable to unprotect item.";
  return {
    op: { name: on ? "Protect" : "Unprotect", postOnly: true },
    compute: async (req) => {
      const item = await managedItem(req, what, true);
      if (req.pathParameters.folderId !== undefined) checkFolder(req, item);
      // A data store's item goes with its registration (removed once no layer uses it), never on its own.
      if (item.type === DATA_STORE_TYPE)
        throw badRequest(what, ["A data store's item is not protected: it goes when its registration is removed."]);
      if ((item.protected ?? false) !== on) await changing(item, () => setItemProtected(item, on));
      return { success: true, itemId: item.itemId };
    },
  };
};

export const protectOperation = protection(true);
export const unprotectOperation = protection(false);
