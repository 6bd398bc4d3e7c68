// Files uploaded in parts, as ArcGIS clients send a file larger than one request: `addItem` with `multipart=true`
// makes the item (no file yet), `…/items/<id>/addPart` keeps each part (`partNum` 1…10,000, any order, the same
// number again replaces it), `…/items/<id>/commit` assembles them in order into the item's file and `…/status`
// says where it stands. Parts are kept in the item-files store under the item, never in the table; each part's
// bytes count against the owner's and organization's quotas as it arrives. The assembled file is checked as a
// one-request upload is (type, first bytes, size), then the parts go.
//
// A commit with `async=true` answers at once, leaving the item `processing` with no assembler; the next status
// request of someone who may change the item assembles it (within that request), as does one that finds an
// assembly stalled for longer than a request may last. Nothing runs after an answer: on AWS nothing could.
import { config } from "#shared/config.ts";
import { ApiError, badRequest, forbidden, notFound } from "#shared/errors.ts";
import { boolParam } from "#shared/http/params.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { canManage } from "#shared/items.ts";
import { logger } from "#shared/log.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import {
  cancelUpload,
  chargeUpload,
  claimUpload,
  ClaimLostError,
  completeUpload,
  failUpload,
  getItem,
  type Item,
  ItemBusyError,
  ItemGoneError,
  type ItemUpload,
  putMissingItem,
  StorageQuotaError,
  UploadStateError,
} from "#shared/stores/items.ts";
import {
  checkContent,
  FILE_ITEM_TYPES,
  fileItemType,
  itemFileName,
  quotaExceeded,
  newFileItem,
  type UploadDescription,
} from "#shared/uploads.ts";

/** ArcGIS numbers parts from 1 to 10,000. */
export const MAX_PART_NUMBER = 10_000;
/**
 * Room kept in an addPart body for its other form fields (token, f, partNum and the multipart framing): a part
 * of at most the body limit less this is always taken.
 */
export const PART_FORM_ROOM = 8192;
/** How long an assembly may hold an upload before another request may take it over (past any request's time). */
const CLAIM_LEASE_MS = 2 * 60 * 1000;

/** The most bytes one part may hold on this deployment. */
export const maxPartBytes = () => config().maxBodyBytes - PART_FORM_ROOM;

const partTooLarge = (got: number) =>
  badRequest("Unable to add part.", [
    `A part may hold at most ${maxPartBytes()} bytes here: a request body is at most ${config().maxBodyBytes} bytes (MAX_BODY_BYTES), ${PART_FORM_ROOM} of which are kept for the form's other fields; this one was ${got} bytes. Send smaller parts (ArcGIS's 5 MB minimum part size does not apply).`,
  ]);

/** Makes the item of a file that will come in parts: named, typed, no file and no bytes counted yet. */
export async function addPartialItem(d: UploadDescription, what: string): Promise<Item> {
  const name = itemFileName(d.filename ?? "");
  if (name === "")
    throw badRequest(what, ["'filename' must be specified with multipart=true (the name of the file to come)."]);
  const type = fileItemType(d.type, name, what);
  const item: Item = { ...newFileItem(d, name, type), upload: { state: "partial", name, bytes: 0 } };
  if (!(await putMissingItem(item))) throw new Error("a new item id was taken");
  // After the item: a crash between the two leaves an upload the sweeper finds by its parts once any come.
  await itemFiles().markUpload(item.itemId);
  return item;
}

/**
 * The item whose upload the request changes: it exists in the caller's organization, the path names its owner,
 * and the caller is its owner or an administrator (anyone else: 403).
 */
async function uploadingItem(req: RestRequest, what: string): Promise<Item & { upload: ItemUpload }> {
  const { user } = requireUser(req);
  const itemId = req.pathParameters.itemId ?? "";
  const item = await getItem(itemId);
  const inaccessible = () => notFound([`Item '${itemId.slice(0, 64)}' does not exist or is inaccessible.`]);
  if (!item || item.portalId !== user.portalId || req.pathParameters.username !== item.owner) throw inaccessible();
  if (!canManage(req.identity, item)) throw forbidden();
  checkFolder(req, item);
  if (!item.upload) {
    throw badRequest(what, [
      item.file
        ? "The item's file is whole (committed, or uploaded in one request): it takes no more parts."
        : "The item was not added with multipart=true: it takes no parts.",
    ]);
  }
  return item as Item & { upload: ItemUpload };
}

