// Items of text or a URL (web maps, apps' configurations, references to services elsewhere): adding one
// (`addItem` with `text` or `url`), changing its text (`update`), and its data as `data` serves it. The text is
// kept as given; a URL is only recorded (mapgate fetches nothing here). The rules of their fields are
// shared/item-types.ts's.
import { config } from "#shared/config.ts";
import { badRequest } from "#shared/errors.ts";
import { Content } from "#shared/http/render.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import {
  INLINE_TEXT_BYTES,
  isTextItemType,
  type ItemFields,
  type ItemTextValue,
  readItemText,
  TEXT_ITEM_TYPES,
} from "#shared/item-types.ts";
import { logger } from "#shared/log.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import {
  changeItemText,
  getItem,
  getRecordText,
  type Item,
  type ItemChanges,
  ItemBusyError,
  ItemGoneError,
  ItemStaleError,
  type ItemText,
  putMissingItem,
  putTextItem,
  StorageQuotaError,
} from "#shared/stores/items.ts";
import { quotaExceeded } from "#shared/uploads.ts";

/** What addItem was told of a new item of text or a URL, checked by its caller (title, tags, folder…). */
export interface TextItemDescription {
  readonly portalId: string;
  readonly owner: string;
  readonly type: string;
  readonly title: string;
  readonly tags: readonly string[];
  readonly description: string;
  readonly snippet: string;
  readonly folder?: string;
  readonly text: string | undefined;
  readonly fields: ItemFields;
}

/** Refuses a type no item of text or a URL may have, naming the ones it may. */
export function checkTextItemType(type: string, what: string): void {
  if (type === "")
    throw badRequest(what, ["'type' must be specified: the item's type, e.g. 'Web Map' or 'Web Mapping Application'."]);
  if (!isTextItemType(type)) {
    throw badRequest(what, [
      `'${type.slice(0, 64)}' is not an item type mapgate knows for an item of text or a URL. Types: ${TEXT_ITEM_TYPES.join(", ")}; a file's types are given with 'file'.`,
    ]);
  }
}

/**
 * Where a text is to be kept: a small one in its record (written with the item), a larger one in the item files
 * first, under a fresh id (removed again if the item then does not take it).
 */
async function keepText(value: ItemTextValue): Promise<ItemText> {
  if (value.size <= INLINE_TEXT_BYTES) return { size: value.size, json: value.json };
  const blob = newItemId();
  await itemFiles().put(blob, Buffer.from(value.body, "utf8"), "application/octet-stream");
  return { size: value.size, json: value.json, blob };
}

/** Removes a text's blob no item names (a refused write, or the text replaced); a failure leaves an orphan, logged. */
async function dropBlob(text: ItemText | undefined, itemId: string): Promise<void> {
  if (text?.blob === undefined) return;
  await itemFiles()
    .remove(text.blob)
    .catch((e: unknown) => logger.warn("item text not removed", { itemId, error: String(e) }));
}

/** Adds an item of text or a URL, its text counted against its owner's and organization's quotas. */
export async function addTextItem(d: TextItemDescription, what: string): Promise<Item> {
  checkTextItemType(d.type, what);
  const problems: string[] = [];
  const value = d.text !== undefined && d.text !== "" ? readItemText(d.text, d.type, problems) : undefined;
  if (problems.length > 0) throw badRequest(what, problems);
  const now = Date.now();
  const { typeKeywords, ...fields } = d.fields;
  const base: Item = {
    itemId: newItemId(),
    portalId: d.portalId,
    owner: d.owner,
    title: d.title,
    type: d.type,
    typeKeywords: typeKeywords ?? [],
    url: "",
    tags: d.tags,
    description: d.description,
    snippet: d.snippet,
    access: "private",
    created: now,
    modified: now,
    ...(d.folder ? { ownerFolder: d.folder } : {}),
    ...Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== "" && !(Array.isArray(v) && v.length === 0))),
  };
  if (!value) {
    if (!(await putMissingItem(base))) throw new ItemBusyError();
    return base;
  }
  const text = await keepText(value);
  const item = { ...base, text };
  try {
    await putTextItem(item, value.body, config().storageQuota);
  } catch (err) {
    await dropBlob(text, item.itemId);
    if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
    throw err;
  }
  return item;
}

/**
 * Changes an item's text (with the other changes of the same update), read again and retried while other requests
 * change the item meanwhile; the text it replaced is removed after.
 */
export async function replaceItemText(item: Item, raw: string, changes: ItemChanges, what: string): Promise<void> {
  const problems: string[] = [];
  const value = readItemText(raw, item.type, problems);
  if (!value) throw badRequest(what, problems);
  const text = await keepText(value);
  let current = item;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await changeItemText(current, text, value.body, changes, config().storageQuota);
        break;
      } catch (err) {
        if (!(err instanceof ItemStaleError)) throw err;
        const fresh = await getItem(current.itemId);
        if (!fresh) throw new ItemGoneError();
        if (attempt >= 8) throw new ItemBusyError();
        current = fresh;
      }
    }
  } catch (err) {
    await dropBlob(text, item.itemId);
    if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
    throw err;
  }
  await dropBlob(current.text, item.itemId);
}

/**
 * An item's text as `data` serves it: JSON as application/json (what clients parse), anything else as an
 * attachment in a sandbox (text/plain), so no text runs as mapgate's own content.
 */
export async function itemTextContent(item: Item & { text: ItemText }): Promise<Content> {
  const bytes = item.text?.blob !== undefined ? await itemFiles().get(item.text.blob) : await getRecordText(item);
  // The item names its text only once it is kept: a missing one is a fault of the storage (a 500, logged).
  if (!bytes) throw new Error(`the text of item ${item.itemId} is missing`);
  if (item.text.json) return new Content(bytes, "application/json; charset=utf-8");
  return new Content(bytes, "text/plain; charset=utf-8", { attachment: `${item.itemId}.txt` });
}
