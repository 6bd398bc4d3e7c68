// Folder and cloud stores read alike: the same files in a folder and in a bucket of the local S3 server,
// read through FolderStorage and through S3Storage with the SDK configured from the environment only, as
// the local engine configures it.
import { Readable } from "node:stream";
import { mkdir, mkdtemp, realpath, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import {
  CreateBucketCommand,
  GetObjectCommand,
  paginateListObjectsV2,
  PutObjectCommand,
  S3Client,
} from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type LocalS3, startS3 } from "#infra/local/s3.ts";
import { FolderStorage } from "#shared/storage/folder.ts";
import { type Storage, StorageError } from "#shared/storage/storage.ts";
import { startS3WithBucket, useS3Environment } from "./helpers/s3.ts";

const BUCKET = "mapgate-storage-test";
const PREFIX = "stores/one";

const big = Buffer.alloc(100_000);
for (let i = 0; i < big.length; i++) big[i] = (i * 31 + (i >> 8)) % 251;
const readme = Buffer.from("hello, store\n");
const manyFiles = Array.from({ length: 25 }, (_, i) => `f${String(i).padStart(2, "0")}.txt`);

const FILES: Record<string, Buffer> = {
  "readme.txt": readme,
  "empty.bin": Buffer.alloc(0),
  "data/big.bin": big,
  "data/a.txt": Buffer.from("a"),
  "data/tiles/0/0/0.pbf": Buffer.from([0x1a, 0x02, 0x00, 0xff]),
  "etc/passwd": Buffer.from("inside the store\n"),
  ...Object.fromEntries(manyFiles.map((name) => [`many/${name}`, Buffer.from(name)])),
  "many/sub1/x.txt": Buffer.from("x"),
  "many/sub2/y.txt": Buffer.from("y"),
};

const BAD_PATHS = ["..", "/../x", "a/../../b", "./readme.txt", "data/./a.txt", "a\\b", "..\\x", "a\u0000b", "a\nb"];

let scratch: string;
let folderRoot: string;
let s3: LocalS3;
let admin: S3Client;
const storages: Record<string, Storage> = {};

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), "mapgate-storage-"));
  folderRoot = join(scratch, "store");
  for (const [path, body] of Object.entries(FILES)) {
    await mkdir(dirname(join(folderRoot, path)), { recursive: true });
    await writeFile(join(folderRoot, path), body);
  }
  storages.folder = new FolderStorage(folderRoot);

  ({ s3, admin } = await startS3WithBucket(BUCKET));
  const objects: Record<string, Buffer> = {
    ...Object.fromEntries(Object.entries(FILES).map(([path, body]) => [`${PREFIX}/${path}`, body])),
    // Beside the store, never reachable from it.
    "stores/one-sibling/secret.txt": Buffer.from("secret"),
    "stores/secret.txt": Buffer.from("secret"),
    "outside.txt": Buffer.from("secret"),
  };
  for (const [Key, Body] of Object.entries(objects)) {
    await admin.send(new PutObjectCommand({ Bucket: BUCKET, Key, Body }));
  }

  // What the local engine sets before handlers load.
  useS3Environment(s3);
  const { S3Storage } = await import("#shared/storage/s3.ts");
  storages.s3 = new S3Storage(BUCKET, `/${PREFIX}/`);
  storages.bucketRoot = new S3Storage(BUCKET, "");
});

