// POST …/content/users/<username>/addItem: adds an item (the function also serves the hosted-layer operations at
// their own paths: analyze, publish, export, an item's status, createService, the hosting server's admin wire
// of hosted services, and a hosted layer's append and edits, shared/hosted/operations.ts). Two kinds are added here
// (shared/add-item.ts): an uploaded file, and a data store's registration.
import { familyHandler, type FamilyOperation, routesHandler } from "#shared/http/router.ts";
import { addItemOperation } from "#shared/add-item.ts";
import {
  addAttachmentOperation,
  deleteAttachmentsOperation,
  updateAttachmentOperation,
  addFeaturesOperation,
  adminServiceOperation,
  analyzeOperation,
  applyEditsOperation,
  deleteFeaturesOperation,
  serviceApplyEditsOperation,
  updateFeaturesOperation,
  appendOperation,
  createServiceOperation,
  exportOperation,
  publishOperation,
  statusOperation,
} from "#shared/hosted/operations.ts";
import { CONTENT_FILES, SERVICE_DEFINITION, USER_CONTENT_OPERATIONS } from "#shared/system.ts";
import {
  addPartOperation,
  cancelOperation,
  checkFolder,
  commitOperation,
  partsOperation,
} from "#shared/upload-parts.ts";
import { createFolderOperation, folderContentOperation } from "#shared/user-content.ts";
import { FOLDER_ID } from "#shared/stores/folders.ts";
import { visibleItem } from "#shared/items.ts";
import { protectOperation, unprotectOperation } from "#shared/item-protect.ts";
import { updateItemOperation } from "#shared/item-update.ts";
import {
  addResourcesOperation,
  removeResourcesOperation,
  updateResourcesOperation,
  updateThumbnailOperation,
  withThumbnail,
} from "#shared/item-resources.ts";
import { deleteFolderOperation, moveItemsOperation, moveOperation } from "#shared/item-moves.ts";
import { addRelationshipOperation, deleteRelationshipOperation } from "#shared/item-relationships.ts";
import { removeItem } from "#shared/item-removal.ts";
import { deleteItemsOperation, reassignOperation } from "#shared/item-owners.ts";

/** addItem and update also take a thumbnail (an uploaded image), set on the item once the rest is done. */
const addItem = withThumbnail(addItemOperation, "Unable to add item.", (req, item) =>
  removeItem(req, item, "Unable to add item."),
);
const updateItem = withThumbnail(updateItemOperation, "Unable to update item.");

/** An item operation addressed in a folder: the item must be in it (checkFolder), then the operation runs. */
const inFolder = (operation: FamilyOperation): FamilyOperation => ({
  op: operation.op,
  compute: async (req) => {
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    checkFolder(req, item);
    return operation.compute(req);
  },
});

/** Under a member's content, what no route of its own serves (CONTENT_FILES.userContent). */
const USER_CONTENT: Readonly<Record<(typeof USER_CONTENT_OPERATIONS)[number], FamilyOperation>> = {
  addItem,
  publish: publishOperation,
  export: exportOperation,
  createService: createServiceOperation,
  "items/{itemId}/status": statusOperation,
  "items/{itemId}/addPart": addPartOperation,
  "items/{itemId}/commit": commitOperation,
  createFolder: createFolderOperation,
  "{folderId}": folderContentOperation,
  "{folderId}/addItem": addItem,
  "{folderId}/createService": createServiceOperation,
  "items/{itemId}/cancel": cancelOperation,
  "items/{itemId}/parts": partsOperation,
  "{folderId}/items/{itemId}/addPart": addPartOperation,
  "{folderId}/items/{itemId}/commit": commitOperation,
  "{folderId}/items/{itemId}/status": inFolder(statusOperation),
  "{folderId}/items/{itemId}/cancel": cancelOperation,
  "{folderId}/items/{itemId}/parts": partsOperation,
  "items/{itemId}/protect": protectOperation,
  "items/{itemId}/unprotect": unprotectOperation,
  "{folderId}/items/{itemId}/protect": protectOperation,
  "{folderId}/items/{itemId}/unprotect": unprotectOperation,
  "{folderId}/items/{itemId}/update": updateItem,
  "items/{itemId}/addResources": addResourcesOperation,
  "items/{itemId}/updateResources": updateResourcesOperation,
  "items/{itemId}/removeResources": removeResourcesOperation,
  "{folderId}/items/{itemId}/addResources": addResourcesOperation,
  "{folderId}/items/{itemId}/updateResources": updateResourcesOperation,
  "{folderId}/items/{itemId}/removeResources": removeResourcesOperation,
  "items/{itemId}/move": moveOperation,
  "{folderId}/items/{itemId}/move": moveOperation,
  moveItems: moveItemsOperation,
  "{folderId}/delete": deleteFolderOperation,
  addRelationship: addRelationshipOperation,
  deleteRelationship: deleteRelationshipOperation,
  "items/{itemId}/updateThumbnail": updateThumbnailOperation,
  "{folderId}/items/{itemId}/updateThumbnail": updateThumbnailOperation,
  deleteItems: deleteItemsOperation,
  "items/{itemId}/reassign": reassignOperation,
  "{folderId}/items/{itemId}/reassign": reassignOperation,
};

export const handler = routesHandler({
  [CONTENT_FILES.analyze]: analyzeOperation,
  [CONTENT_FILES.admin]: adminServiceOperation,
  [SERVICE_DEFINITION.hosted]: adminServiceOperation,
  [CONTENT_FILES.append]: appendOperation,
  [CONTENT_FILES.applyEdits]: applyEditsOperation,
  [CONTENT_FILES.addFeatures]: addFeaturesOperation,
  [CONTENT_FILES.updateFeatures]: updateFeaturesOperation,
  [CONTENT_FILES.deleteFeatures]: deleteFeaturesOperation,
  [CONTENT_FILES.serviceApplyEdits]: serviceApplyEditsOperation,
  [CONTENT_FILES.addAttachment]: addAttachmentOperation,
  [CONTENT_FILES.updateAttachment]: updateAttachmentOperation,
  [CONTENT_FILES.deleteAttachments]: deleteAttachmentsOperation,
  [CONTENT_FILES.userContent]: familyHandler({
    greedy: "path",
    notFound: "Not Found",
    shapes: { folderId: FOLDER_ID, itemId: /^[0-9a-f]{32}$/ },
    operations: USER_CONTENT,
  }),
});
