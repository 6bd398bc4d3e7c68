// Editor tracking and ownership-based access control on a layer published by reference from a registered PostgreSQL +
// PostGIS database, through the real local engine and a throwaway cluster on loopback. mapgate adds no column to a
// database it does not own: the publisher names the table's own tracking columns (`editFieldsInfo`) on the admin
// wire's service-level updateDefinition, as ArcGIS REST JS's updateServiceDefinition sends it, each checked against
// the table as the data store's login sees it (a column that is not there, its key, a generated one, one of a type that
// cannot hold a username or a moment, one named twice: each a 400 that names it). Until a creator column is named,
// ownership-based access control is refused and the service says editor tracking is off. Once named, the server fills
// them on every add and update (a client's forged values ignored) and the ownership rules hold as on hosted layers:
// others' features hidden from every query surface (json, geojson, pbf, counts, ids, extents, statistics) or refused
// per feature (1007, or 1019 for one the caller may not see), in the statements that write.
import decodeArcgisPbf from "arcgis-pbf-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stableItemId } from "#shared/publishing.ts";
import { defineCalls } from "./helpers/arcgis.ts";
import { demoOrganization, registerPostgresStore } from "./helpers/admin.ts";
import { PASSWORDS, type RunningEngine, signInMembers, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls } from "./helpers/http.ts";
import { jobEnd, share } from "./helpers/publish.ts";
import { type Postgres, postgresBin, startPostgres } from "./helpers/postgres.ts";

const WRITER = { user: "mapgate_tracker", password: `tr'ack;@:/pw-${Math.random().toString(36).slice(2)}` };
const COLUMNS = {
  creatorField: "created_user",
  creationDateField: "created_date",
  editorField: "last_edited_user",
  editDateField: "last_edited_date",
};
const DENIED = { code: 1007, description: "Edit denied due to ownership-based access control." };
const MISSING_UPDATE = { code: 1019, description: "Update for the object was not attempted. Object may not exist." };
const WHAT = "Unable to update feature service definition.";

let engine: RunningEngine;
let db: Postgres;
const tokens = { admin: "", publisher: "", user: "" };
let store = "";
const { getJson, postJson } = jsonCalls(() => engine.ca);
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const url = () =>
  `${engine.ready.https}/arcgis/rest/services/Tr/public_obs_${stableItemId(store, "/public.obs").slice(0, 6)}/FeatureServer`;
const admin = () => url().replace("/rest/services/", "/rest/admin/services/");
const layer = () => `${url()}/0`;

/** The admin wire's service-level updateDefinition, as a form post. */
const define = (definition: Record<string, unknown>, token = tokens.publisher) =>
  postJson(`${admin()}/updateDefinition`, token, { updateDefinition: JSON.stringify(definition) });
const refused = (details: string[]) => ({ error: { code: 400, message: WHAT, details } });
const ownership = (settings: Record<string, boolean>) =>
  define({ editorTrackingInfo: { enableEditorTracking: true, enableOwnershipAccessControl: true, ...settings } });
const edits = (token: string, params: Record<string, unknown>) =>
  postJson(`${layer()}/applyEdits`, token, {
    rollbackOnFailure: "false",
    ...Object.fromEntries(Object.entries(params).map(([k, v]) => [k, JSON.stringify(v)])),
  });
const add = async (token: string, name: string, attributes: Record<string, unknown> = {}) => {
  const answer = await edits(token, {
    adds: [{ attributes: { name, ...attributes }, geometry: { x: 1, y: 2, spatialReference: { wkid: 4326 } } }],
  });
  const [result] = answer.addResults as { objectId: number; success: boolean }[];
  expect(result, JSON.stringify(answer)).toMatchObject({ success: true });
  return result?.objectId ?? -1;
};
const query = (token: string, params: string) => getJson(`${layer()}/query?where=1%3D1&${params}`, token);
/** What `token` sees (of all, or of `params`' query): each feature's name and creator, in id order. */
const seen = async (token: string, params = "where=1%3D1") => {
  const answer = await getJson(`${layer()}/query?outFields=name,created_user&orderByFields=id&${params}`, token);
  if (!Array.isArray(answer.features)) throw new Error(JSON.stringify(answer));
  return (answer.features as { attributes: Record<string, unknown> }[]).map(
    (f) => `${String(f.attributes.name)}:${String(f.attributes.created_user)}`,
  );
};

