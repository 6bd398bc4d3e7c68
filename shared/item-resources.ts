// An item's resources and its thumbnail, as ArcGIS has them. Resources are files an app keeps with its item (a
// logo, a configuration): `…/items/<id>/addResources`, `updateResources` and `removeResources` change them (the
// item's owner and administrators), `content/items/<id>/resources` lists them and `…/resources/<name>` serves one
// (whoever sees the item; a resource added with access=private only to those who may change the item). A thumbnail is
// an image uploaded or given by its address (fetched) with addItem or update (`thumbnail`, `thumbnailUrl`), served at `content/items/<id>/info/<thumbnail>`.
//
// Both are data a user gave: served as what they are and never as mapgate's own page (nosniff always; only PNG, JPEG,
// GIF and JSON inline, anything else an attachment in a sandbox). Their bytes are kept in the item files under fresh
// ids and counted against the quotas (shared/stores/item-resources.ts).
import { config } from "#shared/config.ts";
import { badRequest, forbidden, notFound } from "#shared/errors.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import { boolParam } from "#shared/http/params.ts";
import { Content } from "#shared/http/render.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { itemId as newBlobId } from "#shared/ids.ts";
import { canManage, changing, managedItem, visibleItem } from "#shared/items.ts";
import { logger } from "#shared/log.ts";
import { fetchRemoteImage, type RemoteImage, RemoteImageError } from "#shared/remote-image.ts";
import { readPaging } from "#shared/paging.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import {
  type ItemResource,
  listResources,
  ResourcesStaleError,
  writeResources,
  writeThumbnail,
} from "#shared/stores/item-resources.ts";
import {
  getItem,
  type Item,
  ItemBusyError,
  ItemGoneError,
  type ItemThumbnail,
  StorageQuotaError,
} from "#shared/stores/items.ts";
import { checkFolder } from "#shared/upload-parts.ts";
import { quotaExceeded } from "#shared/uploads.ts";

/** The most resources one item keeps (ArcGIS: 1,000): their list is one record of at most ~90 KB. */
export const MAX_RESOURCES = 250;
/** A resource's name with its prefix, at most (ArcGIS does not say; its examples are short paths). */
export const MAX_RESOURCE_NAME = 255;
/** Folders of a resource's prefix, at most (`a/b/c/name.png`). */
export const MAX_RESOURCE_DEPTH = 4;
/** One part of a resource's name: not beginning with '.', so neither '.' nor '..' nor a hidden name. */
const SEGMENT = /^[A-Za-z0-9_()-][A-Za-z0-9_.()-]{0,127}$/;

/** The types served inline, by extension: images a browser draws and JSON an app reads, none of which runs script. */
const INLINE: Readonly<Record<string, string>> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  json: "application/json",
};

/** A resource name (prefix and file name) checked: only plain path segments, so no name can climb out of the item. */
export function resourceName(prefix: string | undefined, fileName: string, problems: string[]): string | undefined {
  const cleanPrefix = (prefix ?? "").replace(/^\/+|\/+$/g, "");
  const name = cleanPrefix === "" ? fileName : `${cleanPrefix}/${fileName}`;
  const segments = name.split("/");
  if (
    fileName === "" ||
    name.length > MAX_RESOURCE_NAME ||
    segments.length > MAX_RESOURCE_DEPTH ||
    !segments.every((s) => SEGMENT.test(s))
  ) {
    problems.push(
      `'${name.slice(0, 64)}' is not a resource name mapgate keeps: at most ${MAX_RESOURCE_NAME} characters in at most ${MAX_RESOURCE_DEPTH} parts separated by '/', each of letters, digits and '_', '-', '.', '(', ')', not beginning with '.'.`,
    );
    return undefined;
  }
  return name;
}

/** The item whose resources a request changes (its owner's or an administrator's), in the folder it names. */
async function resourceItem(req: RestRequest, what: string): Promise<Item> {
  const item = await managedItem(req, what);
  checkFolder(req, item);
  if (item.upload) throw badRequest(what, ["The item's file is still coming in parts: commit it first."]);
  return item;
}

