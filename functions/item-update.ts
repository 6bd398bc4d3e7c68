// POST …/content/users/<owner>/items/<id>/update: an item's fields, its text, or a data store's connection
// (shared/item-update.ts), and its thumbnail (shared/item-resources.ts); the same operation in a folder is served by
// the member's content family.
import { restHandler } from "#shared/http/pipeline.ts";
import { withThumbnail } from "#shared/item-resources.ts";
import { updateItemOperation } from "#shared/item-update.ts";

const operation = withThumbnail(updateItemOperation, "Unable to update item.");

export const handler = restHandler(operation.op, operation.compute);
