// Attachments' bytes and what they are. The bytes are kept in object storage under the hosted data's prefix, a fresh
// key per file (`attachments/<service item id>/<32 hex>`: the item-files bucket's `hosted/` on AWS, the data folder's
// `hosted/` locally), never overwritten, so a row names bytes that were whole before it was written and a change
// removes old bytes only once its row no longer names them. What a file is comes from its own bytes (and, for the
// types without a signature, its name): only what field apps send is taken (images, PDF, audio, video, plain text,
// office documents), and it is always served as data (an attachment in a sandbox, never sniffed).
//
// What they count against the owner's storage is shared/hosted/attachment-charges.ts's (this module reaches no table:
// the service function reads attachments through it).
import { bucketClient, hostedDataPlace } from "#shared/hosted/data-place.ts";
import { randomBytes } from "node:crypto";
import { mkdir, open, readdir, readFile, rename, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { config } from "#shared/config.ts";
import { checkedItemId } from "#shared/features/hosted-source.ts";
import { logger } from "#shared/log.ts";

/**
 * The largest attachment, in bytes: under Lambda's 6 MB request (a multipart upload, base64 in the event) and answer
 * (the bytes served back, base64) alike. An upload is also bounded first by the request body's limit (MAX_BODY_BYTES).
 */
export const MAX_ATTACHMENT_BYTES = 4 * 1024 * 1024;
/** The longest attachment name kept (characters). */
export const MAX_ATTACHMENT_NAME = 255;

const PREFIX = "attachments";
/** Sizes asked of the bucket at once when attachments are removed. */
const HEAD_CONCURRENCY = 16;
const KEY = /^[0-9a-f]{32}$/;

const folderOf = (dir: string, serviceItemId: string) => join(dir, PREFIX, checkedItemId(serviceItemId));
const objectKey = (serviceItemId: string, key: string) => `hosted/${PREFIX}/${checkedItemId(serviceItemId)}/${key}`;
function checkedKey(key: string): string {
  if (!KEY.test(key)) throw new Error("an attachment's key is not one mapgate makes");
  return key;
}

/**
 * Keeps an attachment's bytes under a fresh key and answers it: whole before the key is answered (a folder's file is
 * written beside its name, synced, then renamed), so a crash leaves no half file under a key any row could name.
 */
export async function writeAttachmentBytes(serviceItemId: string, bytes: Buffer): Promise<string> {
  const key = randomBytes(16).toString("hex");
  const w = hostedDataPlace();
  if ("dir" in w) {
    const folder = folderOf(w.dir, serviceItemId);
    await mkdir(folder, { recursive: true, mode: 0o700 });
    const part = join(folder, `.${key}.part`);
    const handle = await open(part, "wx", 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(part, join(folder, key));
    return key;
  }
  const { s3, client } = await bucketClient();
  await client.send(
    new s3.PutObjectCommand({
      Bucket: w.bucket,
      Key: objectKey(serviceItemId, key),
      Body: bytes,
      ContentLength: bytes.length,
    }),
  );
  return key;
}

/** An attachment's bytes; undefined when they are not kept. */
export async function readAttachmentBytes(serviceItemId: string, key: string): Promise<Buffer | undefined> {
  const w = hostedDataPlace();
  if ("dir" in w) {
    try {
      return await readFile(join(folderOf(w.dir, serviceItemId), checkedKey(key)));
    } catch (err) {
      if ((err as { code?: string }).code === "ENOENT") return undefined;
      throw err;
    }
  }
  const { s3, client } = await bucketClient();
  try {
    const got = await client.send(
      new s3.GetObjectCommand({ Bucket: w.bucket, Key: objectKey(serviceItemId, checkedKey(key)) }),
    );
    return got.Body ? Buffer.from(await got.Body.transformToByteArray()) : undefined;
  } catch (err) {
    if ((err as { name?: string }).name === "NoSuchKey") return undefined;
    throw err;
  }
}

/**
 * Removes bytes no row names any more (after the change that let go of them committed), answering how many bytes
 * went. A failure is logged, never thrown: the change is kept, and what is left is bytes no row names.
 */
export async function deleteAttachmentBytes(serviceItemId: string, keys: readonly string[]): Promise<number> {
  if (keys.length === 0) return 0;
  let removed = 0;
  try {
    const w = hostedDataPlace();
    if ("dir" in w) {
      for (const key of keys) {
        const file = join(folderOf(w.dir, serviceItemId), checkedKey(key));
        const size = (await stat(file).catch(() => undefined))?.size;
        if (size === undefined) continue;
        await rm(file, { force: true });
        removed += size;
      }
    } else {
      const { s3, client } = await bucketClient();
      // Each object's size first (a few at a time), then the found ones deleted in batches: a key not found (or not
      // readable) is neither deleted nor given back.
      const found: { Key: string; size: number }[] = [];
      for (let i = 0; i < keys.length; i += HEAD_CONCURRENCY) {
        const sizes = await Promise.all(
          keys.slice(i, i + HEAD_CONCURRENCY).map(async (key) => {
            const Key = objectKey(serviceItemId, checkedKey(key));
            const head = await client.send(new s3.HeadObjectCommand({ Bucket: w.bucket, Key })).catch(() => undefined);
            return head ? { Key, size: head.ContentLength ?? 0 } : undefined;
          }),
        );
        for (const f of sizes) if (f) found.push(f);
      }
      for (let i = 0; i < found.length; i += 1000) {
        const batch = found.slice(i, i + 1000);
        const answer = await client.send(
          new s3.DeleteObjectsCommand({ Bucket: w.bucket, Delete: { Objects: batch.map(({ Key }) => ({ Key })) } }),
        );
        const failed = new Set((answer.Errors ?? []).map((e) => e.Key));
        for (const f of batch) if (!failed.has(f.Key)) removed += f.size;
      }
    }
  } catch (err) {
    logger.warn("attachment bytes not removed", { itemId: serviceItemId, keys: keys.length, error: String(err) });
  }
  return removed;
}

/**
 * Removes every attachment's bytes of a service (its data dropped with it, or replaced by an overwrite), answering
 * how many bytes went.
 */
export async function deleteServiceAttachments(serviceItemId: string): Promise<number> {
  const w = config().hostedData;
  if (!w) return 0;
  let removed = 0;
  if ("dir" in w) {
    const folder = folderOf(w.dir, serviceItemId);
    const names = await readdir(folder).catch(() => [] as string[]);
    for (const name of names) removed += (await stat(join(folder, name)).catch(() => undefined))?.size ?? 0;
    await rm(folder, { recursive: true, force: true });
  } else {
    const { s3, client } = await bucketClient();
    const Prefix = `hosted/${PREFIX}/${checkedItemId(serviceItemId)}/`;
    let ContinuationToken: string | undefined;
    do {
      const page = await client.send(
        new s3.ListObjectsV2Command({ Bucket: w.bucket, Prefix, ...(ContinuationToken ? { ContinuationToken } : {}) }),
      );
      const objects = (page.Contents ?? []).flatMap((o) => (o.Key ? [{ Key: o.Key }] : []));
      if (objects.length > 0)
        await client.send(new s3.DeleteObjectsCommand({ Bucket: w.bucket, Delete: { Objects: objects } }));
      for (const o of page.Contents ?? []) removed += o.Size ?? 0;
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
  }
  return removed;
}

// --- what a file is ------------------------------------------------------------------------------------------------

interface Kind {
  readonly type: string;
  /** The extensions a file of this kind is named with (the first when a name has none of them). */
  readonly extensions: readonly string[];
}

const at = (bytes: Buffer, offset: number, text: string) =>
  bytes.length >= offset + text.length && bytes.toString("latin1", offset, offset + text.length) === text;
const starts = (bytes: Buffer, magic: readonly number[]) =>
  bytes.length >= magic.length && magic.every((b, i) => bytes[i] === b);

/** An ISO base media file's brand (MP4, MOV, 3GP, HEIC, M4A), read from its `ftyp` box. */
function isoBrand(bytes: Buffer): string | undefined {
  return at(bytes, 4, "ftyp") ? bytes.toString("latin1", 8, 12) : undefined;
}

/** A file whose bytes say what it is (their signature). */
function bySignature(bytes: Buffer): Kind | undefined {
  if (starts(bytes, [0xff, 0xd8, 0xff])) return { type: "image/jpeg", extensions: ["jpg", "jpeg"] };
  if (starts(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    return { type: "image/png", extensions: ["png"] };
  if (at(bytes, 0, "GIF87a") || at(bytes, 0, "GIF89a")) return { type: "image/gif", extensions: ["gif"] };
  if (at(bytes, 0, "RIFF") && at(bytes, 8, "WEBP")) return { type: "image/webp", extensions: ["webp"] };
  if (at(bytes, 0, "II*\u0000") || at(bytes, 0, "MM\u0000*"))
    return { type: "image/tiff", extensions: ["tif", "tiff"] };
  if (at(bytes, 0, "BM") && bytes.length > 14) return { type: "image/bmp", extensions: ["bmp"] };
  if (at(bytes, 0, "%PDF-")) return { type: "application/pdf", extensions: ["pdf"] };
  if (at(bytes, 0, "ID3") || (bytes.length > 2 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0))
    return { type: "audio/mpeg", extensions: ["mp3"] };
  if (at(bytes, 0, "RIFF") && at(bytes, 8, "WAVE")) return { type: "audio/wav", extensions: ["wav"] };
  if (at(bytes, 0, "RIFF") && at(bytes, 8, "AVI ")) return { type: "video/x-msvideo", extensions: ["avi"] };
  if (at(bytes, 0, "OggS")) return { type: "audio/ogg", extensions: ["ogg", "oga"] };
  if (at(bytes, 0, "#!AMR")) return { type: "audio/amr", extensions: ["amr"] };
  if (starts(bytes, [0x1a, 0x45, 0xdf, 0xa3])) return { type: "video/webm", extensions: ["webm"] };
  const brand = isoBrand(bytes);
  if (brand !== undefined) {
    if (["heic", "heix", "heim", "heis", "mif1", "msf1"].includes(brand))
      return { type: "image/heic", extensions: ["heic", "heif"] };
    if (brand === "M4A ") return { type: "audio/mp4", extensions: ["m4a"] };
    if (brand === "qt  ") return { type: "video/quicktime", extensions: ["mov"] };
    if (brand.startsWith("3g")) return { type: "video/3gpp", extensions: ["3gp"] };
    return { type: "video/mp4", extensions: ["mp4", "m4v"] };
  }
  return undefined;
}

/** Office documents: a zip (Office Open XML) or a compound file (the older formats), told apart by their name. */
const OFFICE: Readonly<Record<string, { readonly zip: boolean; readonly type: string }>> = {
  docx: { zip: true, type: "application/vnd.openxmlformats-officedocument.wordprocessingml.document" },
  xlsx: { zip: true, type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" },
  pptx: { zip: true, type: "application/vnd.openxmlformats-officedocument.presentationml.presentation" },
  odt: { zip: true, type: "application/vnd.oasis.opendocument.text" },
  ods: { zip: true, type: "application/vnd.oasis.opendocument.spreadsheet" },
  doc: { zip: false, type: "application/msword" },
  xls: { zip: false, type: "application/vnd.ms-excel" },
  ppt: { zip: false, type: "application/vnd.ms-powerpoint" },
};
/** Text without a signature, taken by its name when its bytes are UTF-8 text. */
const TEXT: Readonly<Record<string, string>> = { txt: "text/plain", csv: "text/csv" };

/** What the allowlist takes, said in a refusal. */
export const ALLOWED_KINDS =
  "images (JPEG, PNG, GIF, WebP, HEIC, TIFF, BMP), PDF, audio (MP3, M4A, WAV, OGG, AMR), video (MP4, MOV, 3GP, WebM, AVI), text (.txt, .csv) and office documents (.docx, .xlsx, .pptx, .odt, .ods, .doc, .xls, .ppt)";

const isUtf8Text = (bytes: Buffer) => {
  // A NUL or other control character (but tab and line ends) is binary.
  if (bytes.some((b) => b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d)) return false;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
};

/** A file's name as kept: its last path segment, without control characters, at most MAX_ATTACHMENT_NAME. */
export function attachmentName(raw: string): string {
  const last = raw.slice(Math.max(raw.lastIndexOf("/"), raw.lastIndexOf("\\")) + 1);
  // eslint-disable-next-line no-control-regex -- control characters are never kept in a name
  const base = last.replace(/[\u0000-\u001f\u007f]/g, "");
  return base.trim().slice(0, MAX_ATTACHMENT_NAME);
}

/**
 * The content type of an attachment from its bytes (and, for office documents and text, its name), or why it is not
 * taken: its declared type is never trusted (a script named photo.jpg is not a JPEG).
 */
export function attachmentType(bytes: Buffer, name: string): { type: string } | { refused: string } {
  const dot = name.lastIndexOf(".");
  const extension = dot >= 0 ? name.slice(dot + 1).toLowerCase() : "";
  const signed = bySignature(bytes);
  if (signed) return { type: signed.type };
  const office = OFFICE[extension];
  if (office) {
    const ok = office.zip
      ? starts(bytes, [0x50, 0x4b, 0x03, 0x04])
      : starts(bytes, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1]);
    if (ok) return { type: office.type };
    return { refused: `'${name.slice(0, 64)}' is not the office document its name says.` };
  }
  const text = TEXT[extension];
  if (text) {
    if (isUtf8Text(bytes)) return { type: `${text}; charset=utf-8` };
    return { refused: `'${name.slice(0, 64)}' is not UTF-8 text.` };
  }
  return {
    refused: `'${name.slice(0, 64)}' is not a kind of file attachments take: ${ALLOWED_KINDS}.`,
  };
}