/** Applies a change to the item's resource list, read again while other requests change it meanwhile. */
async function changeResources(
  item: Item,
  change: (current: readonly ItemResource[]) => ItemResource[],
): Promise<readonly ItemResource[]> {
  let current = item;
  for (let attempt = 0; ; attempt++) {
    const was = await listResources(current.itemId);
    const next = change(was.resources);
    try {
      await writeResources(current, was, next, config().storageQuota);
      return was.resources;
    } catch (err) {
      if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
      if (!(err instanceof ResourcesStaleError)) throw err;
      if (attempt >= 8) throw new ItemBusyError();
      const fresh = await getItem(current.itemId);
      if (!fresh) throw new ItemGoneError();
      current = fresh;
    }
  }
}

const removeBlob = (blob: string, itemId: string) =>
  itemFiles()
    .remove(blob)
    .catch((e: unknown) => logger.warn("item resource not removed", { itemId, error: String(e) }));

/** addResources and updateResources: one resource, a file or text, added (or replacing one of the same name). */
const putResource = (update: boolean): FamilyOperation => {
  const what = update ? "Unable to update resources." : "Unable to add resources.";
  return {
    op: { name: update ? "Update Resources" : "Add Resources", postOnly: true, files: ["file"], bodyOnly: ["text"] },
    compute: async (req) => {
      const problems: string[] = [];
      const file = req.params.file("file");
      const text = req.params.get("text");
      if (file && text !== undefined) problems.push("Send the resource as 'file' or as 'text', not both.");
      if (!file && text === undefined) problems.push("'file' or 'text' must be specified: the resource's content.");
      const access = (req.params.get("access") ?? "inherit").toLowerCase();
      if (access !== "inherit" && access !== "private") problems.push("'access' must be 'inherit' or 'private'.");
      const fileName = req.params.get("fileName") ?? file?.filename ?? "";
      if (fileName === "") problems.push("'fileName' must be specified: the resource's name.");
      const name = fileName === "" ? undefined : resourceName(req.params.get("resourcesPrefix"), fileName, problems);
      if (problems.length > 0 || name === undefined) throw badRequest(what, problems);
      const item = await resourceItem(req, what);
      const bytes = file ? file.bytes : Buffer.from(text ?? "", "utf8");
      const blob = newBlobId();
      await itemFiles().put(blob, bytes, "application/octet-stream");
      const resource: ItemResource = {
        name,
        blob,
        size: bytes.length,
        created: Date.now(),
        ...(access === "private" ? { access: "private" } : {}),
      };
      let before: readonly ItemResource[];
      try {
        before = await changing(item, () =>
          changeResources(item, (current) => {
            const held = current.find((r) => r.name === name);
            if (!update && held)
              throw badRequest(what, [`The item has a resource named '${name}' already: updateResources replaces it.`]);
            if (update && !held) throw badRequest(what, [`The item has no resource named '${name}'.`]);
            if (!held && current.length >= MAX_RESOURCES)
              throw badRequest(what, [`An item may keep at most ${MAX_RESOURCES} resources.`]);
            return [...current.filter((r) => r.name !== name), resource];
          }),
        );
      } catch (err) {
        await removeBlob(blob, item.itemId);
        throw err;
      }
      const replaced = before.find((r) => r.name === name);
      if (replaced) await removeBlob(replaced.blob, item.itemId);
      return { success: true, itemId: item.itemId, owner: item.owner, folder: item.ownerFolder ?? null };
    },
  };
};

export const addResourcesOperation = putResource(false);
export const updateResourcesOperation = putResource(true);

/** removeResources: `resource` (its name with its prefix), or every resource with deleteAll=true. */
export const removeResourcesOperation: FamilyOperation = {
  op: { name: "Remove Resources", postOnly: true },
  compute: async (req) => {
    const what = "Unable to remove resources.";
    const problems: string[] = [];
    const all = boolParam(req.params.get("deleteAll"), "deleteAll", problems) ?? false;
    const named = req.params.get("resource") ?? "";
    if (!all && named === "" && problems.length === 0)
      problems.push("'resource' (the resource's name) or deleteAll=true must be specified.");
    if (problems.length > 0) throw badRequest(what, problems);
    const item = await resourceItem(req, what);
    const before = await changing(item, () =>
      changeResources(item, (current) => {
        if (all) return [];
        if (!current.some((r) => r.name === named))
          throw badRequest(what, [`The item has no resource named '${named.slice(0, 255)}'.`]);
        return current.filter((r) => r.name !== named);
      }),
    );
    for (const r of before) if (all || r.name === named) await removeBlob(r.blob, item.itemId);
    return { success: true };
  },
};

