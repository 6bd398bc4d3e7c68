// What edits write counts against the service owner's storage quota: each committed edit records the data's size in
// the service's item (a GeoPackage's pages but its free ones, read from the file here), so the item's size follows
// adds and deletes; once the owner is at their quota an edit that may grow the data is refused (403, nothing
// written) while deletes are taken, and the room they free lets adds in again.
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { definePointService } from "./helpers/arcgis.ts";
import { type RunningEngine, signInMembers, startEngine } from "./helpers/engine.ts";
import { jsonCalls } from "./helpers/http.ts";

const BATCH = 1000;

describe("a hosted layer's edits and its owner's storage quota", () => {
  let engine: RunningEngine;
  let token = "";
  let url = "";
  let itemId = "";
  const { getJson, postJson } = jsonCalls(() => engine.ca);

  beforeAll(async () => {
    // 1 MB: the publisher's other items keep nothing, so a few thousand points reach it.
    engine = await startEngine({ env: { STORAGE_QUOTA_USER_MB: "1" } });
    token = (await signInMembers(`${engine.ready.https}/portal/sharing/rest`, engine.ca)).publisher;
    itemId = await definePointService(engine, "Quota");
    url = `${engine.ready.https}/arcgis/rest/services/Hosted/Quota/FeatureServer/0`;
  }, 120_000);

  afterAll(async () => {
    await engine?.stop();
  });

  const itemSize = async () =>
    (await getJson(`${engine.ready.https}/portal/sharing/rest/content/items/${itemId}`, token)).size as number;
  /** The bytes the GeoPackage's rows take: its pages but its free ones. */
  const fileUsed = () => {
    const db = new DatabaseSync(join(engine.dataDir, "hosted", `${itemId}.gpkg`), { readOnly: true });
    try {
      const n = (p: string) => Number((db.prepare(`PRAGMA ${p}`).get() as Record<string, unknown>)[p]);
      return (n("page_count") - n("freelist_count")) * n("page_size");
    } finally {
      db.close();
    }
  };
  const count = async () => (await getJson(`${url}/query?where=1%3D1&returnCountOnly=true`, token)).count as number;
  const adds = (round: number) =>
    JSON.stringify(
      Array.from({ length: BATCH }, (_, i) => ({
        attributes: { Name: `r${round}-${i}` },
        geometry: { x: (i % 360) - 180, y: ((i * 7) % 180) - 90 },
      })),
    );

  it("records the data's size as edits leave it, refuses growth at the quota, and takes deletes that make room", async () => {
    const before = await itemSize();
    expect(before).toBe(fileUsed());
    let refused: Record<string, unknown> | undefined;
    let round = 0;
    // Bounded: 1 MB is a few thousand points.
    for (; round < 30 && !refused; round++) {
      const answer = await postJson(`${url}/applyEdits`, token, { adds: adds(round) });
      if ("error" in answer) refused = answer;
      else {
        expect((answer.addResults as { success: boolean }[]).every((r) => r.success)).toBe(true);
        expect(await itemSize()).toBe(fileUsed());
      }
    }
    expect(round).toBeGreaterThan(2);
    expect(refused).toEqual({
      error: {
        code: 403,
        message: "Storage quota exceeded.",
        details: [
          "The service's data is counted against its owner's storage quota (1 MB), which it would pass: delete features or other items, or ask an administrator for more.",
        ],
      },
    });
    // Refused before it wrote: the rows and the size as the last edit left them.
    const kept = await count();
    expect(kept).toBe((round - 1) * BATCH);
    const full = await itemSize();
    expect(full).toBeGreaterThanOrEqual(1024 * 1024);
    expect(full).toBe(fileUsed());
    // Deletes are taken at the quota, and what they free is given back.
    const deleted = await postJson(`${url}/deleteFeatures`, token, { where: `OBJECTID > ${Math.floor(kept / 2)}` });
    expect((deleted.deleteResults as unknown[]).length).toBe(kept - Math.floor(kept / 2));
    const after = await itemSize();
    expect(after).toBeLessThan(full);
    expect(after).toBe(fileUsed());
    const again = await postJson(`${url}/applyEdits`, token, { adds: adds(99) });
    expect((again.addResults as { success: boolean }[]).every((r) => r.success)).toBe(true);
  });
});