/**
 * An item operation addressed in a folder (`…/<u>/<folderId>/items/<id>/…`) reaches the item only in that folder,
 * as ArcGIS answers an item that is elsewhere.
 */
export function checkFolder(req: RestRequest, item: Item): void {
  const folderId = req.pathParameters.folderId;
  if (folderId !== undefined && item.ownerFolder !== folderId)
    throw badRequest("Item does not exist in this folder.", [], "CONT_0005");
}

const notTakingParts = (upload: ItemUpload) =>
  upload.state === "failed"
    ? `The item's upload failed (${upload.reason ?? "no reason kept"}): delete the item and upload again.`
    : "The item's upload was committed: it takes no more parts.";

/** Part numbers as a short list: runs of three or more as ranges, at most 20 entries. */
function numberList(numbers: readonly number[]): string {
  const runs: string[] = [];
  for (let i = 0; i < numbers.length;) {
    let j = i;
    while (j + 1 < numbers.length && (numbers[j + 1] as number) === (numbers[j] as number) + 1) j++;
    const a = numbers[i] as number;
    const b = numbers[j] as number;
    runs.push(j - i >= 2 ? `${a}–${b}` : j > i ? `${a}, ${b}` : String(a));
    i = j + 1;
  }
  return runs.length > 20 ? `${runs.slice(0, 20).join(", ")} and more` : runs.join(", ");
}

/** The numbers missing below the highest part kept (a commit needs 1…n, each once). */
function missingParts(parts: ReadonlyMap<number, number>): number[] {
  const highest = Math.max(0, ...parts.keys());
  const missing: number[] = [];
  for (let n = 1; n <= highest; n++) if (!parts.has(n)) missing.push(n);
  return missing;
}

const sizeMB = (bytes: number) => `${Math.round((bytes / 1024 / 1024) * 10) / 10} MB`;

/** POST …/content/users/<u>/items/<id>/addPart: `partNum` (1…10,000) and `file`, one part of the file. */
export const addPartOperation: FamilyOperation = {
  op: {
    name: "Add Item Part",
    postOnly: true,
    files: ["file"],
    defaultFormat: "json",
    bodyTooLarge: (_limit, got) => partTooLarge(got),
  },
  compute: async (req) => {
    const what = "Unable to add part.";
    const item = await uploadingItem(req, what);
    if (item.upload.state !== "partial") throw badRequest(what, [notTakingParts(item.upload)]);
    const raw = req.params.caseless("partNum") ?? "";
    const partNum = /^\d{1,5}$/.test(raw.trim()) ? Number(raw.trim()) : NaN;
    if (!(partNum >= 1 && partNum <= MAX_PART_NUMBER))
      throw badRequest(what, [
        `'partNum' must be a whole number from 1 to ${MAX_PART_NUMBER} (got '${raw.slice(0, 20)}').`,
      ]);
    const file = req.params.file("file");
    if (!file) throw badRequest(what, ["'file' (the part's bytes, sent as multipart/form-data) must be specified."]);
    if (file.bytes.length === 0) throw badRequest(what, ["The part is empty."]);
    if (file.bytes.length > maxPartBytes()) throw partTooLarge(file.bytes.length);
    const files = itemFiles();
    // One part's size, not a listing: a file of many parts costs each part the same.
    const before = (await files.partSize(item.itemId, partNum)) ?? 0;
    const delta = file.bytes.length - before;
    const max = config().maxItemFileBytes;
    if (item.upload.bytes + delta > max) {
      throw badRequest(what, [
        `A file uploaded in parts may be at most ${sizeMB(max)} once assembled (MAX_ITEM_FILE_MB); with this part it would be ${item.upload.bytes + delta} bytes.`,
      ]);
    }
    // Counted before it is kept: a crash between the two counts bytes no part holds (given back at commit or
    // delete), never keeps bytes nothing counts.
    try {
      await chargeUpload(item, delta, config().storageQuota);
    } catch (err) {
      if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
      if (err instanceof UploadStateError) {
        const now = await getItem(item.itemId);
        throw now?.upload
          ? badRequest(what, [notTakingParts(now.upload)])
          : notFound([`Item '${item.itemId}' does not exist or is inaccessible.`]);
      }
      if (err instanceof ItemBusyError)
        throw new ApiError(409, what, ["The item is being changed by other requests; try again."]);
      throw err;
    }
    try {
      await files.putPart(item.itemId, partNum, file.bytes);
    } catch (err) {
      await chargeUpload(item, -delta, config().storageQuota).catch((e: unknown) =>
        logger.warn("part's bytes not given back", { itemId: item.itemId, error: String(e) }),
      );
      throw err;
    }
    return { success: true, id: item.itemId };
  },
};