/** Resources the caller may read: private ones only for those who may change the item. */
const readable = (req: RestRequest, item: Item) => (r: ItemResource) =>
  r.access !== "private" || canManage(req.identity, item);

/** GET content/items/<id>/resources: the item's resources, paged (1,000 at most a page, as REST JS asks). */
export const resourcesOperation: FamilyOperation = {
  op: { name: "Item Resources" },
  compute: async (req) => {
    const problems: string[] = [];
    const { start, num } = readPaging(
      req.params,
      { maxStart: 1_000_000, minNum: 0, maxNum: 1000, defaultNum: 10 },
      problems,
    );
    if (problems.length > 0) throw badRequest("Unable to list the item's resources.", problems);
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    const all = item.resourceBytes === undefined ? [] : (await listResources(item.itemId)).resources;
    const shown = all.filter(readable(req, item));
    const page = shown.slice(start - 1, start - 1 + num);
    const after = start - 1 + page.length;
    return {
      total: shown.length,
      start,
      num: page.length,
      nextStart: after < shown.length && page.length > 0 ? after + 1 : -1,
      resources: page.map((r) => ({
        resource: r.name,
        created: r.created,
        size: r.size,
        access: r.access ?? "inherit",
      })),
    };
  },
};

/** How a user's bytes are served: images and JSON inline, anything else a sandboxed attachment; never sniffed. */
function served(bytes: Buffer, name: string): Content {
  const base = name.slice(name.lastIndexOf("/") + 1);
  const inline = INLINE[base.slice(base.lastIndexOf(".") + 1).toLowerCase()];
  return inline ? new Content(bytes, inline) : new Content(bytes, "application/octet-stream", { attachment: base });
}

const noResource = (name: string) => notFound([`Resource '${name.slice(0, 255)}' does not exist on this item.`]);

/** GET content/items/<id>/resources/<name>: one resource's bytes. */
export const resourceOperation: FamilyOperation = {
  op: { name: "Item Resource" },
  compute: async (req) => {
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    const name = ["r1", "r2", "r3", "r4"]
      .map((p) => req.pathParameters[p])
      .filter((s): s is string => s !== undefined)
      .join("/");
    const resource =
      item.resourceBytes === undefined
        ? undefined
        : (await listResources(item.itemId)).resources.find((r) => r.name === name);
    if (!resource || !readable(req, item)(resource)) throw noResource(name);
    const bytes = await itemFiles().get(resource.blob);
    // The list names a resource only once its bytes are kept: a missing one is a fault of the storage (a 500, logged).
    if (!bytes) throw new Error(`resource ${name} of item ${item.itemId} is missing`);
    return served(bytes, name);
  },
};

// Thumbnails.

const IMAGES: readonly { readonly magic: Buffer; readonly at?: number; readonly type: string; readonly ext: string }[] =
  [
    { magic: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), type: "image/png", ext: "png" },
    { magic: Buffer.from([0xff, 0xd8, 0xff]), type: "image/jpeg", ext: "jpg" },
    { magic: Buffer.from("GIF87a"), type: "image/gif", ext: "gif" },
    { magic: Buffer.from("GIF89a"), type: "image/gif", ext: "gif" },
    // A RIFF container (its size in the 4 bytes between) holding WebP.
    { magic: Buffer.from("WEBP"), at: 8, type: "image/webp", ext: "webp" },
  ];
const RIFF = Buffer.from("RIFF");
const NOT_AN_IMAGE = "The thumbnail is not a PNG, JPEG, GIF or WebP image: its content does not begin as one does.";

/** A thumbnail as uploaded or fetched, checked: a PNG, JPEG, GIF or WebP by its first bytes, with a plain name. */
export interface ThumbnailUpload {
  readonly bytes: Buffer;
  readonly name: string;
  readonly contentType: string;
}

