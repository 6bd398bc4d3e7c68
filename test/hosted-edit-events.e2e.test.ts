// A hosted layer's committed edit raises one "Features Edited" event, on each backing of hosted data (a GeoPackage per
// service; PostgreSQL + PostGIS behind the stand-in for RDS Proxy), through the real local engine and its bus (whose
// log the test reads): the event's exact detail, valid against its schema; none for an edit rolled back. Then the
// engine is killed with SIGKILL at the two moments that matter, by the test-only MAPGATE_TEST_EDIT_CRASH (the edit's
// code kills its own process there, as a crash would): after the commit and before the bus — after a restart the
// rows are there and the event is sent exactly once, by events-redeliver; and before the commit — no row, no event,
// and the outbox record that awaited the commit is forgotten. The same kills in a 2,000-add applyEdits keep all of it
// or none of it, the first query after the crash answering the rows as they were.
import { readFileSync, existsSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient, ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventSchemaFile } from "#shared/system.ts";
import { definePointService } from "./helpers/arcgis.ts";
import { ROOT, type RunningEngine, signInMembers, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody } from "./helpers/http.ts";
import { hostThroughProxy, type PgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, postgresBin, startPostgres } from "./helpers/postgres.ts";

interface Backing {
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

/** Redelivery every second, and an outbox record awaiting its edit's commit asked about after 2 s (not 2 min). */
const FAST = { MAPGATE_REDELIVERY_SECONDS: "1", MAPGATE_TEST_EDIT_SETTLE_SECONDS: "2" };

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
const validate = ajv.compile(JSON.parse(readFileSync(join(ROOT, eventSchemaFile("featuresEdited")), "utf8")) as object);

interface LoggedEvent {
  source: string;
  "detail-type": string;
  detail: Record<string, unknown> & { layers: { addedIds: number[] }[] };
}

function suite(name: string, backing: Backing, geoPackage: boolean) {
  describe(name, () => {
    let engine: RunningEngine;
    let env: Record<string, string> = {};
    let token = "";
    let url = "";
    let itemId = "";
    const { getJson, postJson } = jsonCalls(() => engine.ca);

    const edited = (): LoggedEvent[] => {
      const log = join(engine.dataDir, "events.jsonl");
      if (!existsSync(log)) return [];
      return readFileSync(log, "utf8")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as LoggedEvent)
        .filter((e) => e["detail-type"] === "Features Edited");
    };
    const outbox = async () => {
      const state = JSON.parse(readFileSync(join(engine.dataDir, "engine.json"), "utf8")) as {
        dynamoEndpoint: string;
      };
      const ddb = DynamoDBDocumentClient.from(
        new DynamoDBClient({
          endpoint: state.dynamoEndpoint,
          region: "us-east-1",
          credentials: { accessKeyId: "x", secretAccessKey: "x" },
        }),
      );
      const found = await ddb.send(new ScanCommand({ TableName: "mapgate-outbox", ConsistentRead: true }));
      ddb.destroy();
      return found.Items ?? [];
    };
    const start = async (extra: Record<string, string> = {}) => {
      engine = await startEngine({
        ...(engine ? { dataDir: engine.dataDir } : {}),
        env: { ...env, ...FAST, ...extra },
      });
      token = (await signInMembers(`${engine.ready.https}/portal/sharing/rest`, engine.ca)).publisher;
      url = `${engine.ready.https}/arcgis/rest/services/Hosted/Watch/FeatureServer`;
    };
    const names = async () =>
      (
        (await getJson(`${url}/0/query?where=1%3D1&outFields=OBJECTID,Name&orderByFields=OBJECTID`, token))
          .features as { attributes: { OBJECTID: number; Name: string } }[]
      ).map((f) => f.attributes);
    const total = async (where = "1=1") =>
      (await getJson(`${url}/0/query?where=${encodeURIComponent(where)}&returnCountOnly=true`, token)).count as number;
    const many = (prefix: string) => Array.from({ length: 2000 }, (_, i) => `${prefix}${i}`);
    const add = (names: string[], extra: Record<string, string> = {}) =>
      postJson(`${url}/0/addFeatures`, token, {
        features: JSON.stringify(
          names.map((n, i) => ({ attributes: { Name: n }, geometry: { x: (i % 360) - 180, y: (i % 180) - 90 } })),
        ),
        ...extra,
      });

    beforeAll(async () => {
      env = await backing.start();
      await start();
      itemId = await definePointService(engine, "Watch");
    }, 180_000);

    afterAll(async () => {
      await engine?.stop();
      await backing.stop();
    });

    it("raises one event per committed edit, with its exact detail; none for an edit rolled back", async () => {
      const first = (await add(["a", "b"])) as { addResults: { objectId: number }[] };
      const ids = first.addResults.map((r) => r.objectId);
      expect(ids).toHaveLength(2);
      const moment = (await getJson(`${url}/0`, token)).editingInfo as { lastEditDate: number };
      await expect.poll(() => edited().length, { timeout: 10_000 }).toBe(1);
      const [event] = edited();
      expect(event?.source).toBe("mapgate");
      expect(event?.detail).toEqual({
        eventId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        portalId: expect.any(String),
        itemId,
        url,
        editor: "publisher",
        editMoment: moment.lastEditDate,
        layers: [
          {
            id: 0,
            url: `${url}/0`,
            added: 2,
            updated: 0,
            deleted: 0,
            addedIds: ids,
            updatedIds: [],
            deletedIds: [],
          },
        ],
      });
      expect(validate(event?.detail) ? [] : validate.errors).toEqual([]);

      // An update and a delete in one applyEdits: one event naming both.
      const second = await postJson(`${url}/0/applyEdits`, token, {
        updates: JSON.stringify([{ attributes: { OBJECTID: ids[0], Name: "a2" } }]),
        deletes: String(ids[1]),
      });
      expect(second).toMatchObject({ updateResults: [{ success: true }], deleteResults: [{ success: true }] });
      await expect.poll(() => edited().length, { timeout: 10_000 }).toBe(2);
      expect(edited()[1]?.detail.layers).toEqual([
        expect.objectContaining({ updated: 1, deleted: 1, updatedIds: [ids[0]], deletedIds: [ids[1]] }),
      ]);

      // Rolled back (the second update names no row): nothing written, no event; the outbox keeps nothing.
      const rolledBack = await postJson(`${url}/0/updateFeatures`, token, {
        features: JSON.stringify([
          { attributes: { OBJECTID: ids[0], Name: "a3" } },
          { attributes: { OBJECTID: 999_999, Name: "x" } },
        ]),
      });
      expect(rolledBack).toMatchObject({ updateResults: [{ success: false, error: { code: 1019 } }] });
      await new Promise((r) => setTimeout(r, 1500));
      expect(edited()).toHaveLength(2);
      expect(await outbox()).toEqual([]);
    }, 60_000);

    it("sends an edit's event exactly once after a kill between the commit and the bus", async () => {
      const before = edited().length;
      await engine.stop();
      await start({ MAPGATE_TEST_EDIT_CRASH: "after-commit" });
      await add(["kept after crash"]).catch(() => undefined); // the connection dies with the engine
      expect(await engine.stop("SIGKILL")).toBe(null); // it had killed itself
      expect(edited()).toHaveLength(before);
      await start();
      // The rows are kept, and the event awaiting the commit is sent by events-redeliver once it finds the edit.
      const kept = (await names()).filter((r) => r.Name === "kept after crash");
      expect(kept).toHaveLength(1);
      await expect.poll(() => edited().length, { timeout: 15_000 }).toBe(before + 1);
      expect(edited().at(-1)?.detail.layers[0]?.addedIds).toEqual([kept[0]?.OBJECTID]);
      // Never again: several redelivery runs later it is still one, and the outbox is empty.
      await new Promise((r) => setTimeout(r, 3000));
      expect(edited()).toHaveLength(before + 1);
      expect(await outbox()).toEqual([]);
    }, 120_000);

    it("keeps all of a 2,000-add applyEdits killed after its commit, its event's ids cut at 1,000", async () => {
      const count = await total();
      const before = edited().length;
      await engine.stop();
      await start({ MAPGATE_TEST_EDIT_CRASH: "after-commit" });
      await add(many("whole")).catch(() => undefined);
      expect(await engine.stop("SIGKILL")).toBe(null);
      await start();
      expect(await total()).toBe(count + 2000);
      expect(await total("Name LIKE 'whole%'")).toBe(2000);
      await expect.poll(() => edited().length, { timeout: 15_000 }).toBe(before + 1);
      const event = edited().at(-1);
      expect(event?.detail).toMatchObject({ idsOmitted: true, layers: [{ added: 2000 }] });
      expect(event?.detail.layers[0]?.addedIds).toHaveLength(1000);
      expect(validate(event?.detail) ? [] : validate.errors).toEqual([]);
    }, 120_000);

    it("keeps none of a 2,000-add applyEdits killed before its commit, and sends no event", async () => {
      const before = edited().length;
      const rows = await names();
      await engine.stop();
      await start({ MAPGATE_TEST_EDIT_CRASH: "before-commit" });
      await add(many("lost")).catch(() => undefined);
      expect(await engine.stop("SIGKILL")).toBe(null);
      if (geoPackage) {
        // The killed transaction left its rollback journal beside the file (test/geopackage-hot-journal.test.ts
        // covers one whose pages already reached the file, which a read-only reader cannot read past).
        expect(existsSync(join(engine.dataDir, "hosted", `${itemId}.gpkg-journal`))).toBe(true);
      }
      // No redelivery run here: the first reader after the crash is the query, which answers the rows as before.
      await start({ MAPGATE_REDELIVERY_SECONDS: "600" });
      const released = engine.lines.some((l) => l.includes("definition locks of a stopped engine released"));
      expect(await names()).toEqual(rows);
      expect(await total("Name LIKE 'lost%'")).toBe(0);
      await engine.stop();
      await start();
      // Its outbox record (put before the commit) is forgotten once the edit cannot be running; no event is sent.
      await expect.poll(async () => (await outbox()).length, { timeout: 15_000 }).toBe(0);
      await new Promise((r) => setTimeout(r, 1500));
      expect(edited()).toHaveLength(before);
      const again = await add(["after"]);
      // A GeoPackage is edited under the service's lock, which the killed edit held: the engine that owns the data
      // folder now released it at its start (no process of the killed engine's can still hold it), so the layer is
      // edited again at once, as the database's layers are (which hold no lock of the killed edit).
      if (geoPackage) expect(released).toBe(true);
      expect(again).toMatchObject({ addResults: [{ success: true }] });
      await expect.poll(() => edited().length, { timeout: 10_000 }).toBe(before + 1);
    }, 180_000);

    it("raises an event for a change of a feature's attachments, exactly once across a kill after its commit", async () => {
      const admin = url.replace("/rest/services/", "/rest/admin/services/");
      expect(
        await postJson(`${admin}/0/updateDefinition`, token, {
          updateDefinition: JSON.stringify({ hasAttachments: true }),
        }),
      ).toEqual({ success: true });
      const [feature] = await names();
      const oid = feature?.OBJECTID ?? -1;
      const attach = async (path: string, fields: Record<string, string>) => {
        const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.from("x")]);
        const { body, type } = await multipartBody(
          { f: "json", token, ...fields },
          { attachment: { name: "a.png", bytes: png } },
        );
        return (await call(`${url}/0/${oid}/${path}`, { ca: engine.ca, body, headers: { "content-type": type } })).json<
          Record<string, { objectId: number; success: boolean }>
        >();
      };
      const before = edited().length;
      const added = await attach("addAttachment", {});
      expect(added.addAttachmentResult?.success).toBe(true);
      await expect.poll(() => edited().length, { timeout: 10_000 }).toBe(before + 1);
      const event = edited().at(-1);
      expect(event?.detail).toMatchObject({
        itemId,
        editor: "publisher",
        layers: [
          {
            id: 0,
            added: 0,
            updated: 0,
            deleted: 0,
            addedIds: [],
            attachments: { added: 1, updated: 0, deleted: 0 },
          },
        ],
      });
      expect(validate(event?.detail) ? [] : validate.errors).toEqual([]);
      // A delete naming no attachment of the feature changes nothing: no event.
      expect(await postJson(`${url}/0/${oid}/deleteAttachments`, token, { attachmentIds: "999999" })).toMatchObject({
        deleteAttachmentResults: [{ success: false }],
      });
      // Killed after the commit of the delete and before the bus: the event is sent once, by events-redeliver.
      await engine.stop();
      await start({ MAPGATE_TEST_EDIT_CRASH: "after-commit" });
      await postJson(`${url}/0/${oid}/deleteAttachments`, token, {
        attachmentIds: String(added.addAttachmentResult?.objectId),
      }).catch(() => undefined);
      expect(await engine.stop("SIGKILL")).toBe(null);
      expect(edited()).toHaveLength(before + 1);
      await start();
      expect(await getJson(`${url}/0/${oid}/attachments`, token)).toEqual({ attachmentInfos: [] });
      await expect.poll(() => edited().length, { timeout: 15_000 }).toBe(before + 2);
      expect(edited().at(-1)?.detail.layers).toEqual([
        expect.objectContaining({ id: 0, attachments: { added: 0, updated: 0, deleted: 1 } }),
      ]);
      await new Promise((r) => setTimeout(r, 3000));
      expect(edited()).toHaveLength(before + 2);
      expect(await outbox()).toEqual([]);
    }, 120_000);
  });
}

suite("on a GeoPackage per service", { start: async () => ({}), stop: async () => undefined }, true);

let db: Postgres | undefined;
let proxy: PgProxy | undefined;
if (postgresBin())
  suite(
    "on PostgreSQL + PostGIS",
    {
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
    },
    false,
  );
else it.skip("on PostgreSQL + PostGIS: no PostgreSQL binaries here", () => undefined);
