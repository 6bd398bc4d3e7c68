// A cloud store's files copied into a function's temporary storage when it is nearly full: older copies make
// room, least recently copied first, and a file that cannot fit is refused saying what to change. A full disk
// cannot be made on a shared machine, so the free space statfs reports is the one thing stood in for here (a
// mock of a fault); the copies, the S3 server and the files are real.
import { PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { LocalS3 } from "#infra/local/s3.ts";
import type { Storage } from "#shared/storage/storage.ts";
import { StorageError } from "#shared/storage/storage.ts";
import { startS3WithBucket, useS3Environment } from "./helpers/s3.ts";

/** The free space statfs reports (undefined: the real figure). */
let freeNow: (() => number) | undefined;
vi.mock("node:fs/promises", async (original) => {
  const real = await original<typeof import("node:fs/promises")>();
  return {
    ...real,
    statfs: async (path: string) => {
      const out = await real.statfs(path);
      return freeNow ? { ...out, bsize: 1, bavail: freeNow() } : out;
    },
  };
});

const BUCKET = "mapgate-room-test";
const MB = 1024 ** 2;
let s3: LocalS3;
let admin: S3Client;
let store: Storage;

beforeAll(async () => {
  ({ s3, admin } = await startS3WithBucket(BUCKET));
  for (const [Key, size] of [
    ["a.gpkg", 1],
    ["b.gpkg", 2],
    ["c.gpkg", 3],
  ] as const)
    await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body: Buffer.alloc(size * MB, size) }));
  useS3Environment(s3);
  const { S3Storage } = await import("#shared/storage/s3.ts");
  store = new S3Storage(BUCKET, "");
});

afterAll(async () => {
  admin?.destroy();
  await s3?.close();
});

describe("copies in a nearly full temporary storage", () => {
  it("removes the least recently copied files until the new one fits, and refuses one that never can", async () => {
    const a = await store.localFile("a.gpkg", 100 * MB);
    await new Promise((r) => setTimeout(r, 20));
    const b = await store.localFile("b.gpkg", 100 * MB);
    expect(a && existsSync(a.file)).toBe(true);
    expect(b && existsSync(b.file)).toBe(true);
    // c needs 3 MB and 16 MB to spare; 21 MB less what the copies of a (1 MB) and b (2 MB) hold is free: it fits
    // once a is gone, so a (copied first) goes and b stays.
    const held = (file: string | undefined, bytes: number) => (file && existsSync(file) ? bytes : 0);
    freeNow = () => 21 * MB - held(a?.file, MB) - held(b?.file, 2 * MB);
    const c = await store.localFile("c.gpkg", 100 * MB);
    expect(c && existsSync(c.file)).toBe(true);
    expect(a && existsSync(a.file)).toBe(false);
    expect(b && existsSync(b.file)).toBe(true);

    freeNow = () => MB;
    const refused = await store.localFile("a.gpkg", 100 * MB).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as Error).message).toMatch(/larger than the function's free temporary storage.*ephemeralStorageMb/);
    freeNow = undefined;
  });
});
