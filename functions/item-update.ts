// POST …/content/users/<owner>/items/<id>/update: an item's fields, its text, or a data store's connection
// (shared/item-update.ts; the same operation in a folder is served by the member's content family).
import { restHandler } from "#shared/http/pipeline.ts";
import { updateItemOperation } from "#shared/item-update.ts";

export const handler = restHandler(updateItemOperation.op, updateItemOperation.compute);
