// Values nested thousands deep from outside: measured without recursion first, so nothing that recurses after
// (JSON.stringify, the HTML renderer, messages quoting a value) overflows the stack.
import { ROLE_PRIVILEGES } from "#shared/auth/privileges.ts";
import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readCacheInfo } from "#shared/caches/probe.ts";
const MAX_DOCUMENT_DEPTH = 64;
import { ApiError } from "#shared/errors.ts";
import { renderValue } from "#shared/http/html.ts";
const MAX_RENDER_DEPTH = 32;
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { readPrivileges } from "#shared/roles.ts";
import { FolderStorage } from "#shared/storage/folder.ts";
import { StorageError } from "#shared/storage/storage.ts";

const arrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

describe("nestedDeeperThan", () => {
  it.each([
    [1, 0],
    ["a", 0],
    [null, 0],
    [[], 1],
    [{ a: 1 }, 1],
    [[[1]], 2],
    [{ a: [{ b: {} }] }, 4],
    [[1, [2, [3]], { a: { b: { c: {} } } }], 5],
  ])("%j nests %i deep", (value, depth) => {
    expect(nestedDeeperThan(value, depth)).toBe(false);
    if (depth > 0) expect(nestedDeeperThan(value, depth - 1)).toBe(true);
  });

  it("measures 10^6 levels without recursing, in linear time", () => {
    const deep = JSON.parse(arrays(1_000_000)) as unknown;
    const started = performance.now();
    expect(nestedDeeperThan(deep, 1_000_000)).toBe(false);
    expect(nestedDeeperThan(deep, 999_999)).toBe(true);
    expect(nestedDeeperThan(JSON.parse(objects(200_000)), 64)).toBe(true);
    // A wide value is measured whole: 10^5 siblings, each a few levels deep.
    const wide = Array.from({ length: 100_000 }, () => ({ a: [1, { b: 2 }] }));
    expect(nestedDeeperThan(wide, 4)).toBe(false);
    expect(performance.now() - started).toBeLessThan(5000);
  });
});

describe("what recurses over values from outside", () => {
  it("the HTML renderer shows values to a bounded depth", () => {
    const html = renderValue(JSON.parse(objects(100_000)));
    expect(html).toContain("nested too deep to show here");
    expect(html.split("<table>").length - 1).toBe(MAX_RENDER_DEPTH);
  });

  it("a role's privileges quote back no nested value", () => {
    const deep = `{"privileges":[${arrays(100_000)},${objects(100_000)},42]}`;
    let error: unknown;
    try {
      readPrivileges(deep);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ApiError);
    expect((error as ApiError).details).toEqual([
      "Unknown privilege (an array).",
      "Unknown privilege (an object).",
      "Unknown privilege 42.",
      `Valid privileges: ${ROLE_PRIVILEGES.join(", ")}.`,
    ]);
  });

  it("a cache's JSON documents may nest only so deep", async () => {
    const root = await mkdtemp(join(tmpdir(), "mapgate-depth-"));
    await mkdir(join(root, "deep/p12"), { recursive: true });
    const levels = { levels: JSON.parse(objects(MAX_DOCUMENT_DEPTH)) as unknown };
    await writeFile(join(root, "deep/p12/root.json"), JSON.stringify({ tileInfo: { lods: [{ level: 0 }] }, levels }));
    const storage = new FolderStorage(root);
    await expect(readCacheInfo(storage, "/deep", "vectorTileCache")).rejects.toThrow(
      new StorageError(`p12/root.json nests more than ${MAX_DOCUMENT_DEPTH} levels deep.`),
    );
    await writeFile(join(root, "deep/p12/root.json"), `{"tileInfo":{"lods":[{"level":0}]},"x":${arrays(60)}}`);
    await expect(readCacheInfo(storage, "/deep", "vectorTileCache")).resolves.toMatchObject({ kind: "vector" });
  });
});
