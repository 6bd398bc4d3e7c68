// Files uploaded as items (`addItem` with `file`): which item types take a file, what each must look like, and how
// the uploaded item is made. The file is kept as sent; it is served back only as an attachment (item-data), and
// anything that reads its content (publishing) copies rows out of it into files mapgate makes.
import { extname } from "node:path";
import { config } from "#shared/config.ts";
import { logger } from "#shared/log.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import type { UploadedFile } from "#shared/http/params.ts";
import { itemId as newItemId } from "#shared/ids.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import { type Item, putFileItem, StorageQuotaError } from "#shared/stores/items.ts";

interface FileType {
  readonly extensions: readonly string[];
  /** What the file is served as (never the type the uploader declared). */
  readonly contentType: string;
  /** The first bytes every such file starts with, where the format has them. */
  readonly magic?: readonly Buffer[];
  /** The format's name in an error. */
  readonly what: string;
}

const ZIP = [Buffer.from("PK\u0003\u0004"), Buffer.from("PK\u0005\u0006")];
const OLE = [Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])];

/** The item types a file is uploaded as, by their ArcGIS names; data first, then documents. */
export const FILE_ITEM_TYPES: Readonly<Record<string, FileType>> = {
  CSV: { extensions: [".csv", ".txt"], contentType: "text/csv; charset=utf-8", what: "a CSV file" },
  GeoJson: { extensions: [".geojson", ".json"], contentType: "application/geo+json", what: "a GeoJSON file" },
  Shapefile: { extensions: [".zip"], contentType: "application/zip", magic: ZIP, what: "a zipped shapefile" },
  GeoPackage: {
    extensions: [".gpkg"],
    contentType: "application/geopackage+sqlite3",
    magic: [Buffer.from("SQLite format 3\u0000")],
    what: "a GeoPackage",
  },
  PDF: { extensions: [".pdf"], contentType: "application/pdf", magic: [Buffer.from("%PDF-")], what: "a PDF" },
  Image: {
    extensions: [".png", ".jpg", ".jpeg", ".gif"],
    contentType: "application/octet-stream",
    magic: [Buffer.from([0x89, 0x50, 0x4e, 0x47]), Buffer.from([0xff, 0xd8, 0xff]), Buffer.from("GIF8")],
    what: "a PNG, JPEG or GIF image",
  },
  "Microsoft Word": {
    extensions: [".docx", ".doc"],
    contentType: "application/octet-stream",
    magic: [...ZIP, ...OLE],
    what: "a Word document",
  },
  "Microsoft Excel": {
    extensions: [".xlsx", ".xls"],
    contentType: "application/octet-stream",
    magic: [...ZIP, ...OLE],
    what: "an Excel workbook",
  },
  "Microsoft Powerpoint": {
    extensions: [".pptx", ".ppt"],
    contentType: "application/octet-stream",
    magic: [...ZIP, ...OLE],
    what: "a PowerPoint presentation",
  },
  KML: { extensions: [".kml"], contentType: "application/vnd.google-earth.kml+xml", what: "a KML file" },
};

const EXTENSION_TYPES = new Map(
  Object.entries(FILE_ITEM_TYPES).flatMap(([type, t]) => t.extensions.map((e) => [e, type] as const)),
);

// eslint-disable-next-line no-control-regex -- control characters are exactly what this removes
const UNSAFE_NAME = /[\u0000-\u001f\u007f/\\]/g;

/**
 * The file's name as an item keeps it: its last path segment (browsers on some systems send a whole path), no
 * control characters or separators, at most 250 characters keeping the extension. Never used as a path.
 */
export function itemFileName(raw: string): string {
  const last = raw.split(/[/\\]/).pop() ?? "";
  const clean = last.replace(UNSAFE_NAME, "").trim();
  if (clean.length <= 250) return clean;
  const ext = extname(clean).slice(0, 20);
  return clean.slice(0, 250 - ext.length) + ext;
}

/** The item type a file is uploaded as: the one asked (checked against the file's name), else its extension's. */
export function fileItemType(asked: string | undefined, name: string, what: string): string {
  const ext = extname(name).toLowerCase();
  const types = Object.keys(FILE_ITEM_TYPES);
  const type = asked === undefined || asked === "" ? EXTENSION_TYPES.get(ext) : asked;
  if (type === undefined || !(type in FILE_ITEM_TYPES)) {
    throw badRequest(what, [
      type === undefined
        ? `The type of '${name.slice(0, 100)}' is not known from its name: give 'type', one of ${types.join(", ")}.`
        : `A file cannot be added as an item of type '${type.slice(0, 64)}': the types taking a file are ${types.join(", ")}.`,
    ]);
  }
  const spec = FILE_ITEM_TYPES[type] as FileType;
  if (!spec.extensions.includes(ext)) {
    throw badRequest(what, [
      `An item of type '${type}' is ${spec.what}, named ${spec.extensions.map((e) => `*${e}`).join(" or ")}; got '${name.slice(0, 100)}'.`,
    ]);
  }
  return type;
}