const suite = postgresBin() ? describe : describe.skip;

suite("editor tracking and ownership rules on a layer published by reference from PostgreSQL", () => {
  beforeAll(async () => {
    const [started, cluster] = await Promise.allSettled([startEngine(), startPostgres()]);
    if (started.status === "fulfilled") engine = started.value;
    if (cluster.status === "fulfilled") db = cluster.value;
    if (started.status === "rejected") throw started.reason;
    if (cluster.status === "rejected") throw cluster.reason;
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
    const q = (sql: string) => db.admin.query(sql);
    // The table's own tracking columns (as an enterprise geodatabase names them), and columns that cannot be one.
    await q(`CREATE TABLE public.obs (id serial PRIMARY KEY, name text NOT NULL,
      created_user varchar(255), created_date timestamptz, last_edited_user text, last_edited_date timestamp,
      short_user varchar(20), num_user integer, shout text GENERATED ALWAYS AS (upper(name)) STORED,
      geom geometry(Point, 4326))`);
    // A row from before tracking: no creator, as ArcGIS treats an anonymous caller's feature.
    await q("INSERT INTO public.obs (name, geom) VALUES ('legacy', ST_SetSRID(ST_MakePoint(3, 4), 4326))");
    await q(`CREATE ROLE ${WRITER.user} LOGIN PASSWORD '${WRITER.password.replaceAll("'", "''")}'`);
    await q(`GRANT USAGE ON SCHEMA public TO ${WRITER.user}`);
    await q(`GRANT SELECT, INSERT, UPDATE, DELETE ON public.obs TO ${WRITER.user}`);
    await q(`GRANT USAGE ON SEQUENCE public.obs_id_seq TO ${WRITER.user}`);
    const org = demoOrganization(engine.dataDir);
    store = registerPostgresStore(engine.dataDir, org, "Tracked", db.uri(WRITER.user, WRITER.password)).datastoreId;
    const started2 = await postJson(`${rest()}/portals/self/datastores/allDatasets/publishLayers`, tokens.publisher, {
      datastoreId: store,
      serverId: org.serverId,
      serverFolder: "Tr",
    });
    expect(await jobEnd(engine, tokens.publisher, started2)).toMatchObject({ status: "completed" });
    expect(await define({ capabilities: "Create,Delete,Query,Update,Editing" })).toEqual({ success: true });
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await db?.stop();
  });

  describe.sequential("naming the tracking columns", () => {
    it("says editor tracking is off, and offers no ownership rules, until the columns are named", async () => {
      expect((await getJson(url(), tokens.publisher)).editorTrackingInfo).toEqual({
        enableEditorTracking: false,
        enableOwnershipAccessControl: false,
        allowOthersToUpdate: true,
        allowOthersToDelete: true,
        allowOthersToQuery: true,
        allowAnonymousToUpdate: true,
        allowAnonymousToDelete: true,
      });
      const json = await getJson(layer(), tokens.publisher);
      expect(json).not.toHaveProperty("editFieldsInfo");
      expect(json).not.toHaveProperty("ownershipBasedAccessControlForFeatures");
      expect(await ownership({ allowOthersToQuery: false })).toEqual(
        refused([
          "Editor tracking of a layer published by reference records its edits in its table's own columns: name them in 'editFieldsInfo' (creatorField, creationDateField, editorField, editDateField).",
          "Ownership-based access control needs the layer's creator: name the table's creator column first ('editFieldsInfo': {\"creatorField\": <column>}) before setting 'enableOwnershipAccessControl', 'allowOthersToQuery'.",
        ]),
      );
      expect(await define({ editorTrackingInfo: { enableEditorTracking: true } })).toEqual(
        refused([
          "Editor tracking of a layer published by reference records its edits in its table's own columns: name them in 'editFieldsInfo' (creatorField, creationDateField, editorField, editDateField).",
        ]),
      );
      // Settings that restrict nothing are taken (a client sends the whole object).
      expect(
        await define({ editorTrackingInfo: { enableOwnershipAccessControl: false, allowOthersToUpdate: true } }),
      ).toEqual({ success: true });
    });

    it("refuses every column that cannot be a tracking field, each named", async () => {
      expect(
        await define({
          editFieldsInfo: {
            creatorField: "nobody",
            creationDateField: "name",
            editorField: "id",
            editDateField: "shout",
          },
        }),
      ).toEqual(
        refused([
          "editFieldsInfo.creatorField 'nobody' is no column of public.obs.",
          "editFieldsInfo.creationDateField 'name' is of type text: it must be timestamp, timestamptz or date.",
          "editFieldsInfo.editorField 'id' is the table's key: the key numbers its rows and tracks no edit.",
          "editFieldsInfo.editDateField 'shout' is a generated column: the database computes it, so it cannot be filled.",
        ]),
      );
      expect(
        await define({
          editFieldsInfo: { creatorField: "short_user", editorField: "num_user", editDateField: "geom" },
        }),
      ).toEqual(
        refused([
          "editFieldsInfo.creatorField 'short_user' is varchar(20): it must hold any username (up to 128 characters): varchar(128) or longer, or text.",
          "editFieldsInfo.editorField 'num_user' is of type int4: it must be text or varchar.",
          "editFieldsInfo.editDateField 'geom' is of type geometry: it must be timestamp, timestamptz or date.",
        ]),
      );
      expect(await define({ editFieldsInfo: { creatorField: "created_user", editorField: "created_user" } })).toEqual(
        refused([
          "editFieldsInfo.editorField 'created_user' is named as creatorField too: each tracking field is a column of its own.",
        ]),
      );
      expect(await define({ editFieldsInfo: { creatorField: 7, owner: "created_user" } })).toEqual(
        refused([
          "'editFieldsInfo.creatorField' must be a column's name (at most 63 characters) or null.",
          "'editFieldsInfo.owner' is not a tracking field (creatorField, creationDateField, editorField, editDateField).",
        ]),
      );
      const many = Object.fromEntries(Array.from({ length: 5000 }, (_, i) => [`k${i}`, "x"]));
      expect(await define({ editFieldsInfo: many, editorTrackingInfo: many })).toEqual(
        refused([
          "'editorTrackingInfo' has 5000 keys: it takes at most 8 settings.",
          "'editFieldsInfo' has 5000 keys: it names at most the 4 tracking fields.",
        ]),
      );
      expect(await define({ editFieldsInfo: "created_user" })).toEqual(
        refused([
          "'editFieldsInfo' must be an object naming the table's columns: creatorField, creationDateField, editorField, editDateField.",
        ]),
      );
      expect(await define({ editFieldsInfo: { creatorField: "created_user" }, editorTrackingInfo: "on" })).toEqual(
        refused(["'editorTrackingInfo' must be an object of true/false settings."]),
      );
      expect(await define({ editFieldsInfo: COLUMNS, fields: [] })).toEqual(
        refused([
          "A layer published by reference changes only its 'capabilities', 'editorTrackingInfo', 'editFieldsInfo' here (not 'fields').",
        ]),
      );
      // A member who does not own the service may not name them.
      await share(engine, tokens.publisher, String((await getJson(url(), tokens.publisher)).serviceItemId), {
        org: "true",
      });
      expect(await define({ editFieldsInfo: COLUMNS }, tokens.user)).toMatchObject({ error: { code: 403 } });
      // None was kept.
      expect(await getJson(layer(), tokens.publisher)).not.toHaveProperty("editFieldsInfo");
    });

    it("keeps them through ArcGIS REST JS (names in any case), and the layer and service say so", async () => {
      const [answer] = await defineCalls(engine, "publisher", PASSWORDS.publisher, [
        {
          fn: "updateServiceDefinition",
          options: {
            url: admin(),
            updateDefinition: {
              editorTrackingInfo: { enableEditorTracking: true, enableOwnershipAccessControl: false },
              editFieldsInfo: { ...COLUMNS, creatorField: "Created_User" },
            },
          },
        },
      ]);
      expect(answer).toEqual({ success: true });
      const json = await getJson(layer(), tokens.publisher);
      expect(json.editFieldsInfo).toEqual({
        creationDateField: "created_date",
        creatorField: "created_user",
        editDateField: "last_edited_date",
        editorField: "last_edited_user",
      });
      expect(json).not.toHaveProperty("ownershipBasedAccessControlForFeatures");
      // Described afresh with its tracking columns, the layer keeps its rows' extent.
      expect(json.extent).toMatchObject({ xmin: 3, ymin: 4, xmax: 3, ymax: 4 });
      const editable = Object.fromEntries(
        (json.fields as { name: string; editable: boolean }[]).map((f) => [f.name, f.editable]),
      );
      expect(editable).toMatchObject({
        name: true,
        created_user: false,
        created_date: false,
        last_edited_user: false,
        last_edited_date: false,
      });
      expect((await getJson(url(), tokens.publisher)).editorTrackingInfo).toMatchObject({
        enableEditorTracking: true,
        enableOwnershipAccessControl: false,
      });
    });
  });

  describe.sequential("edits and ownership rules", () => {
    const mine: Record<string, number> = {};

    it("fills the columns from the caller and the clock; a client's values for them are ignored", async () => {
      const before = Date.now();
      mine.owner = await add(tokens.publisher, "O1", {
        created_user: "mallory",
        created_date: 0,
        last_edited_user: "mallory",
      });
      const after = Date.now();
      const row = await db.admin.query(
        "SELECT created_user, last_edited_user, extract(epoch FROM created_date) * 1000 AS created FROM public.obs WHERE id = $1",
        [mine.owner],
      );
      expect(row.rows[0]).toMatchObject({ created_user: "publisher", last_edited_user: "publisher" });
      const created = Number((row.rows[0] as { created: string }).created);
      expect(created).toBeGreaterThanOrEqual(before - 1);
      expect(created).toBeLessThanOrEqual(after + 1);
      // An administrator's update: the editor moves, the creator stays.
      expect(
        (await edits(tokens.admin, { updates: [{ attributes: { id: mine.owner, created_user: "admin" } }] }))
          .updateResults,
      ).toEqual([{ objectId: mine.owner, success: true }]);
      const got = (await query(tokens.publisher, `objectIds=${mine.owner}&outFields=*`)).features as {
        attributes: Record<string, unknown>;
      }[];
      expect(got[0]?.attributes).toMatchObject({
        created_user: "publisher",
        last_edited_user: "admin",
        created_date: expect.any(Number),
        last_edited_date: expect.any(Number),
      });
      mine.member = await add(tokens.user, "M1");
    });

    it("is turned on with editorTrackingInfo and advertised as on hosted layers", async () => {
      expect(
        await ownership({ allowOthersToQuery: false, allowOthersToUpdate: false, allowOthersToDelete: false }),
      ).toEqual({ success: true });
      expect((await getJson(layer(), tokens.user)).ownershipBasedAccessControlForFeatures).toEqual({
        allowOthersToQuery: false,
        allowOthersToUpdate: false,
        allowOthersToDelete: false,
        allowAnonymousToQuery: true,
        allowAnonymousToUpdate: true,
        allowAnonymousToDelete: true,
      });
      expect((await getJson(url(), tokens.user)).editorTrackingInfo).toEqual({
        enableEditorTracking: true,
        enableOwnershipAccessControl: true,
        allowOthersToUpdate: false,
        allowOthersToDelete: false,
        allowOthersToQuery: false,
        allowAnonymousToUpdate: true,
        allowAnonymousToDelete: true,
      });
      // The columns may not go while the rules need the creator's.
      expect(await define({ editFieldsInfo: null })).toEqual(
        refused([
          "Ownership-based access control is on and needs the layer's creator column: turn it off ('editorTrackingInfo': {\"enableOwnershipAccessControl\": false}) to name no creator column.",
        ]),
      );
    });

    it("hides others' features from a member on every query surface", async () => {
      expect(await seen(tokens.publisher)).toEqual(["legacy:null", "O1:publisher", "M1:user"]);
      expect(await seen(tokens.admin)).toEqual(["legacy:null", "O1:publisher", "M1:user"]);
      const members = ["legacy:null", "M1:user"];
      expect(await seen(tokens.user)).toEqual(members);
      expect(await seen(tokens.user, `where=${encodeURIComponent("name = 'O1' OR 1=1")}`)).toEqual(members);
      expect((await query(tokens.user, "returnCountOnly=true")).count).toBe(2);
      expect((await query(tokens.user, "returnIdsOnly=true")).objectIds).toEqual([1, mine.member]);
      expect((await query(tokens.user, `objectIds=${mine.owner}&returnIdsOnly=true`)).objectIds ?? []).toEqual([]);
      expect(await query(tokens.user, "returnExtentOnly=true&returnCountOnly=true")).toMatchObject({
        count: 2,
        extent: { xmin: 1, ymin: 2, xmax: 3, ymax: 4 },
      });
      const stats = await query(
        tokens.user,
        `outStatistics=${encodeURIComponent('[{"statisticType":"count","onStatisticField":"id","outStatisticFieldName":"n"}]')}`,
      );
      expect((stats.features as { attributes: { n: number } }[])[0]?.attributes.n).toBe(2);
      const paged: string[] = [];
      for (const offset of [0, 1])
        paged.push(...(await seen(tokens.user, `where=1%3D1&resultOffset=${offset}&resultRecordCount=1`)));
      expect(paged).toEqual(members);
      const geojson = await call(`${layer()}/query?where=1%3D1&f=geojson&token=${tokens.user}`, { ca: engine.ca });
      expect(geojson.json<{ features: unknown[] }>().features).toHaveLength(2);
      const pbf = await call(`${layer()}/query?where=1%3D1&f=pbf&token=${tokens.user}`, { ca: engine.ca });
      expect(
        (decodeArcgisPbf(new Uint8Array(pbf.body)) as { featureCollection: { features: unknown[] } }).featureCollection
          .features,
      ).toHaveLength(2);
      // Anonymous callers of the layer once public: what no one signed in made.
      await share(engine, tokens.publisher, String((await getJson(url(), tokens.publisher)).serviceItemId), {
        everyone: "true",
        org: "true",
      });
      expect(await seen("")).toEqual(["legacy:null"]);
    });

    it("refuses a member's update and delete of others' features per feature, a hidden one as missing", async () => {
      const [owner, member] = [mine.owner ?? -1, mine.member ?? -1];
      expect(await edits(tokens.user, { updates: [{ attributes: { id: owner, name: "taken" } }] })).toEqual({
        addResults: [],
        updateResults: [{ objectId: owner, success: false, error: MISSING_UPDATE }],
        deleteResults: [],
      });
      expect(await ownership({ allowOthersToQuery: true })).toEqual({ success: true });
      expect(
        await edits(tokens.user, {
          updates: [
            { attributes: { id: owner, name: "taken" } },
            { attributes: { id: member, name: "M1" } },
            { attributes: { id: 1, name: "legacy" } },
          ],
          deletes: [owner],
        }),
      ).toEqual({
        addResults: [],
        updateResults: [
          { objectId: owner, success: false, error: DENIED },
          { objectId: member, success: true },
          { objectId: 1, success: true },
        ],
        deleteResults: [{ objectId: owner, success: false, error: DENIED }],
      });
      // Through ArcGIS REST JS, with rollbackOnFailure (its default): the refusal undoes the member's own edit too.
      const [rolled] = (await defineCalls(engine, "user", PASSWORDS.user, [
        {
          fn: "applyEdits",
          options: {
            url: layer(),
            params: {
              updates: [
                { attributes: { id: member, name: "M1 changed" } },
                { attributes: { id: owner, name: "taken" } },
              ],
            },
          },
        },
      ])) as [Record<string, unknown>];
      expect(rolled.updateResults).toEqual([{ objectId: owner, success: false, error: DENIED }]);
      expect(await seen(tokens.publisher)).toEqual(["legacy:null", "O1:publisher", "M1:user"]);
    });

    it("allows others' updates and deletes once the owner allows them", async () => {
      const owner = mine.owner ?? -1;
      expect(await ownership({ allowOthersToUpdate: true })).toEqual({ success: true });
      expect(
        (await edits(tokens.user, { updates: [{ attributes: { id: owner, name: "O1+" } }] })).updateResults,
      ).toEqual([{ objectId: owner, success: true }]);
      expect(
        (await db.admin.query("SELECT created_user, last_edited_user FROM public.obs WHERE id = $1", [owner])).rows,
      ).toEqual([{ created_user: "publisher", last_edited_user: "user" }]);
      expect((await edits(tokens.user, { deletes: [owner] })).deleteResults).toEqual([
        { objectId: owner, success: false, error: DENIED },
      ]);
      expect(await ownership({ allowOthersToDelete: true })).toEqual({ success: true });
      expect((await edits(tokens.user, { deletes: [owner] })).deleteResults).toEqual([
        { objectId: owner, success: true },
      ]);
      expect((await query(tokens.publisher, `objectIds=${owner}&returnCountOnly=true`)).count).toBe(0);
    });

    it("names no columns once ownership is off: tracking stops, and the layer says so", async () => {
      expect(
        await define({ editFieldsInfo: null, editorTrackingInfo: { enableOwnershipAccessControl: false } }),
      ).toEqual({ success: true });
      const json = await getJson(layer(), tokens.user);
      expect(json).not.toHaveProperty("editFieldsInfo");
      expect(json).not.toHaveProperty("ownershipBasedAccessControlForFeatures");
      expect((await getJson(url(), tokens.user)).editorTrackingInfo).toMatchObject({
        enableEditorTracking: false,
        enableOwnershipAccessControl: false,
      });
      // The columns are plain fields again: a value sent for one is written as sent.
      const id = await add(tokens.publisher, "untracked", { created_user: "as sent" });
      expect(
        (await db.admin.query("SELECT created_user, last_edited_user FROM public.obs WHERE id = $1", [id])).rows,
      ).toEqual([{ created_user: "as sent", last_edited_user: null }]);
    });

    it("takes a column added to the table just before it is named (the layer is described afresh)", async () => {
      await db.admin.query("ALTER TABLE public.obs ADD COLUMN checked_by text");
      expect(await define({ editFieldsInfo: { editorField: "checked_by" } })).toEqual({ success: true });
      expect((await getJson(layer(), tokens.publisher)).editFieldsInfo).toEqual({ editorField: "checked_by" });
      const id = await add(tokens.admin, "checked", { checked_by: "forged" });
      expect((await db.admin.query("SELECT checked_by FROM public.obs WHERE id = $1", [id])).rows).toEqual([
        { checked_by: "admin" },
      ]);
    });
  });
});