/**
 * Assembles a claimed upload into the item's file and makes the item whole; a file that is not what its type says
 * (or too large, or past a quota) fails the upload instead, its parts and counted bytes given back. Answers the
 * reason of a failure, or undefined.
 */
async function assemble(itemId: string, claimed: number): Promise<string | undefined> {
  // Read again once claimed: no part is counted after the claim, so these are the bytes the parts count.
  const item = await getItem(itemId);
  if (!item?.upload || item.upload.state !== "processing" || item.upload.claimed !== claimed) return undefined;
  const upload = item.upload;
  const current = { ...item, upload };
  const files = itemFiles();
  const fail = async (reason: string) => {
    await failUpload(current, claimed, reason);
    await files.remove(itemId);
    await files.removeParts(itemId);
    return reason;
  };
  try {
    const parts = await files.listParts(itemId);
    const numbers = [...parts.keys()].sort((a, b) => a - b);
    const missing = missingParts(parts);
    if (numbers.length === 0) return await fail("No parts were uploaded.");
    if (missing.length > 0) return await fail(`Parts ${numberList(missing)} are missing.`);
    const total = numbers.reduce((sum, n) => sum + (parts.get(n) ?? 0), 0);
    const max = config().maxItemFileBytes;
    if (total > max) return await fail(`The file would be ${total} bytes: at most ${sizeMB(max)} are taken.`);
    const spec = FILE_ITEM_TYPES[item.type];
    if (!spec) return await fail(`Items of type '${item.type}' take no file.`);
    const assembled = await files.assemble(itemId, numbers, spec.contentType);
    const problem = contentProblem(item.type, assembled.head, assembled.size);
    if (problem) return await fail(problem);
    try {
      await completeUpload(
        current,
        claimed,
        { name: upload.name, size: assembled.size, contentType: spec.contentType },
        config().storageQuota,
      );
    } catch (err) {
      if (err instanceof StorageQuotaError)
        return await fail(quotaExceeded(err.whose, config().storageQuota).details.join(" "));
      throw err;
    }
  } catch (err) {
    // Taken over after a stall, or deleted meanwhile: whoever holds it now finishes.
    if (err instanceof ClaimLostError) return undefined;
    throw err;
  }
  await files.removeParts(itemId).catch((e: unknown) => logger.warn("parts not removed", { itemId, error: String(e) }));
  return undefined;
}

/** What is wrong with an assembled file for its type (as a one-request upload is checked), or undefined. */
function contentProblem(type: string, head: Buffer, size: number): string | undefined {
  try {
    checkContent(type, head, size, "");
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err.details.join(" ");
    throw err;
  }
}

