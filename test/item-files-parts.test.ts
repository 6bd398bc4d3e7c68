// The item-files store's parts, on both of its backings: a folder (the local engine) and an S3 bucket (the stack's,
// here s3rver through the same SDK calls): parts kept and replaced by number, listed with their sizes, assembled in
// the order given into the item's file (on S3 through a multipart upload of bounded chunks, so a file larger than a
// chunk crosses a chunk boundary), a failed assembly leaving no file, and the parts removed; the uploads underway
// listed (by their mark or their parts) for the sweep of abandoned uploads; and a file read back as publishing reads
// it: its size, and its bytes as a stream, whole or a range of them.
import type { S3Client } from "@aws-sdk/client-s3";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LocalS3 } from "#infra/local/s3.ts";
import type { ItemFiles } from "#shared/stores/item-files.ts";
import { startS3WithBucket, useS3Environment } from "./helpers/s3.ts";

const BUCKET = "mapgate-parts-test";
const MB = 1024 * 1024;
let s3: LocalS3;
let admin: S3Client;
let folder: string;
const stores: Record<string, ItemFiles> = {};

/** Bytes that differ at every offset, so a part out of place shows. */
const pattern = (n: number, seed: number) => {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return b;
};

beforeAll(async () => {
  ({ s3, admin } = await startS3WithBucket(BUCKET));
  // As the local engine sets them for its functions (infra/local/engine.ts).
  useS3Environment(s3, { AWS_REQUEST_CHECKSUM_CALCULATION: "WHEN_REQUIRED" });
  const { openItemFiles } = await import("#shared/stores/item-files.ts");
  folder = mkdtempSync(join(tmpdir(), "mapgate-parts-"));
  stores.folder = openItemFiles({ dir: folder });
  stores.bucket = openItemFiles({ bucket: BUCKET });
});

afterAll(async () => {
  admin?.destroy();
  await s3?.close();
  if (folder) rmSync(folder, { recursive: true, force: true });
});

describe.each(["folder", "bucket"])("parts in the %s store", (kind) => {
  const store = () => stores[kind] as ItemFiles;

  it("keeps, replaces, lists and assembles parts in order, then removes them", async () => {
    const itemId = kind === "folder" ? "a".repeat(32) : "b".repeat(32);
    // 3 × 3.5 MB: on S3 the file crosses the 8 MiB chunk of the multipart upload it is written through.
    const parts = [1, 2, 3].map((n) => pattern(3.5 * MB, n));
    await store().putPart(itemId, 3, parts[2] as Buffer);
    await store().putPart(itemId, 1, Buffer.from("to be replaced"));
    await store().putPart(itemId, 2, parts[1] as Buffer);
    await store().putPart(itemId, 1, parts[0] as Buffer);
    expect([...(await store().listParts(itemId))]).toEqual([
      [1, 3.5 * MB],
      [2, 3.5 * MB],
      [3, 3.5 * MB],
    ]);
    expect(await store().partSize(itemId, 2)).toBe(3.5 * MB);
    expect(await store().partSize(itemId, 4)).toBeUndefined();
    const assembled = await store().assemble(itemId, [1, 2, 3], "text/csv; charset=utf-8");
    const whole = Buffer.concat(parts);
    expect(assembled.size).toBe(whole.length);
    expect(assembled.head.equals(whole.subarray(0, 64))).toBe(true);
    expect((await store().get(itemId))?.equals(whole)).toBe(true);
    await store().removeParts(itemId);
    expect((await store().listParts(itemId)).size).toBe(0);
    // The file stays; removing parts again is nothing.
    expect((await store().get(itemId))?.length).toBe(whole.length);
    await store().removeParts(itemId);
    await store().remove(itemId);
  });

  it("fails an assembly naming a part that is not there, leaving no file", async () => {
    const itemId = kind === "folder" ? "c".repeat(32) : "d".repeat(32);
    await store().putPart(itemId, 1, Buffer.from("name\n"));
    await expect(store().assemble(itemId, [1, 2], "text/csv")).rejects.toThrow();
    expect(await store().get(itemId)).toBeUndefined();
    // (s3rver answers no ListMultipartUploads: that the open upload is aborted is not seen here.)
    await store().removeParts(itemId);
    expect((await store().listParts(itemId)).size).toBe(0);
  });

  it("lists the uploads underway, by their mark or their parts, with their parts' bytes and last change", async () => {
    const marked = kind === "folder" ? "e".repeat(32) : "f".repeat(32);
    const unmarked = kind === "folder" ? "1".repeat(32) : "2".repeat(32);
    const started = Date.now() - 2000;
    await store().markUpload(marked);
    await store().putPart(marked, 1, Buffer.from("name\n"));
    await store().putPart(marked, 2, Buffer.from("a\nb\n"));
    // Parts without a mark: an upload from before marks were kept.
    await store().putPart(unmarked, 1, Buffer.from("xyz"));
    const underway = (await store().uploadsUnderway()).sort((a, b) => a.itemId.localeCompare(b.itemId));
    const mine = underway.filter((u) => u.itemId === marked || u.itemId === unmarked);
    expect(
      mine.map(({ itemId, bytes }) => ({ itemId, bytes })).sort((a, b) => a.itemId.localeCompare(b.itemId)),
    ).toEqual(
      [
        { itemId: unmarked, bytes: 3 },
        { itemId: marked, bytes: 9 },
      ].sort((a, b) => a.itemId.localeCompare(b.itemId)),
    );
    for (const u of mine) expect(u.lastChanged).toBeGreaterThan(started);
    // Removing the parts removes the mark: nothing is underway any more.
    await store().removeParts(marked);
    await store().removeParts(unmarked);
    const left = (await store().uploadsUnderway()).map((u) => u.itemId);
    expect(left).not.toContain(marked);
    expect(left).not.toContain(unmarked);
    // A mark alone (an upload that never got a part) is underway too.
    await store().markUpload(marked);
    expect((await store().uploadsUnderway()).find((u) => u.itemId === marked)).toMatchObject({ bytes: 0 });
    await store().removeParts(marked);
    expect((await store().uploadsUnderway()).map((u) => u.itemId)).not.toContain(marked);
  });
});

describe.each(["folder", "bucket"])("a file read as a stream from the %s store", (kind) => {
  const store = () => stores[kind] as ItemFiles;
  const read = async (stream: NodeJS.ReadableStream | undefined) => {
    const chunks: Buffer[] = [];
    for await (const chunk of stream ?? []) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  };

  it("gives its size, its bytes a chunk at a time, and a range of them; nothing for a file that is not there", async () => {
    const id = kind === "folder" ? "a1".repeat(16) : "b1".repeat(16);
    const bytes = pattern(3 * MB + 17, 5);
    await store().put(id, bytes, "text/csv");
    expect(await store().size(id)).toBe(bytes.length);
    expect((await read(await store().stream(id))).equals(bytes)).toBe(true);
    // `end` included, as HTTP's Range counts.
    expect((await read(await store().stream(id, { start: 0, end: 15 }))).equals(bytes.subarray(0, 16))).toBe(true);
    expect(
      (await read(await store().stream(id, { start: MB, end: 2 * MB - 1 }))).equals(bytes.subarray(MB, 2 * MB)),
    ).toBe(true);
    const missing = "c2".repeat(16);
    expect(await store().size(missing)).toBeUndefined();
    expect(await store().stream(missing)).toBeUndefined();
    await store().remove(id);
    expect(await store().size(id)).toBeUndefined();
  });
});
