// Editing layers published by reference from a registered PostgreSQL + PostGIS database, through the real local engine
// and a throwaway cluster on loopback: two data stores on one database, one registered with a login that may only read
// (GRANT SELECT), one with a login that may write the `sites` table. Turning editing on (the admin wire's
// updateDefinition of capabilities, as ArcGIS REST JS's updateServiceDefinition sends it) is refused with the missing
// privilege named for the first, and for a view or a key without a default; it is kept for the second, whose layer
// then says it is editable. ArcGIS REST JS's applyEdits, addFeatures, updateFeatures and deleteFeatures edit it: each
// edit seen by the next query, geometry kept in the table's own SRID (3857), per-feature errors (mapgate's checks, and
// the table's own CHECK constraint, answered per feature through a savepoint), rollback on and off, lastEditDate
// moving, who may edit. Each committed edit raises one "Features Edited" event, also when the engine is killed
// (SIGKILL, by the test-only MAPGATE_TEST_EDIT_CRASH) between the commit and the bus: the redeliverer asks the database
// the transaction's status, and mapgate made no table of its own there.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stableItemId } from "#shared/publishing.ts";
import { eventSchemaFile } from "#shared/system.ts";
import { defineCalls } from "./helpers/arcgis.ts";
import { demoOrganization, type DemoOrganization, demoServicePath, registerPostgresStore } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine, signInMembers, startEngine } from "./helpers/engine.ts";
import { jsonCalls } from "./helpers/http.ts";
import { jobEnd, share } from "./helpers/publish.ts";
import { type Postgres, postgresBin, startPostgres } from "./helpers/postgres.ts";

/** Redelivery every second, and an outbox record awaiting its edit's commit asked about after 2 s (not 2 min). */
const FAST = { MAPGATE_REDELIVERY_SECONDS: "1", MAPGATE_TEST_EDIT_SETTLE_SECONDS: "2" };
const WRITER = { user: "mapgate_writer", password: `wr'iter;@:/pw-${Math.random().toString(36).slice(2)}` };

const ajv = new Ajv2020({ allErrors: true, strict: true });
addFormats.default(ajv);
const validate = ajv.compile(JSON.parse(readFileSync(join(ROOT, eventSchemaFile("featuresEdited")), "utf8")) as object);

let engine: RunningEngine;
let db: Postgres;
let org: DemoOrganization;
const tokens = { admin: "", publisher: "", user: "" };
let readStore = "";
let writeStore = "";
const { getJson, postJson } = jsonCalls(() => engine.ca);
const rest = () => `${engine.ready.https}/portal/sharing/rest`;

/** A layer's FeatureServer as bulk publishing names it: `<dataset name>_<6 hex>` in the job's folder. */
const serviceUrl = (admin: boolean, folder: string, datastoreId: string, table: string) =>
  `${engine.ready.https}/arcgis/rest/${admin ? "admin/" : ""}services/${folder}/public_${table}_${stableItemId(datastoreId, `/public.${table}`).slice(0, 6)}/FeatureServer`;
const rw = (table = "sites") => serviceUrl(false, "Rw", writeStore, table);
const ro = (table = "sites") => serviceUrl(false, "Ro", readStore, table);

/** The admin wire's service-level updateDefinition of capabilities (as REST JS's updateServiceDefinition posts it). */
const setCapabilities = (url: string, capabilities: string, token = tokens.publisher) =>
  postJson(`${url.replace("/rest/services/", "/rest/admin/services/")}/updateDefinition`, token, {
    updateDefinition: JSON.stringify({ capabilities }),
  });

async function start(extra: Record<string, string> = {}) {
  engine = await startEngine({ ...(engine ? { dataDir: engine.dataDir } : {}), env: { ...FAST, ...extra } });
  Object.assign(tokens, await signInMembers(rest(), engine.ca));
}

const events = () => {
  const log = join(engine.dataDir, "events.jsonl");
  if (!existsSync(log)) return [];
  return readFileSync(log, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { "detail-type": string; detail: Record<string, unknown> })
    .filter((e) => e["detail-type"] === "Features Edited");
};