/** POST …/content/users/<u>/items/<id>/commit: the parts, in order, become the item's file (`async=true`: later). */
export const commitOperation: FamilyOperation = {
  op: { name: "Commit Item", postOnly: true, defaultFormat: "json" },
  compute: async (req) => {
    const what = "Unable to commit item.";
    const item = await uploadingItem(req, what);
    const problems: string[] = [];
    const later = boolParam(req.params.caseless("async"), "async", problems) ?? false;
    const type = req.params.caseless("type");
    if (type && type !== item.type)
      problems.push(`The item is of type '${item.type}': it cannot be committed as '${type.slice(0, 64)}'.`);
    if (problems.length > 0) throw badRequest(what, problems);
    if (item.upload.state !== "partial") throw badRequest(what, [notTakingParts(item.upload)]);
    const parts = await itemFiles().listParts(item.itemId);
    if (parts.size === 0) throw badRequest(what, ["No parts were uploaded: add them with addPart first."]);
    const missing = missingParts(parts);
    if (missing.length > 0) {
      throw badRequest(what, [
        `Parts ${numberList(missing)} are missing: parts 1 to ${Math.max(...parts.keys())} must all be added before commit.`,
      ]);
    }
    const claimed = later ? 0 : Date.now();
    if (!(await claimUpload(item, "partial", claimed))) {
      const now = await getItem(item.itemId);
      throw now?.upload
        ? badRequest(what, [notTakingParts(now.upload)])
        : notFound([`Item '${item.itemId}' does not exist or is inaccessible.`]);
    }
    if (!later) {
      const reason = await assemble(item.itemId, claimed);
      if (reason) throw badRequest(what, [reason]);
    }
    return { success: true, id: item.itemId };
  },
};

/**
 * An item's status as ArcGIS answers it: `partial` while parts come, `processing` while committing, `failed` with
 * the reason, else `completed`. A caller who may change the item assembles an upload no one is assembling.
 */
export async function uploadStatus(req: RestRequest, item: Item): Promise<{ status: string; statusMessage: string }> {
  let upload = item.upload;
  if (upload?.state === "processing" && canManage(req.identity, item)) {
    const now = Date.now();
    const stale = (upload.claimed ?? 0) < now - CLAIM_LEASE_MS;
    if (stale && (await claimUpload(item, "processing", now, now - CLAIM_LEASE_MS))) {
      await assemble(item.itemId, now);
      upload = (await getItem(item.itemId))?.upload;
    }
  }
  if (!upload) return { status: "completed", statusMessage: "completed" };
  if (upload.state === "failed") return { status: "failed", statusMessage: upload.reason ?? "failed" };
  return { status: upload.state, statusMessage: upload.state };
}

/**
 * POST …/content/users/<u>/items/<id>/cancel: an upload in parts given up before its commit: the parts go, the item
 * with them, and what the parts counted against the quotas is given back (ArcGIS REST JS's cancelItemUpload).
 */
export const cancelOperation: FamilyOperation = {
  op: { name: "Cancel Item Upload", postOnly: true, defaultFormat: "json" },
  compute: async (req) => {
    const what = "Unable to cancel the upload.";
    const item = await uploadingItem(req, what);
    const committed = () =>
      badRequest(what, [
        item.upload.state === "failed"
          ? `The item's upload failed (${item.upload.reason ?? "no reason kept"}): delete the item instead.`
          : "The item's upload was committed: it can no longer be cancelled (delete the item instead).",
      ]);
    if (item.upload.state !== "partial") throw committed();
    try {
      await cancelUpload(item);
    } catch (err) {
      if (err instanceof UploadStateError)
        throw badRequest(what, ["The item's upload was committed meanwhile: it can no longer be cancelled."]);
      if (err instanceof ItemGoneError) throw notFound([`Item '${item.itemId}' does not exist or is inaccessible.`]);
      if (err instanceof ItemBusyError)
        throw new ApiError(409, what, ["The item is being changed by other requests; try again."]);
      throw err;
    }
    // After the item: a failure here leaves parts no item names, which the sweeper removes.
    await itemFiles()
      .removeParts(item.itemId)
      .catch((e: unknown) => logger.warn("parts not removed", { itemId: item.itemId, error: String(e) }));
    return { success: true, id: item.itemId };
  },
};

/**
 * GET|POST …/content/users/<u>/items/<id>/parts: the numbers of the parts kept so far, as ArcGIS lists them (strings,
 * in order), so a client can send again the ones that did not arrive (ArcGIS REST JS's getItemParts).
 */
export const partsOperation: FamilyOperation = {
  op: { name: "Item Parts", defaultFormat: "json" },
  compute: async (req) => {
    const item = await uploadingItem(req, "Unable to list the item's parts.");
    const parts = await itemFiles().listParts(item.itemId);
    return { parts: [...parts.keys()].sort((a, b) => a - b).map(String) };
  },
};