afterAll(async () => {
  admin?.destroy();
  await s3?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const refuses = (promise: Promise<unknown>) => expect(promise).rejects.toBeInstanceOf(StorageError);

describe.each(["folder", "s3"])("%s storage", (kind) => {
  const store = () => storages[kind] as Storage;

  it("reads whole files, however the path is spelled", async () => {
    expect(await store().read("readme.txt", 1000)).toEqual(readme);
    expect(await store().read("/data/big.bin", big.length)).toEqual(big);
    expect(await store().read("data//tiles/0/0/0.pbf/", 100)).toEqual(FILES["data/tiles/0/0/0.pbf"]);
    expect(await store().read("empty.bin", 0)).toEqual(Buffer.alloc(0));
  });

  it("refuses a file over the size asked for", async () => {
    await refuses(store().read("data/big.bin", big.length - 1));
    await refuses(store().read("readme.txt", 0));
  });

  it("answers undefined for what is no file", async () => {
    expect(await store().read("nope.txt", 1000)).toBeUndefined();
    expect(await store().read("data", 1000)).toBeUndefined();
    expect(await store().read("", 1000)).toBeUndefined();
    expect(await store().read("readme.txt/x", 1000)).toBeUndefined();
    expect(await store().read("no/such/folder/file", 1000)).toBeUndefined();
    expect(await store().readRange("nope.txt", 0, 10)).toBeUndefined();
    expect(await store().readRange("nope.txt", 0, 0)).toBeUndefined();
    expect(await store().readRange("data", 0, 10)).toBeUndefined();
  });

  it("reads byte ranges: inside, at the start, across the end and past it", async () => {
    expect(await store().readRange("data/big.bin", 40_000, 5_000)).toEqual(big.subarray(40_000, 45_000));
    expect(await store().readRange("data/big.bin", 0, 1)).toEqual(big.subarray(0, 1));
    expect(await store().readRange("data/big.bin", 0, 2)).toEqual(big.subarray(0, 2));
    expect(await store().readRange("data/big.bin", big.length - 1, 1)).toEqual(big.subarray(big.length - 1));
    expect(await store().readRange("data/big.bin", big.length - 10, 100)).toEqual(big.subarray(big.length - 10));
    expect(await store().readRange("data/big.bin", big.length, 10)).toEqual(Buffer.alloc(0));
    expect(await store().readRange("data/big.bin", big.length + 1_000, 10)).toEqual(Buffer.alloc(0));
    expect(await store().readRange("data/big.bin", 100, 0)).toEqual(Buffer.alloc(0));
    expect(await store().readRange("empty.bin", 0, 5)).toEqual(Buffer.alloc(0));
    expect(await store().readRange("readme.txt", 0, 1_000_000)).toEqual(readme);
    await expect(store().readRange("readme.txt", -1, 5)).rejects.toThrow(RangeError);
    await expect(store().readRange("readme.txt", 0, 1.5)).rejects.toThrow(RangeError);
  });

  it("lists folders and files with their sizes, sorted by name", async () => {
    expect(await store().list("", 100)).toEqual([
      { name: "data", kind: "folder" },
      { name: "empty.bin", kind: "file", size: 0 },
      { name: "etc", kind: "folder" },
      { name: "many", kind: "folder" },
      { name: "readme.txt", kind: "file", size: readme.length },
    ]);
    expect(await store().list("/data/", 100)).toEqual([
      { name: "a.txt", kind: "file", size: 1 },
      { name: "big.bin", kind: "file", size: big.length },
      { name: "tiles", kind: "folder" },
    ]);
    expect(await store().list("data/tiles/0", 100)).toEqual([{ name: "0", kind: "folder" }]);
  });

  it("lists at most the limit, the first names first", async () => {
    const all = [...manyFiles, "sub1", "sub2"];
    expect((await store().list("many", 1000)).map((e) => e.name)).toEqual(all);
    expect((await store().list("many", 5)).map((e) => e.name)).toEqual(all.slice(0, 5));
    expect((await store().list("many", 26)).map((e) => e.name)).toEqual(all.slice(0, 26));
    expect(await store().list("many", 0)).toEqual([]);
  });

  it("lists nothing for a missing folder or a file", async () => {
    expect(await store().list("nope", 100)).toEqual([]);
    expect(await store().list("readme.txt", 100)).toEqual([]);
    expect(await store().list("data/a", 100)).toEqual([]);
  });

  it.each(BAD_PATHS)("refuses the path %j", async (path) => {
    await refuses(store().read(path, 1000));
    await refuses(store().readRange(path, 0, 10));
    await refuses(store().list(path, 10));
  });

  it("keeps an absolute-looking path inside the store", async () => {
    expect(await store().read("//etc/passwd", 1000)).toEqual(FILES["etc/passwd"]);
    expect(await store().read("/etc/passwd", 1000)).toEqual(FILES["etc/passwd"]);
    expect(await store().readRange("//etc/passwd", 0, 6)).toEqual(Buffer.from("inside"));
    expect((await store().list("//etc", 10)).map((e) => e.name)).toEqual(["passwd"]);
  });
});

describe("s3 storage", () => {
  it("reaches nothing beside its prefix", async () => {
    const store = storages.s3 as Storage;
    await refuses(store.read("../one-sibling/secret.txt", 100));
    await refuses(store.read("../../outside.txt", 100));
    expect(await store.read("one-sibling/secret.txt", 100)).toBeUndefined();
    expect(await store.read("secret.txt", 100)).toBeUndefined();
  });

  it("takes the whole bucket for an empty prefix", async () => {
    const store = storages.bucketRoot as Storage;
    expect(await store.list("", 10)).toEqual([
      { name: "outside.txt", kind: "file", size: 6 },
      { name: "stores", kind: "folder" },
    ]);
    expect(await store.read("stores/one/readme.txt", 100)).toEqual(readme);
    expect(await store.read("", 100)).toBeUndefined();
  });
});

describe("s3 storage over more than a page", () => {
  it("lists past S3's 1,000 keys a page", async () => {
    const names = Array.from({ length: 1_005 }, (_, i) => `k${String(i).padStart(4, "0")}`);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(
        names
          .slice(i, i + 50)
          .map((name) =>
            admin.send(new PutObjectCommand({ Bucket: BUCKET, Key: `wide/${name}`, Body: Buffer.from(name) })),
          ),
      );
    }
    const { S3Storage } = await import("#shared/storage/s3.ts");
    const store = new S3Storage(BUCKET, "wide");
    const all = await store.list("", 2_000);
    expect(all.map((e) => e.name)).toEqual(names);
    expect(all.every((e) => e.kind === "file" && e.size === 5)).toBe(true);
    expect((await store.list("", 1_002)).map((e) => e.name)).toEqual(names.slice(0, 1_002));
  });
});

describe("folder storage and links", () => {
  let root: string;
  let store: FolderStorage;

  beforeAll(async () => {
    root = join(scratch, "linked");
    await mkdir(join(root, "sub"), { recursive: true });
    await writeFile(join(root, "inside.txt"), "inside");
    await writeFile(join(root, "sub", "deep.txt"), "deep");
    await writeFile(join(scratch, "outside.txt"), "outside");
    await symlink("inside.txt", join(root, "to-inside.txt"));
    await symlink(join(root, "sub"), join(root, "to-sub"));
    await symlink("/etc", join(root, "to-etc"));
    await symlink("..", join(root, "up"));
    await symlink("../outside.txt", join(root, "to-outside.txt"));
    await symlink("missing.txt", join(root, "dangling.txt"));
    store = new FolderStorage(root);
  });

  it("follows links that stay inside the folder", async () => {
    expect(await store.read("to-inside.txt", 100)).toEqual(Buffer.from("inside"));
    expect(await store.readRange("to-inside.txt", 2, 2)).toEqual(Buffer.from("si"));
    expect(await store.read("to-sub/deep.txt", 100)).toEqual(Buffer.from("deep"));
    expect(await store.list("to-sub", 10)).toEqual([{ name: "deep.txt", kind: "file", size: 4 }]);
    expect(await store.read("dangling.txt", 100)).toBeUndefined();
  });

  it("refuses links that lead out, whether what they lead to exists or not", async () => {
    await refuses(store.read("to-etc/passwd", 100_000));
    await refuses(store.read("to-etc/no-such-file-here", 100));
    await refuses(store.read("to-etc/no/such/file", 100));
    await refuses(store.readRange("to-etc/passwd", 0, 10));
    await refuses(store.list("to-etc", 10));
    await refuses(store.read("up/outside.txt", 100));
    await refuses(store.list("up", 10));
    await refuses(store.read("to-outside.txt", 100));
    await expect(store.read("to-etc/passwd", 100_000)).rejects.toThrow(/outside the data store/);
  });

  it("lists links inside the folder as what they lead to, and leaves out the others", async () => {
    expect(await store.list("", 100)).toEqual([
      { name: "inside.txt", kind: "file", size: 6 },
      { name: "sub", kind: "folder" },
      { name: "to-inside.txt", kind: "file", size: 6 },
      { name: "to-sub", kind: "folder" },
    ]);
  });

  it("takes a folder given through a link as the folder it is", async () => {
    const linkedRoot = join(scratch, "root-link");
    await symlink(root, linkedRoot);
    const through = new FolderStorage(linkedRoot);
    expect(await through.read("sub/deep.txt", 100)).toEqual(Buffer.from("deep"));
    expect(await through.read("to-inside.txt", 100)).toEqual(Buffer.from("inside"));
    await refuses(through.read("to-etc/passwd", 100_000));
  });

  it("finds a file it found before again by its path as it is now: moved, replaced, relinked out or removed", async () => {
    // localFile keeps a path's real file once resolved and checks it with two stats: every change below is seen.
    const dir = join(root, "local");
    await mkdir(join(dir, "other"), { recursive: true });
    await writeFile(join(dir, "a.gpkg"), "first");
    await writeFile(join(dir, "other", "b.gpkg"), "second file");
    await writeFile(join(scratch, "far.gpkg"), "outside the store");
    await symlink("a.gpkg", join(dir, "link.gpkg"));
    const real = await realpath(dir);
    const first = await store.localFile("local/link.gpkg", 100);
    expect(first?.file).toBe(join(real, "a.gpkg"));
    expect(await store.localFile("local/link.gpkg", 100)).toEqual(first);
    // The same file written again (its size changes): the same path, a new version.
    await writeFile(join(dir, "a.gpkg"), "first, longer");
    const grown = await store.localFile("local/link.gpkg", 100);
    expect(grown?.file).toBe(first?.file);
    expect(grown?.version).not.toBe(first?.version);
    // The link now leads to another file inside: that file, at its own real path.
    await rm(join(dir, "link.gpkg"));
    await symlink("other/b.gpkg", join(dir, "link.gpkg"));
    const relinked = await store.localFile("local/link.gpkg", 100);
    expect(relinked?.file).toBe(join(real, "other", "b.gpkg"));
    // Replaced by a new file of the same size (a new inode) at the same real path: the new file's version.
    await writeFile(join(dir, "other", "b.new"), "second file");
    await rename(join(dir, "other", "b.new"), join(dir, "other", "b.gpkg"));
    const replaced = await store.localFile("local/link.gpkg", 100);
    expect(replaced?.file).toBe(relinked?.file);
    expect(replaced?.version).not.toBe(relinked?.version);
    // The link now leads out of the folder: refused, as on the first resolution.
    await rm(join(dir, "link.gpkg"));
    await symlink(join(scratch, "far.gpkg"), join(dir, "link.gpkg"));
    await refuses(store.localFile("local/link.gpkg", 100));
    // A folder on its path swapped for a link leading out: refused too.
    expect((await store.localFile("local/other/b.gpkg", 100))?.file).toBe(join(real, "other", "b.gpkg"));
    await rename(join(dir, "other"), join(dir, "moved"));
    await mkdir(join(scratch, "far-folder"), { recursive: true });
    await writeFile(join(scratch, "far-folder", "b.gpkg"), "second file");
    await symlink(join(scratch, "far-folder"), join(dir, "other"));
    await refuses(store.localFile("local/other/b.gpkg", 100));
    // Removed: no file.
    await rm(join(dir, "a.gpkg"));
    expect(await store.localFile("local/a.gpkg", 100)).toBeUndefined();
    // Over the size asked for: refused, found before or not.
    expect(await store.localFile("local/moved/b.gpkg", 100)).toBeDefined();
    await expect(store.localFile("local/moved/b.gpkg", 5)).rejects.toThrow(/larger than 5 bytes/);
  });

  it("answers nothing for a folder that does not exist, and refuses a relative one", async () => {
    const missing = new FolderStorage(join(scratch, "no-such-store"));
    expect(await missing.read("a.txt", 100)).toBeUndefined();
    expect(await missing.list("", 100)).toEqual([]);
    await refuses(missing.read("..", 100));
    expect(() => new FolderStorage("relative/store")).toThrow(StorageError);
  });
});

describe("local S3 server", () => {
  it("pages ListObjectsV2 listings", async () => {
    const keys: string[] = [];
    for await (const page of paginateListObjectsV2(
      { client: admin, pageSize: 4 },
      { Bucket: BUCKET, Prefix: `${PREFIX}/many/` },
    )) {
      keys.push(...(page.Contents ?? []).map((o) => o.Key ?? ""));
    }
    expect(keys).toEqual([
      ...manyFiles.map((name) => `${PREFIX}/many/${name}`),
      `${PREFIX}/many/sub1/x.txt`,
      `${PREFIX}/many/sub2/y.txt`,
    ]);
  });

  it("pages delimited listings, counting common prefixes against the page and naming each once", async () => {
    const pages: string[][] = [];
    for await (const page of paginateListObjectsV2(
      { client: admin, pageSize: 2 },
      { Bucket: BUCKET, Prefix: `${PREFIX}/`, Delimiter: "/" },
    )) {
      pages.push(
        [
          ...(page.CommonPrefixes ?? []).map((p) => p.Prefix ?? ""),
          ...(page.Contents ?? []).map((o) => o.Key ?? ""),
        ].sort(),
      );
    }
    expect(pages).toEqual([
      [`${PREFIX}/data/`, `${PREFIX}/empty.bin`],
      [`${PREFIX}/etc/`, `${PREFIX}/many/`],
      [`${PREFIX}/readme.txt`],
    ]);
  });

  it("answers ranges as S3 does", async () => {
    const get = async (Key: string, Range: string) => {
      const response = await admin.send(new GetObjectCommand({ Bucket: BUCKET, Key, Range }));
      return [response.$metadata.httpStatusCode, response.ContentRange, await response.Body?.transformToString()];
    };
    const key = `${PREFIX}/readme.txt`;
    expect(await get(key, "bytes=0-0")).toEqual([206, `bytes 0-0/${readme.length}`, "h"]);
    expect(await get(key, "bytes=-3")).toEqual([206, `bytes 10-12/${readme.length}`, "re\n"]);
    expect(await get(key, "bytes=7-")).toEqual([206, `bytes 7-12/${readme.length}`, "store\n"]);
    await expect(get(key, `bytes=${readme.length}-`)).rejects.toMatchObject({ name: "InvalidRange" });
    await expect(get(`${PREFIX}/empty.bin`, "bytes=0-0")).rejects.toMatchObject({ name: "InvalidRange" });
    await expect(get(`${PREFIX}/nope`, "bytes=0-0")).rejects.toMatchObject({ name: "NoSuchKey" });
  });

  it("refuses an aws-chunked upload rather than storing it corrupt", async () => {
    const put = (client: S3Client, Key: string) =>
      client.send(
        new PutObjectCommand({ Bucket: BUCKET, Key, Body: Readable.from([Buffer.from("stream")]), ContentLength: 6 }),
      );
    // The SDK's default: a stream sent aws-chunked with a checksum trailer.
    await expect(put(admin, "chunked.txt")).rejects.toMatchObject({ name: "NotImplemented" });
    const plain = new S3Client({
      endpoint: s3.endpoint,
      forcePathStyle: true,
      region: "us-east-1",
      credentials: { accessKeyId: "admin", secretAccessKey: "admin" },
      requestChecksumCalculation: "WHEN_REQUIRED",
    });
    try {
      await put(plain, "plain.txt");
      const got = await plain.send(new GetObjectCommand({ Bucket: BUCKET, Key: "plain.txt" }));
      expect(await got.Body?.transformToString()).toBe("stream");
    } finally {
      plain.destroy();
    }
  });

  it("keeps its buckets in its data folder across restarts", async () => {
    const dataDir = join(scratch, "s3-data");
    const client = (endpoint: string) =>
      new S3Client({
        endpoint,
        forcePathStyle: true,
        region: "us-east-1",
        credentials: { accessKeyId: "x", secretAccessKey: "x" },
      });
    const first = await startS3(dataDir);
    const one = client(first.endpoint);
    try {
      await one.send(new CreateBucketCommand({ Bucket: "kept" }));
      await one.send(new PutObjectCommand({ Bucket: "kept", Key: "k.txt", Body: Buffer.from("kept") }));
    } finally {
      one.destroy();
      await first.close();
    }
    const second = await startS3(dataDir);
    const two = client(second.endpoint);
    try {
      expect(second.endpoint).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const got = await two.send(new GetObjectCommand({ Bucket: "kept", Key: "k.txt" }));
      expect(await got.Body?.transformToString()).toBe("kept");
    } finally {
      two.destroy();
      await second.close();
    }
  });
});
