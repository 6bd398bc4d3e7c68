// `…/content/users/<owner>/[<folder>/]items/<id>/update`: an item's title, tags, summary (snippet), description and
// the fields every item has (typeKeywords, url, extent, spatialReference, accessInformation, licenseInfo,
// properties); a service's description and tags change with its item. An item of text (a web map, an app's
// configuration) takes a new `text`, checked as addItem checks it. A data store's item also takes `text`, its JSON
// with a new connection (a new password goes to the store's secret), which published layers take on
// `refreshServer`. Other item fields a client sends back (ArcGIS clients send the whole item) are ignored: access
// changes through share, the rest is the server's. Served at the root (its own route) and in a folder (the
// member's content family, shared/system.ts USER_CONTENT_OPERATIONS).
import { changeConnection } from "#shared/datastore-registration.ts";
import { badRequest } from "#shared/errors.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { replaceItemText } from "#shared/item-content.ts";
import { readItemFields } from "#shared/item-types.ts";
import { changing, managedItem } from "#shared/items.ts";
import { readTags, registering } from "#shared/publishing.ts";
import { getDataStore, updateDataStore } from "#shared/stores/datastores.ts";
import { DATA_STORE_TYPE, type ItemChanges, updateItem } from "#shared/stores/items.ts";
import { checkFolder } from "#shared/upload-parts.ts";

const FAILED = "Unable to update item.";
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

export const updateItemOperation = {
  op: {
    name: "Update Item",
    postOnly: true,
    bodyOnly: ["text"],
    form: [
      { name: "title", label: "Title", required: true },
      { name: "tags", label: "Tags (comma-separated)" },
      { name: "snippet", label: "Summary" },
      { name: "description", label: "Description", type: "textarea" },
      { name: "text", label: "Data store JSON (a data store's item: its new connection)", type: "textarea" },
    ],
    // The form edits the item as it is: a field left alone is sent back unchanged.
    formValues: async (req) => {
      const item = await managedItem(req, FAILED, true);
      return { title: item.title, tags: item.tags.join(", "), snippet: item.snippet, description: item.description };
    },
  },
  compute: async (req) => {
    const problems: string[] = [];
    const changes: { -readonly [K in keyof ItemChanges]: ItemChanges[K] } = {};
    const title = req.params.get("title");
    if (title !== undefined) {
      const t = title.trim();
      if (t === "" || t.length > 250 || CONTROL.test(t)) {
        problems.push("'title' must have 1–250 characters and no control characters.");
      } else changes.title = t;
    }
    const tags = req.params.get("tags");
    if (tags !== undefined) changes.tags = readTags(tags, problems);
    const snippet = req.params.get("snippet");
    if (snippet !== undefined) {
      if (snippet.length > 2048) problems.push("'snippet' may have at most 2048 characters.");
      else changes.snippet = snippet;
    }
    const description = req.params.get("description");
    if (description !== undefined) {
      if (description.length > 65536) problems.push("'description' may have at most 65536 characters.");
      else changes.description = description;
    }
    Object.assign(changes, readItemFields(req.params, problems));
    if (problems.length > 0) throw badRequest(FAILED, problems);
    const item = await managedItem(req, FAILED, true);
    if (req.pathParameters.folderId !== undefined) checkFolder(req, item);
    const text = req.params.get("text");
    if (item.type === DATA_STORE_TYPE) {
      const store = await getDataStore(item.itemId);
      if (!store) throw badRequest(FAILED, ["The item's data store is no longer registered."]);
      const connected =
        text !== undefined && text.trim() !== ""
          ? await registering(FAILED, () => changeConnection(store, text))
          : store;
      // The store carries its item's title (the directory and the operator's list show it).
      const title = changes.title;
      if (title !== undefined && title !== connected.title)
        await registering(FAILED, () => updateDataStore(connected, { title }));
    } else if (text !== undefined && text !== "") {
      // A service's item, an uploaded file's or a hosted layer's has its content elsewhere: its text is not its data.
      if (item.service || item.file || item.upload || item.hostedData !== undefined)
        throw badRequest(FAILED, [
          `An item of type '${item.type}' has no text to change: its data is its service or file.`,
        ]);
      await changing(item, () => replaceItemText(item, text, changes, FAILED));
      return { success: true, id: item.itemId };
    }
    // A service's url is the service's own, answered from where it is served.
    if (item.service && changes.url !== undefined) delete changes.url;
    if (Object.keys(changes).length > 0) await changing(item, () => updateItem(item, changes));
    return { success: true, id: item.itemId };
  },
} satisfies FamilyOperation;