const rows = async (url = rw()) =>
  (
    (await getJson(`${url}/0/query?where=1%3D1&outFields=id,name,visits&orderByFields=id&outSR=4326`, tokens.publisher))
      .features as { attributes: Record<string, unknown>; geometry?: { x: number; y: number } }[]
  ).map((f): Record<string, unknown> => ({
    ...f.attributes,
    ...(f.geometry ? { x: Math.round(f.geometry.x * 1e6) / 1e6, y: Math.round(f.geometry.y * 1e6) / 1e6 } : {}),
  }));
const lastEdit = async () =>
  ((await getJson(`${rw()}/0`, tokens.publisher)).editingInfo as { lastEditDate: number }).lastEditDate;
const point = (x: number, y: number) => ({ x, y, spatialReference: { wkid: 4326 } });
const client = (calls: { fn: string; options: Record<string, unknown> }[], who: "publisher" | "admin" = "publisher") =>
  defineCalls(engine, who, PASSWORDS[who], calls);

const suite = postgresBin() ? describe : describe.skip;

suite("layers published by reference from PostgreSQL, edited", () => {
  beforeAll(async () => {
    const [started, cluster] = await Promise.allSettled([startEngine({ env: FAST }), startPostgres()]);
    if (started.status === "fulfilled") engine = started.value;
    if (cluster.status === "fulfilled") db = cluster.value;
    if (started.status === "rejected") throw started.reason;
    if (cluster.status === "rejected") throw cluster.reason;
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
    org = demoOrganization(engine.dataDir);
    const q = (sql: string) => db.admin.query(sql);
    // Points kept in Web Mercator (edits sent in WGS 84 are transformed), a name that must be given, a CHECK the
    // table enforces itself.
    await q(
      "CREATE TABLE public.sites (id serial PRIMARY KEY, name varchar(12) NOT NULL, visits integer CHECK (visits >= 0), flag boolean DEFAULT false, geom geometry(Point, 3857))",
    );
    await q(
      "INSERT INTO public.sites (name, visits, geom) VALUES ('first', 1, ST_Transform(ST_SetSRID(ST_MakePoint(1, 2), 4326), 3857))",
    );
    // A key the table does not number itself: rows can be changed and removed, not added.
    await q("CREATE TABLE public.fixed (id integer PRIMARY KEY, label text)");
    await q("INSERT INTO public.fixed VALUES (1, 'one')");
    await q("CREATE VIEW public.site_names AS SELECT id, name FROM public.sites");
    await q(`CREATE ROLE ${WRITER.user} LOGIN PASSWORD '${WRITER.password.replaceAll("'", "''")}'`);
    await q(`GRANT USAGE ON SCHEMA public TO ${WRITER.user}`);
    await q(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${WRITER.user}`);
    await q(`GRANT INSERT, UPDATE, DELETE ON public.sites, public.fixed, public.site_names TO ${WRITER.user}`);
    await q(`GRANT USAGE ON SEQUENCE public.sites_id_seq TO ${WRITER.user}`);
    readStore = registerPostgresStore(engine.dataDir, org, "Read only", db.uri()).datastoreId;
    writeStore = registerPostgresStore(
      engine.dataDir,
      org,
      "Writable",
      db.uri(WRITER.user, WRITER.password),
    ).datastoreId;
    for (const [datastoreId, serverFolder] of [
      [readStore, "Ro"],
      [writeStore, "Rw"],
    ] as const) {
      const started = await postJson(`${rest()}/portals/self/datastores/allDatasets/publishLayers`, tokens.publisher, {
        datastoreId,
        serverId: org.serverId,
        serverFolder,
      });
      expect(await jobEnd(engine, tokens.publisher, started)).toMatchObject({
        status: "completed",
        result: { published: 3 },
      });
    }
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await db?.stop();
  });

  describe("turning editing on", () => {
    it("answers read-only until its publisher turns editing on", async () => {
      expect(await postJson(`${rw()}/0/addFeatures`, tokens.publisher, { features: "[]" })).toEqual({
        error: {
          code: 400,
          message: "Requested operation is not supported by this service.",
          details: [
            "The requested capability is not supported.",
            "Its layers are read-only (capabilities: Query): 'addFeatures' is not supported.",
          ],
        },
      });
      expect(await getJson(`${rw()}/0`, tokens.publisher)).toMatchObject({ capabilities: "Query", templates: [] });
    });

    it("is refused, naming the privilege, when the registered login may only read", async () => {
      expect(await setCapabilities(ro(), "Query,Create,Update,Delete,Editing")).toEqual({
        error: {
          code: 400,
          message: "Unable to update feature service definition.",
          details: [
            "The data store's login 'mapgate_reader' lacks the INSERT privilege on public.sites (Create): GRANT INSERT ON public.sites TO mapgate_reader, or leave Create off.",
            "The data store's login 'mapgate_reader' lacks the UPDATE privilege on public.sites (Update): GRANT UPDATE ON public.sites TO mapgate_reader, or leave Update off.",
            "The data store's login 'mapgate_reader' lacks the DELETE privilege on public.sites (Delete): GRANT DELETE ON public.sites TO mapgate_reader, or leave Delete off.",
          ],
        },
      });
      expect(await getJson(ro(), tokens.publisher)).toMatchObject({ capabilities: "Query" });
    });

    it("is refused for a view, and for adding to a table whose key has no default", async () => {
      expect(await setCapabilities(rw("site_names"), "Query,Update,Editing")).toMatchObject({
        error: {
          code: 400,
          details: ["public.site_names is a view: only tables are edited here (publish the table itself to edit it)."],
        },
      });
      expect(await setCapabilities(rw("fixed"), "Query,Create,Editing")).toMatchObject({
        error: {
          code: 400,
          details: [
            "public.fixed's key id has no default (a sequence or an identity) to number a new row: features cannot be added.",
          ],
        },
      });
      expect(await setCapabilities(rw("fixed"), "Query,Update,Delete,Editing")).toEqual({ success: true });
    });

    it("is refused to a member who does not own the service, and to a GeoPackage published by reference", async () => {
      await share(engine, tokens.publisher, String((await getJson(rw(), tokens.publisher)).serviceItemId), {
        org: "true",
      });
      expect(await setCapabilities(rw(), "Query,Create,Editing", tokens.user)).toMatchObject({ error: { code: 403 } });
      // A demo layer read from the world GeoPackage stays read-only: the same answer as before.
      const countries = `${engine.ready.https}${demoServicePath(org.worldStore, "countries")}`;
      expect(await setCapabilities(countries, "Query,Update,Editing", tokens.admin)).toEqual({
        error: {
          code: 400,
          message: "Unable to complete operation.",
          details: ["Only hosted feature services (made by publishing a file or by createService) are changed here."],
        },
      });
    });

    it("is kept for a login that may write, through ArcGIS REST JS, and the layer says it is editable", async () => {
      const [answer] = await client([
        {
          fn: "updateServiceDefinition",
          options: {
            url: rw().replace("/rest/services/", "/rest/admin/services/"),
            updateDefinition: { capabilities: "Create,Delete,Query,Update,Editing" },
          },
        },
      ]);
      expect(answer).toEqual({ success: true });
      const layer = await getJson(`${rw()}/0`, tokens.publisher);
      expect(layer).toMatchObject({
        capabilities: "Create,Delete,Query,Update,Editing",
        allowGeometryUpdates: true,
        supportsApplyEditsWithGlobalIds: false,
        supportsRollbackOnFailureParameter: true,
        globalIdField: "",
        editingInfo: { lastEditDate: expect.any(Number) },
        templates: [{ name: "public.sites", drawingTool: "esriFeatureEditToolPoint", prototype: { attributes: {} } }],
      });
      // No tracking columns are named: no editor fields, and no ownership-based access control.
      expect(layer).not.toHaveProperty("editFieldsInfo");
      expect(layer).not.toHaveProperty("ownershipBasedAccessControlForFeatures");
      const fields = Object.fromEntries(
        (layer.fields as { name: string; editable: boolean; nullable: boolean; length?: number }[]).map((f) => [
          f.name,
          [f.editable, f.nullable, f.length],
        ]),
      );
      expect(fields).toEqual({
        id: [false, false, undefined],
        name: [true, false, 12],
        visits: [true, true, undefined],
        flag: [false, true, undefined],
      });
      expect(await getJson(rw(), tokens.publisher)).toMatchObject({
        capabilities: "Create,Delete,Query,Update,Editing",
      });
    });
  });

  describe("edits through ArcGIS REST JS", () => {
    it("adds, updates and deletes; each seen by the next query, kept in the table's SRID, lastEditDate moving", async () => {
      const before = await lastEdit();
      const [added] = (await client([
        {
          fn: "addFeatures",
          options: {
            url: `${rw()}/0`,
            params: {
              features: [
                { attributes: { name: "north", visits: 3 }, geometry: point(10, 50) },
                { attributes: { name: "south", visits: 0 }, geometry: point(-20, -30) },
              ],
            },
          },
        },
      ])) as [{ addResults: { objectId: number; success: boolean }[] }];
      expect(added.addResults).toEqual([
        { objectId: 2, success: true },
        { objectId: 3, success: true },
      ]);
      expect(await lastEdit()).toBeGreaterThan(before);
      // Kept in Web Mercator, as the table holds it.
      const srid = await db.admin.query(
        "SELECT ST_SRID(geom) AS srid, round(ST_X(geom)) AS x FROM public.sites WHERE id = 2",
      );
      expect(srid.rows).toEqual([{ srid: 3857, x: 1113195 }]);
      const [updated, deleted, applied] = (await client([
        {
          fn: "updateFeatures",
          options: {
            url: `${rw()}/0`,
            params: { features: [{ attributes: { id: 2, visits: 4 }, geometry: point(11, 51) }] },
          },
        },
        { fn: "deleteFeatures", options: { url: `${rw()}/0`, params: { objectIds: [3] } } },
        {
          fn: "applyEdits",
          options: {
            url: `${rw()}/0`,
            params: {
              adds: [{ attributes: { name: "east", visits: 7 }, geometry: point(30, 0) }],
              updates: [{ attributes: { id: 1, name: "renamed" } }],
              deletes: [],
            },
          },
        },
      ])) as Record<string, unknown>[];
      expect(updated).toEqual({ updateResults: [{ objectId: 2, success: true }] });
      expect(deleted).toEqual({ deleteResults: [{ objectId: 3, success: true }] });
      expect(applied).toEqual({
        addResults: [{ objectId: 4, success: true }],
        updateResults: [{ objectId: 1, success: true }],
        deleteResults: [],
      });
      expect(await rows()).toEqual([
        { id: 1, name: "renamed", visits: 1, x: 1, y: 2 },
        { id: 2, name: "north", visits: 4, x: 11, y: 51 },
        { id: 4, name: "east", visits: 7, x: 30, y: 0 },
      ]);
    }, 60_000);

    it("answers each feature's error, rolls the request back by default and keeps the others without rollback", async () => {
      const edits = {
        adds: JSON.stringify([
          { attributes: { name: "fine" }, geometry: point(1, 1) },
          { attributes: { name: "much too long a name" }, geometry: point(1, 1) },
          { attributes: { name: "negative", visits: -1 }, geometry: point(1, 1) },
          { attributes: { visits: 2 }, geometry: point(1, 1) },
          { attributes: { name: "flagged", flag: 1 }, geometry: point(1, 1) },
        ]),
        updates: JSON.stringify([{ attributes: { id: 999, name: "nobody" } }]),
        deletes: "998",
      };
      const errors = [
        {
          objectId: -1,
          success: false,
          error: {
            code: 1016,
            description: "Setting of value for name failed: the text is longer than the field's 12 characters.",
          },
        },
        {
          objectId: -1,
          success: false,
          error: {
            code: 1000,
            description: "The database refused the row: SQLSTATE 23514 (constraint sites_visits_check).",
          },
        },
        {
          objectId: -1,
          success: false,
          error: { code: 1001, description: "Field: name is not nullable. Cannot set null value." },
        },
        { objectId: -1, success: false, error: { code: 1000, description: "Field flag does not exist in the layer." } },
      ];
      const missing = (verb: string, objectId: number) => ({
        objectId,
        success: false,
        error: { code: 1019, description: `${verb} for the object was not attempted. Object may not exist.` },
      });
      const last = await lastEdit();
      expect(await postJson(`${rw()}/0/applyEdits`, tokens.publisher, edits)).toEqual({
        addResults: errors,
        updateResults: [missing("Update", 999)],
        deleteResults: [missing("Delete", 998)],
      });
      expect(await rows()).toHaveLength(3);
      expect(await lastEdit()).toBe(last);
      const kept = await postJson(`${rw()}/0/applyEdits`, tokens.publisher, { ...edits, rollbackOnFailure: "false" });
      expect(kept).toEqual({
        addResults: [{ objectId: expect.any(Number), success: true }, ...errors],
        updateResults: [missing("Update", 999)],
        deleteResults: [missing("Delete", 998)],
      });
      expect((await rows()).map((r) => r.name)).toEqual(["renamed", "north", "east", "fine"]);
      // The service's applyEdits: its layer's edits, in one transaction.
      const service = await postJson(`${rw()}/applyEdits`, tokens.publisher, {
        edits: JSON.stringify([{ id: 0, deletes: [(kept.addResults as { objectId: number }[])[0]?.objectId] }]),
      });
      expect(service).toEqual([
        {
          id: 0,
          addResults: [],
          updateResults: [],
          deleteResults: [{ objectId: (kept.addResults as { objectId: number }[])[0]?.objectId, success: true }],
        },
      ]);
      // A GET of an edit operation is told to POST.
      expect(await getJson(`${rw()}/0/applyEdits`, tokens.publisher)).toMatchObject({ error: { code: 405 } });
    }, 60_000);

    it("lets the owner and an administrator edit; a member only what is enabled; anonymous callers not at all", async () => {
      const [byAdmin] = (await client(
        [
          {
            fn: "addFeatures",
            options: { url: `${rw()}/0`, params: { features: [{ attributes: { name: "admin's" } }] } },
          },
        ],
        "admin",
      )) as [{ addResults: { success: boolean }[] }];
      expect(byAdmin.addResults).toEqual([{ objectId: expect.any(Number), success: true }]);
      // Only updates are enabled: a member (the service is shared with the organization) updates, and may not add.
      expect(await setCapabilities(rw(), "Query,Update,Editing")).toEqual({ success: true });
      expect(
        await postJson(`${rw()}/0/addFeatures`, tokens.user, {
          features: JSON.stringify([{ attributes: { name: "x" } }]),
        }),
      ).toMatchObject({ error: { code: 403 } });
      expect(
        await postJson(`${rw()}/0/updateFeatures`, tokens.user, {
          features: JSON.stringify([{ attributes: { id: 2, visits: 5 } }]),
        }),
      ).toEqual({ updateResults: [{ objectId: 2, success: true }] });
      // Public, but anonymous callers are asked to sign in before any edit.
      await share(engine, tokens.publisher, String((await getJson(rw(), tokens.publisher)).serviceItemId), {
        everyone: "true",
      });
      expect(
        await postJson(`${rw()}/0/updateFeatures`, "", {
          features: JSON.stringify([{ attributes: { id: 2, visits: 6 } }]),
        }),
      ).toMatchObject({ error: { code: 499 } });
      // Editing off: read-only again, for everyone.
      expect(await setCapabilities(rw(), "Query")).toEqual({ success: true });
      expect(
        await postJson(`${rw()}/0/updateFeatures`, tokens.publisher, {
          features: JSON.stringify([{ attributes: { id: 2, visits: 7 } }]),
        }),
      ).toMatchObject({ error: { code: 400, message: "Requested operation is not supported by this service." } });
      expect(await setCapabilities(rw(), "Create,Delete,Query,Update,Editing")).toEqual({ success: true });
    }, 60_000);
  });

  describe("events", () => {
    it("raises one valid event per committed edit, none for a rolled-back one, and makes no table in the database", async () => {
      const before = events().length;
      const added = await postJson(`${rw()}/0/addFeatures`, tokens.publisher, {
        features: JSON.stringify([{ attributes: { name: "evented" }, geometry: point(5, 5) }]),
      });
      const id = (added.addResults as { objectId: number }[])[0]?.objectId;
      await expect.poll(() => events().length, { timeout: 10_000 }).toBe(before + 1);
      const detail = events().at(-1)?.detail;
      expect(detail).toMatchObject({
        url: rw(),
        editor: "publisher",
        editMoment: await lastEdit(),
        layers: [{ id: 0, url: `${rw()}/0`, added: 1, updated: 0, deleted: 0, addedIds: [id] }],
      });
      expect(validate(detail) ? [] : validate.errors).toEqual([]);
      await postJson(`${rw()}/0/updateFeatures`, tokens.publisher, {
        features: JSON.stringify([{ attributes: { id: 999, name: "nobody" } }]),
      });
      await new Promise((r) => setTimeout(r, 1500));
      expect(events()).toHaveLength(before + 1);
      const tables = await db.admin.query(
        "SELECT table_schema || '.' || table_name AS t FROM information_schema.tables WHERE table_name LIKE 'mapgate%' OR table_schema LIKE 'h\\_%'",
      );
      expect(tables.rows).toEqual([]);
    }, 30_000);

    it("sends an edit's event exactly once after a kill between the commit and the bus", async () => {
      const before = events().length;
      await engine.stop();
      await start({ MAPGATE_TEST_EDIT_CRASH: "after-commit" });
      await postJson(`${rw()}/0/addFeatures`, tokens.publisher, {
        features: JSON.stringify([{ attributes: { name: "survivor" }, geometry: point(6, 6) }]),
      }).catch(() => undefined); // the connection dies with the engine
      expect(await engine.stop("SIGKILL")).toBe(null); // it had killed itself
      expect(events()).toHaveLength(before);
      await start();
      const kept = (await rows()).filter((r) => r.name === "survivor");
      expect(kept).toHaveLength(1);
      // Once the record is older than an edit may run (2 s here), the redeliverer asks the database (a loaded machine
      // may take a while to start the engine's timers).
      await expect.poll(() => events().length, { timeout: 45_000 }).toBe(before + 1);
      expect((events().at(-1)?.detail.layers as { addedIds: number[] }[])[0]?.addedIds).toEqual([kept[0]?.id]);
      await new Promise((r) => setTimeout(r, 3000));
      expect(events()).toHaveLength(before + 1);
    }, 120_000);

    it("keeps no row and sends no event for an edit killed before its commit", async () => {
      const before = events().length;
      await engine.stop();
      await start({ MAPGATE_TEST_EDIT_CRASH: "before-commit" });
      await postJson(`${rw()}/0/addFeatures`, tokens.publisher, {
        features: JSON.stringify([{ attributes: { name: "lost" }, geometry: point(7, 7) }]),
      }).catch(() => undefined);
      expect(await engine.stop("SIGKILL")).toBe(null);
      await start();
      expect((await rows()).filter((r) => r.name === "lost")).toEqual([]);
      await new Promise((r) => setTimeout(r, 5000));
      expect(events()).toHaveLength(before);
      // The layer is edited again at once (the database held no lock of the killed edit).
      expect(
        await postJson(`${rw()}/0/addFeatures`, tokens.publisher, {
          features: JSON.stringify([{ attributes: { name: "after" }, geometry: point(8, 8) }]),
        }),
      ).toMatchObject({ addResults: [{ success: true }] });
      await expect.poll(() => events().length, { timeout: 10_000 }).toBe(before + 1);
    }, 120_000);
  });
});