/**
 * Refuses a file whose first bytes (`head`, at least the longest magic's length when the file has as many) are not
 * those of its type (a renamed executable), or an empty one.
 */
export function checkContent(type: string, head: Buffer, size: number, what: string): void {
  const spec = FILE_ITEM_TYPES[type] as FileType;
  if (size === 0) throw badRequest(what, ["The file is empty."]);
  if (spec.magic && !spec.magic.some((m) => head.subarray(0, m.length).equals(m))) {
    throw badRequest(what, [`The file is not ${spec.what}: its content does not begin as one does.`]);
  }
}

const MB = 1024 * 1024;

/** A refusal naming whose quota and how large it is (403, as a permission the caller lacks for more bytes). */
export function quotaExceeded(whose: "user" | "organization", quota: { userBytes: number; organizationBytes: number }) {
  const limit = whose === "user" ? quota.userBytes : quota.organizationBytes;
  return new ApiError(403, "Storage quota exceeded.", [
    `${whose === "user" ? "Your" : "Your organization's"} uploaded files may take at most ${Math.round(limit / MB)} MB: delete some, or ask an administrator for more.`,
  ]);
}

/**
 * A refusal of what would grow a hosted service's data (an edit, an attachment) while its owner, or their organization,
 * is past a quota: told as the service's, since the caller may be another member editing it.
 */
export function serviceQuotaExceeded(
  whose: "user" | "organization",
  quota: { userBytes: number; organizationBytes: number },
) {
  const limit = whose === "user" ? quota.userBytes : quota.organizationBytes;
  return new ApiError(403, "Storage quota exceeded.", [
    `The service's data is counted against ${whose === "user" ? "its owner's" : "the organization's"} storage quota (${Math.round(limit / MB)} MB), which it would pass: delete features or other items, or ask an administrator for more.`,
  ]);
}

/** What the uploader says of the new item (title, tags…), validated by addItem. */
export interface UploadDescription {
  readonly portalId: string;
  readonly owner: string;
  readonly type: string | undefined;
  readonly title: string | undefined;
  readonly tags: readonly string[];
  readonly description: string;
  readonly snippet: string;
  /** `filename`: the name to keep when it differs from the file part's (clients sending a Blob). */
  readonly filename: string | undefined;
  /** The owner's folder the item goes into (checked to be theirs); absent: their root folder. */
  readonly folder?: string;
}

/**
 * Makes the item of an uploaded file: the file kept first, then the item and its bytes counted against the
 * owner's and organization's quotas in one transaction; a refused transaction removes the file again.
 */
/**
 * A new private item of the uploader's for a file named `name` (titled after it unless a title is given), without
 * its file: the caller adds the file kept, or where an upload in parts stands.
 */
export function newFileItem(d: UploadDescription, name: string, type: string): Item {
  const now = Date.now();
  return {
    itemId: newItemId(),
    portalId: d.portalId,
    owner: d.owner,
    title: d.title || name.replace(/\.[^.]*$/, "") || name,
    type,
    typeKeywords: [],
    url: "",
    tags: d.tags,
    description: d.description,
    snippet: d.snippet,
    access: "private",
    created: now,
    modified: now,
    ...(d.folder ? { ownerFolder: d.folder } : {}),
  };
}

export async function addFileItem(file: UploadedFile, d: UploadDescription, what: string): Promise<Item> {
  const name = itemFileName(d.filename || file.filename);
  if (name === "") throw badRequest(what, ["The file has no name: give 'filename' (e.g. sites.csv)."]);
  const type = fileItemType(d.type, name, what);
  checkContent(type, file.bytes, file.bytes.length, what);
  const spec = FILE_ITEM_TYPES[type] as FileType;
  const item: Item & { file: NonNullable<Item["file"]> } = {
    ...newFileItem(d, name, type),
    file: { name, size: file.bytes.length, contentType: spec.contentType },
  };
  const files = itemFiles();
  await files.put(item.itemId, file.bytes, spec.contentType);
  try {
    await putFileItem(item, config().storageQuota);
  } catch (err) {
    // The refusal is what the caller hears; a file left by a failed removal is only an orphan (logged).
    await files
      .remove(item.itemId)
      .catch((e: unknown) => logger.warn("item file not removed", { itemId: item.itemId, error: String(e) }));
    if (err instanceof StorageQuotaError) throw quotaExceeded(err.whose, config().storageQuota);
    throw err;
  }
  return item;
}