/** Whether a text names a thumbnail by its address rather than uploading one. */
const isAddress = (text: string) => /^https?:\/\//i.test(text);

/**
 * The thumbnail a request gives, checked (and fetched) before anything changes; undefined when it gives none: a file
 * (`thumbnail`), or an address (`thumbnailUrl`, or `thumbnail` as an http(s) URL, as ArcGIS takes both) fetched
 * under the data store rules for hosts (shared/remote-image.ts).
 */
export async function readThumbnail(req: RestRequest, what: string): Promise<ThumbnailUpload | undefined> {
  const file = req.params.file("thumbnail");
  if (file) return checkedImage(file.bytes, file.filename, what);
  const url = req.params.caseless("thumbnailurl") ?? "";
  const text = req.params.get("thumbnail") ?? "";
  const [address, param] = url !== "" && !ownThumbnailUrl(req, url) ? [url, "thumbnailUrl"] : [text, "thumbnail"];
  if (isAddress(address) || param === "thumbnailUrl") {
    // Nothing is fetched for a caller who may not make the change: mapgate is no one's fetcher.
    await mayChange(req, what);
    return fetchedImage(address, param, what);
  }
  // A client sending the item back sends the name of the thumbnail it has: that names no new one.
  if (text !== "" && !text.startsWith("thumbnail/"))
    throw badRequest(what, [
      "'thumbnail' must be an uploaded image file (multipart/form-data) or the http(s) URL of one, not other text.",
    ]);
  return undefined;
}

/** Whether the caller may make the change a thumbnail comes with: the item's (update), or the content's (addItem). */
async function mayChange(req: RestRequest, what: string): Promise<void> {
  const { user } = requireUser(req);
  if (req.pathParameters.itemId !== undefined) await managedItem(req, what, true);
  else if (req.pathParameters.username !== user.username && user.role !== "org_admin") throw forbidden();
}

/** An image fetched from an address a user gave, checked as an upload is; a refusal names the parameter. */
async function fetchedImage(address: string, param: string, what: string): Promise<ThumbnailUpload> {
  let image: RemoteImage;
  try {
    image = await fetchRemoteImage(address);
  } catch (err) {
    if (err instanceof RemoteImageError) throw badRequest(what, [`'${param}' cannot be fetched: ${err.message}`]);
    throw err;
  }
  return checkedImage(image.bytes, image.filename, what);
}

/** An image checked by its first bytes (a PNG, JPEG, GIF or WebP), named plainly under `thumbnail/`. */
function checkedImage(bytes: Buffer, filename: string, what: string): ThumbnailUpload {
  const kind = IMAGES.find((i) => {
    const at = i.at ?? 0;
    if (at > 0 && !bytes.subarray(0, RIFF.length).equals(RIFF)) return false;
    return bytes.subarray(at, at + i.magic.length).equals(i.magic);
  });
  if (!kind) throw badRequest(what, [NOT_AN_IMAGE]);
  const base = filename.replace(/^.*[\\/]/, "");
  const stem =
    base
      .replace(/\.[^.]*$/, "")
      .replace(/[^A-Za-z0-9_-]/g, "_")
      .slice(0, 100) || "thumbnail";
  return { bytes, name: `thumbnail/${stem}.${kind.ext}`, contentType: kind.type };
}

/** REST JS sends the item's own thumbnail URL back with an update: that one is no address to fetch. */
function ownThumbnailUrl(req: RestRequest, url: string): boolean {
  const itemId = req.pathParameters.itemId;
  return itemId !== undefined && url.split("?")[0]?.includes(`/content/items/${itemId}/info/thumbnail/`) === true;
}

/** Sets the item's thumbnail (read again while other requests change it); the one it replaces is removed after. */
export async function setThumbnail(item: Item, upload: ThumbnailUpload): Promise<void> {
  const thumbnail: ItemThumbnail = {
    name: upload.name,
    blob: newBlobId(),
    size: upload.bytes.length,
    contentType: upload.contentType,
  };
  await itemFiles().put(thumbnail.blob, upload.bytes, "application/octet-stream");
  let current = item;
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await writeThumbnail(current, thumbnail, config().storageQuota);
        break;
      } catch (err) {
        if (!(err instanceof ResourcesStaleError)) throw err;
        if (attempt >= 8) throw new ItemBusyError();
        const fresh = await getItem(current.itemId);
        if (!fresh) throw new ItemGoneError();
        current = fresh;
      }
    }
  } catch (err) {
    await removeBlob(thumbnail.blob, item.itemId);
    if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
    throw err;
  }
  if (current.thumbnail) await removeBlob(current.thumbnail.blob, item.itemId);
}

