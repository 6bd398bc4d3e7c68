// 50 clients editing one hosted layer at once, on each backing of hosted data (a GeoPackage per service, edited under
// the service's lock; PostgreSQL + PostGIS, ordered by the database): each adds two features and updates one feature
// every client shares, all released together. Every request answers (no 500, none refused: an edit waits for the
// lock within its bound), every acknowledged add is in the layer once with its own object id, no two adds share an id,
// the shared feature holds the value of one of the updates, and each edit raised its one event.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEngine, signInMembers, startEngine } from "./helpers/engine.ts";
import { definePointService } from "./helpers/arcgis.ts";
import { jsonCalls } from "./helpers/http.ts";
import { hostThroughProxy, type PgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, postgresBin, startPostgres } from "./helpers/postgres.ts";
import { schemaOf } from "#shared/hosted/postgis-store.ts";

const CLIENTS = 50;

interface Backing {
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** Removes mapgate's editing tables from a service's schema (PostgreSQL: a service made before they existed). */
  forgetEditing?: (serviceItemId: string) => Promise<void>;
}

function suite(name: string, backing: Backing) {
  describe(name, () => {
    let engine: RunningEngine;
    let token = "";
    let url = "";
    const { getJson, postJson } = jsonCalls(() => engine.ca);

    beforeAll(async () => {
      engine = await startEngine({ env: await backing.start() });
      token = (await signInMembers(`${engine.ready.https}/portal/sharing/rest`, engine.ca)).publisher;
      url = `${engine.ready.https}/arcgis/rest/services/Hosted/Race/FeatureServer/0`;
      await definePointService(engine, "Race");
    }, 180_000);

    afterAll(async () => {
      await engine?.stop();
      await backing.stop();
    });

    it(`loses no acknowledged edit of ${CLIENTS} clients at once, and gives no id twice`, async () => {
      const shared = (await postJson(`${url}/addFeatures`, token, {
        features: JSON.stringify([{ attributes: { Name: "shared" }, geometry: { x: 0, y: 0 } }]),
      })) as { addResults: { objectId: number }[] };
      const sharedId = shared.addResults[0]?.objectId;
      const started = performance.now();
      const answers = await Promise.all(
        Array.from({ length: CLIENTS }, (_, c) =>
          postJson(`${url}/applyEdits`, token, {
            adds: JSON.stringify([0, 1].map((k) => ({ attributes: { Name: `c${c}-${k}` }, geometry: { x: c, y: k } }))),
            updates: JSON.stringify([{ attributes: { OBJECTID: sharedId, Name: `by c${c}` } }]),
          }),
        ),
      );
      const took = performance.now() - started;
      console.log(`${name}: ${CLIENTS} concurrent applyEdits answered in ${Math.round(took)} ms`);
      const acknowledged = new Map<string, number>();
      for (const [c, a] of answers.entries()) {
        expect(a, `client ${c}`).toMatchObject({
          addResults: [{ success: true }, { success: true }],
          updateResults: [{ success: true, objectId: sharedId }],
        });
        for (const [k, r] of (a.addResults as { objectId: number }[]).entries())
          acknowledged.set(`c${c}-${k}`, r.objectId);
      }
      const ids = [...acknowledged.values()];
      expect(new Set(ids).size).toBe(CLIENTS * 2);
      const rows = (
        (await getJson(`${url}/query?where=1%3D1&outFields=OBJECTID,Name&orderByFields=OBJECTID`, token)).features as {
          attributes: { OBJECTID: number; Name: string };
        }[]
      ).map((f) => f.attributes);
      expect(rows).toHaveLength(CLIENTS * 2 + 1);
      for (const [n, id] of acknowledged) expect(rows.find((r) => r.OBJECTID === id)?.Name, n).toBe(n);
      expect(rows.find((r) => r.OBJECTID === sharedId)?.Name).toMatch(/^by c\d+$/);
      // One event per committed edit, each sent once.
      const edited = () => {
        const log = join(engine.dataDir, "events.jsonl");
        if (!existsSync(log)) return [];
        return readFileSync(log, "utf8")
          .split("\n")
          .filter((l) => l.includes('"Features Edited"'))
          .map((l) => (JSON.parse(l) as { detail: { eventId: string } }).detail.eventId);
      };
      await expect.poll(() => edited().length, { timeout: 15_000 }).toBe(CLIENTS + 1);
      expect(new Set(edited()).size).toBe(CLIENTS + 1);
      // Bounded in time: the whole burst well within a client's patience.
      expect(took).toBeLessThan(60_000);
    }, 120_000);

    if (backing.forgetEditing) {
      const forget = backing.forgetEditing;
      it("makes a service's editing tables once when its first edits come together (a service made before them)", async () => {
        await definePointService(engine, "Early");
        const early = `${engine.ready.https}/arcgis/rest/services/Hosted/Early/FeatureServer/0`;
        const service = (await getJson(early.replace(/\/0$/, ""), token)) as { serviceItemId: string };
        await forget(service.serviceItemId);
        const answers = await Promise.all(
          Array.from({ length: 12 }, (_, c) =>
            postJson(`${early}/addFeatures`, token, {
              features: JSON.stringify([{ attributes: { Name: `e${c}` }, geometry: { x: c, y: 0 } }]),
            }),
          ),
        );
        for (const [c, a] of answers.entries())
          expect(a, `client ${c}`).toMatchObject({ addResults: [{ success: true }] });
        const count = await getJson(`${early}/query?where=1%3D1&returnCountOnly=true`, token);
        expect(count).toEqual({ count: 12 });
        const layer = (await getJson(early, token)) as { editingInfo?: { lastEditDate?: number } };
        expect(layer.editingInfo?.lastEditDate).toBeGreaterThan(0);
      }, 120_000);
    }
  });
}

suite("on a GeoPackage per service", { start: async () => ({}), stop: async () => undefined });

let db: Postgres | undefined;
let proxy: PgProxy | undefined;
if (postgresBin())
  suite("on PostgreSQL + PostGIS", {
    start: async () => {
      db = await startPostgres();
      const hosted = await hostThroughProxy(db, 200);
      proxy = hosted.proxy;
      return hosted.env;
    },
    stop: async () => {
      await proxy?.close();
      await db?.stop();
    },
    forgetEditing: async (itemId) => {
      const schema = schemaOf(itemId);
      await db?.admin.query(`DROP TABLE "${schema}"."mapgate_edit_log", "${schema}"."mapgate_editing"`);
    },
  });
else it.skip("on PostgreSQL + PostGIS: no PostgreSQL binaries here", () => undefined);