/**
 * An operation that also takes a `thumbnail` (addItem, update): checked before the operation changes anything, set
 * on its item after. `undo` removes a new item whose thumbnail cannot be kept (a quota), so a refused addItem keeps
 * nothing (the function that adds items deletes them; the one that updates has no need to).
 */
export function withThumbnail(
  operation: FamilyOperation,
  what: string,
  undo?: (req: RestRequest, item: Item) => Promise<void>,
): FamilyOperation {
  return {
    op: { ...operation.op, files: [...(operation.op.files ?? []), "thumbnail"] },
    compute: async (req) => {
      const upload = await readThumbnail(req, what);
      const answer = (await operation.compute(req)) as { id?: unknown };
      if (!upload) return answer;
      const item = typeof answer.id === "string" ? await getItem(answer.id) : undefined;
      if (!item) throw new ItemGoneError();
      try {
        await changing(item, () => setThumbnail(item, upload));
      } catch (err) {
        if (undo)
          await undo(req, item).catch((e: unknown) =>
            logger.warn("new item not removed after its thumbnail was refused", {
              itemId: item.itemId,
              error: String(e),
            }),
          );
        throw err;
      }
      return answer;
    },
  };
}

/**
 * POST …/items/<id>/updateThumbnail, as the ArcGIS Maps SDK's `PortalItem.updateThumbnail` sends it: `file` (an image),
 * `data` (a base64 `data:` URL of one) or `url` (its address, fetched as a thumbnailUrl is), `filename` → `{success}`.
 */
export const updateThumbnailOperation: FamilyOperation = {
  op: { name: "Update Thumbnail", postOnly: true, files: ["file"], bodyOnly: ["data"] },
  compute: async (req) => {
    const what = "Unable to update the item's thumbnail.";
    const file = req.params.file("file");
    const data = req.params.get("data") ?? "";
    const url = req.params.get("url") ?? "";
    const name = req.params.get("filename") ?? file?.filename;
    // Who may change the item is known before anything is fetched for it.
    const item = await managedItem(req, what, true);
    checkFolder(req, item);
    let upload: ThumbnailUpload;
    if (file) upload = checkedImage(file.bytes, name ?? "thumbnail", what);
    else if (data !== "") {
      const m = /^data:image\/(?:png|jpeg|gif|webp);base64,([A-Za-z0-9+/]+={0,2})$/.exec(data);
      if (!m?.[1]) throw badRequest(what, ["'data' must be a base64 data: URL of a PNG, JPEG, GIF or WebP image."]);
      upload = checkedImage(Buffer.from(m[1], "base64"), name ?? "thumbnail", what);
    } else if (url !== "") {
      const fetched = await fetchedImage(url, "url", what);
      upload = name ? checkedImage(fetched.bytes, name, what) : fetched;
    } else
      throw badRequest(what, [
        "'file' (an image), 'data' (a base64 data: URL of one) or 'url' (the http(s) address of one) must be given.",
      ]);
    await changing(item, () => setThumbnail(item, upload));
    return { success: true };
  },
};

/** GET content/items/<id>/info/thumbnail/<name>: the item's thumbnail, to whoever sees the item. */
export const thumbnailOperation: FamilyOperation = {
  op: { name: "Item Thumbnail" },
  compute: async (req) => {
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    const name = `thumbnail/${req.pathParameters.name ?? ""}`;
    if (!item.thumbnail || item.thumbnail.name !== name)
      throw notFound([`The item has no thumbnail named '${name.slice(0, 128)}'.`]);
    const bytes = await itemFiles().get(item.thumbnail.blob);
    if (!bytes) throw new Error(`the thumbnail of item ${item.itemId} is missing`);
    return new Content(bytes, item.thumbnail.contentType);
  },
};
