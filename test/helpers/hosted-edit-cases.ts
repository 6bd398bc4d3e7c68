// Editing hosted feature layers, run on each backing of hosted data (test/hosted-edit.e2e.test.ts: a GeoPackage per
// service; test/hosted-edit-postgis.e2e.test.ts: PostgreSQL + PostGIS behind a stand-in for RDS Proxy), through the
// real local engine: ArcGIS REST JS's applyEdits, addFeatures, updateFeatures and deleteFeatures for the main paths,
// raw POSTs for the errors; each edit seen by the next query (JSON and PBF), every per-feature error with ArcGIS's
// code, rollback on and off, a service's applyEdits across a layer and a table in one transaction, editor tracking,
// the last edit date moving, who may edit, and GDAL reading the edited data.
import { execFileSync } from "node:child_process";
import decodeArcgisPbf from "arcgis-pbf-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineCalls } from "./arcgis.ts";
import { PASSWORDS, type RunningEngine, signInMembers, startEngine } from "./engine.ts";
import { call, jsonCalls } from "./http.ts";
import { share } from "./publish.ts";

/** Where a run keeps hosted data, and how GDAL reads a service's data there. */
export interface EditBacking {
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** ogrinfo's last arguments opening a service's data (its file, or its schema of the database). */
  gdalSource(dataDir: string, serviceItemId: string): string[];
}

/** An object id after a rolled-back request: a database's identity does not give back the ids it took. */
const ANY_ID = expect.any(Number) as unknown as number;
/** A global id as ArcGIS writes one: upper-case hex in braces. */
const GID = expect.stringMatching(
  /^\{[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\}$/,
) as unknown as string;

export function hostedEditSuite(backing: EditBacking): { readonly engine: () => RunningEngine } {
  let engine: RunningEngine;
  const tokens = { admin: "", publisher: "", user: "" };
  const rest = () => `${engine.ready.https}/portal/sharing/rest`;
  const services = () => `${engine.ready.https}/arcgis/rest/services`;
  const { getJson, postJson } = jsonCalls(() => engine.ca);
  let url = "";
  let itemId = "";
  const layer = () => `${url}/0`;

  beforeAll(async () => {
    const env = await backing.start();
    engine = await startEngine({ env });
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
    const [created] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "createFeatureService", options: { item: { name: "Survey", capabilities: "Query" } } },
    ])) as [Record<string, unknown>];
    itemId = String(created.itemId);
    url = `${services()}/Hosted/Survey/FeatureServer`;
    const [added] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "addToServiceDefinition",
        options: {
          url,
          layers: [
            {
              name: "Sites",
              type: "Feature Layer",
              geometryType: "esriGeometryPoint",
              objectIdField: "OBJECTID",
              fields: [
                { name: "OBJECTID", type: "esriFieldTypeOID" },
                { name: "Name", type: "esriFieldTypeString", length: 12 },
                { name: "Visits", type: "esriFieldTypeInteger" },
                { name: "Checked", type: "esriFieldTypeDate" },
              ],
            },
          ],
          tables: [
            {
              name: "Notes",
              type: "Table",
              objectIdField: "OBJECTID",
              fields: [
                { name: "OBJECTID", type: "esriFieldTypeOID" },
                { name: "Note", type: "esriFieldTypeString", length: 40 },
              ],
            },
          ],
        },
      },
    ])) as [Record<string, unknown>];
    expect(added).toMatchObject({ success: true });
  }, 120_000);

  afterAll(async () => {
    await engine?.stop();
    await backing.stop();
  });

  /** ArcGIS REST JS calls as the publisher (the service's owner), or another member. */
  const client = (calls: { fn: string; options: Record<string, unknown> }[], who: "publisher" | "user" = "publisher") =>
    defineCalls(engine, who, PASSWORDS[who], calls);
  const post = (path: string, fields: Record<string, string>, token = tokens.publisher) =>
    postJson(`${url}/${path}`, token, fields);
  const count = async (where = "1=1", id = 0) =>
    (await getJson(`${url}/${id}/query?where=${encodeURIComponent(where)}&returnCountOnly=true`, tokens.publisher))
      .count as number;
  const rows = async (id = 0) =>
    (
      (await getJson(`${url}/${id}/query?where=1%3D1&outFields=*&orderByFields=OBJECTID`, tokens.publisher))
        .features as { attributes: Record<string, unknown>; geometry?: { x: number; y: number } }[]
    ).map((f): Record<string, unknown> => {
      const { OBJECTID, Name, Visits, Checked } = f.attributes;
      return { OBJECTID, Name, Visits, Checked, ...(f.geometry ? { x: f.geometry.x, y: f.geometry.y } : {}) };
    });
  const pbfCount = async () => {
    const res = await call(`${layer()}/query?where=1%3D1&outFields=*&f=pbf&token=${tokens.publisher}`, {
      ca: engine.ca,
    });
    return (decodeArcgisPbf(new Uint8Array(res.body)) as { featureCollection: { features: unknown[] } })
      .featureCollection.features.length;
  };
  const lastEdit = async () =>
    ((await getJson(layer(), tokens.publisher)).editingInfo as { lastEditDate: number }).lastEditDate;
  const point = (x: number, y: number, wkid = 4326) => ({ x, y, spatialReference: { wkid } });

  describe("a hosted layer edited by ArcGIS REST JS", () => {
    it("says it is editable, with a template for new features", async () => {
      const json = await getJson(layer(), tokens.publisher);
      expect(json).toMatchObject({
        capabilities: "Create,Delete,Query,Update,Editing",
        allowGeometryUpdates: true,
        supportsRollbackOnFailureParameter: true,
        hasAttachments: false,
        templates: [
          { name: "Sites", description: "", prototype: { attributes: {} }, drawingTool: "esriFeatureEditToolPoint" },
        ],
        editingInfo: { lastEditDate: expect.any(Number) },
      });
      const fields = json.fields as { name: string; editable: boolean; nullable: boolean }[];
      expect(fields.map((f) => [f.name, f.editable])).toEqual([
        ["OBJECTID", false],
        ["Name", true],
        ["Visits", true],
        ["Checked", true],
        ["GlobalID", false],
        ["CreationDate", false],
        ["Creator", false],
        ["EditDate", false],
        ["Editor", false],
      ]);
      expect(json).toMatchObject({
        globalIdField: "GlobalID",
        supportsApplyEditsWithGlobalIds: true,
        editFieldsInfo: {
          creationDateField: "CreationDate",
          creatorField: "Creator",
          editDateField: "EditDate",
          editorField: "Editor",
        },
      });
      expect(fields.find((f) => f.name === "GlobalID")).toMatchObject({ type: "esriFieldTypeGlobalID" });
      expect(await getJson(url, tokens.publisher)).toMatchObject({
        capabilities: "Create,Delete,Query,Update,Editing",
        allowGeometryUpdates: true,
      });
    });

    it("adds features (one in Web Mercator), each seen by the next query in JSON and PBF", async () => {
      const before = await lastEdit();
      const [added] = (await client([
        {
          fn: "applyEdits",
          options: {
            url: layer(),
            params: {
              adds: [
                { geometry: point(-21.9, 64.1), attributes: { Name: "Reykjavik", Visits: 3, Checked: 1700000000000 } },
                // 10° E, 0° N in Web Mercator: projected into the layer's WGS 84.
                { geometry: point(1113194.9079327357, 0, 102100), attributes: { Name: "Equator", OBJECTID: 99 } },
              ],
              returnEditMoment: true,
            },
          },
        },
      ])) as [Record<string, unknown>];
      expect(added).toEqual({
        addResults: [
          { objectId: 1, globalId: GID, success: true },
          { objectId: 2, globalId: GID, success: true },
        ],
        updateResults: [],
        deleteResults: [],
        editMoment: expect.any(Number),
      });
      const got = await rows();
      expect(got).toEqual([
        { OBJECTID: 1, Name: "Reykjavik", Visits: 3, Checked: 1700000000000, x: -21.9, y: 64.1 },
        { OBJECTID: 2, Name: "Equator", Visits: null, Checked: null, x: expect.closeTo(10, 9), y: 0 },
      ]);
      expect(await count()).toBe(2);
      expect(await pbfCount()).toBe(2);
      expect(await lastEdit()).toBeGreaterThan(before);
      expect(await lastEdit()).toBe(added.editMoment);
    });

    it("updates a feature's attributes and geometry (updateFeatures), and adds one (addFeatures)", async () => {
      const [updated, added] = (await client([
        {
          fn: "updateFeatures",
          options: {
            url: layer(),
            params: { features: [{ attributes: { OBJECTID: 2, Visits: 7 }, geometry: point(11, 1) }] },
          },
        },
        {
          fn: "addFeatures",
          options: {
            url: layer(),
            params: { features: [{ geometry: point(0, 0), attributes: { Name: "Null Island" } }] },
          },
        },
      ])) as Record<string, unknown>[];
      expect(updated).toEqual({ updateResults: [{ objectId: 2, globalId: null, success: true }] });
      expect(added).toEqual({ addResults: [{ objectId: 3, globalId: GID, success: true }] });
      expect((await rows()).map((r) => [r.OBJECTID, r.Name, r.Visits, r.x, r.y])).toEqual([
        [1, "Reykjavik", 3, -21.9, 64.1],
        [2, "Equator", 7, 11, 1],
        [3, "Null Island", null, 0, 0],
      ]);
      expect(await count("Visits = 7")).toBe(1);
    });

    it("deletes by object ids, by a where clause and by an envelope (deleteFeatures)", async () => {
      const more = await post("0/addFeatures", {
        features: JSON.stringify([
          { geometry: point(5, 5), attributes: { Name: "a" } },
          { geometry: point(6, 6), attributes: { Name: "b" } },
          { geometry: point(7, 7), attributes: { Name: "c" } },
        ]),
      });
      expect(more).toEqual({
        addResults: [
          { objectId: 4, globalId: GID, success: true },
          { objectId: 5, globalId: GID, success: true },
          { objectId: 6, globalId: GID, success: true },
        ],
      });
      const [byIds, byWhere] = (await client([
        { fn: "deleteFeatures", options: { url: layer(), params: { objectIds: [4] } } },
        { fn: "deleteFeatures", options: { url: layer(), params: { where: "Name = 'b'" } } },
      ])) as Record<string, unknown>[];
      // By an envelope, as QGIS and esri-leaflet send it (REST JS sends no geometry to deleteFeatures).
      const byEnvelope = await post("0/deleteFeatures", {
        geometry: JSON.stringify({ xmin: 6.5, ymin: 6.5, xmax: 7.5, ymax: 7.5, spatialReference: { wkid: 4326 } }),
        geometryType: "esriGeometryEnvelope",
        spatialRel: "esriSpatialRelIntersects",
      });
      expect(byIds).toEqual({ deleteResults: [{ objectId: 4, globalId: null, success: true }] });
      expect(byWhere).toEqual({ deleteResults: [{ objectId: 5, globalId: null, success: true }] });
      expect(byEnvelope).toEqual({ deleteResults: [{ objectId: 6, globalId: null, success: true }] });
      expect(await count()).toBe(3);
      expect(await pbfCount()).toBe(3);
    });
  });

  describe("each feature checked, with ArcGIS's codes", () => {
    const bad = [
      { attributes: { Visits: 2147483648 }, geometry: point(1, 1) },
      { attributes: { Name: "far too long a name" }, geometry: point(1, 1) },
      { attributes: { Nope: 1 }, geometry: point(1, 1) },
      {
        attributes: { Name: "line" },
        geometry: {
          paths: [
            [
              [0, 0],
              [1, 1],
            ],
          ],
        },
      },
      { attributes: { Name: "nowhere" }, geometry: point(200, 1) },
      { attributes: { Checked: "yesterday" }, geometry: point(1, 1) },
    ];
    const badErrors = [
      { code: 1016, description: "Setting of value for Visits failed: 2147483648 is outside -2147483648…2147483647." },
      {
        code: 1016,
        description: "Setting of value for Name failed: the text is longer than the field's 12 characters.",
      },
      { code: 1000, description: "Field Nope does not exist in the layer." },
      { code: 1015, description: "Geometry could not be set: it is a polyline; the layer holds points." },
      {
        code: 1015,
        description: "Geometry could not be set: its coordinates are outside longitude -180…180 and latitude -90…90.",
      },
      {
        code: 1016,
        description:
          'Setting of value for Checked failed: "yesterday" is not a date (milliseconds since 1970-01-01 UTC).',
      },
    ];
    const edits = {
      adds: JSON.stringify([{ attributes: { Name: "good" }, geometry: point(2, 2) }, ...bad]),
      updates: JSON.stringify([{ attributes: { OBJECTID: 404, Visits: 1 } }, { attributes: { Visits: 1 } }]),
      deletes: "405",
    };
    const failures = {
      addResults: badErrors.map((error) => ({ objectId: -1, globalId: null, success: false, error })),
      updateResults: [
        {
          objectId: 404,
          globalId: null,
          success: false,
          error: { code: 1019, description: "Update for the object was not attempted. Object may not exist." },
        },
        {
          objectId: null,
          globalId: null,
          success: false,
          error: { code: 1011, description: "Object is missing: the update's attributes name no OBJECTID." },
        },
      ],
      deleteResults: [
        {
          objectId: 405,
          globalId: null,
          success: false,
          error: { code: 1019, description: "Delete for the object was not attempted. Object may not exist." },
        },
      ],
    };

    it("rolls the whole request back when one fails (rollbackOnFailure, the default), answering the failures", async () => {
      const before = await lastEdit();
      expect(await post("0/applyEdits", edits)).toEqual(failures);
      expect(await count()).toBe(3);
      expect(await lastEdit()).toBe(before);
    });

    it("writes the good ones with rollbackOnFailure=false, each result in order", async () => {
      const answer = await post("0/applyEdits", { ...edits, rollbackOnFailure: "false" });
      expect(answer).toEqual({
        // A database's identity does not give back the ids a rolled-back request took: ids are the store's to number.
        addResults: [{ objectId: ANY_ID, globalId: GID, success: true }, ...failures.addResults],
        updateResults: failures.updateResults,
        deleteResults: failures.deleteResults,
      });
      expect(await count()).toBe(4);
      expect(await count("Name = 'good'")).toBe(1);
    });

    it("writes hundreds of adds many rows to an INSERT, each result the id of its own row, failures among them", async () => {
      // Runs of adds writing the same columns go in one INSERT of at most 100 rows: 230 adds, Visits given to 60 of
      // them (a run of other columns), one without a geometry, and every 50th too long (its own error).
      const before = await count();
      const adds = Array.from({ length: 230 }, (_, i) => ({
        attributes: { Name: i % 50 === 7 ? "a name too long" : `b${i}`, ...(i >= 120 && i < 180 ? { Visits: i } : {}) },
        ...(i === 200 ? {} : { geometry: point(i / 10, i / 10 - 30) }),
      }));
      const answer = (await post("0/applyEdits", { adds: JSON.stringify(adds), rollbackOnFailure: "false" })) as {
        addResults: { objectId: number; globalId: string | null; success: boolean; error?: { code: number } }[];
      };
      expect(answer.addResults).toHaveLength(230);
      expect(answer.addResults.flatMap((r, i) => (r.success ? [] : [[i, r.objectId, r.error?.code]]))).toEqual(
        [7, 57, 107, 157, 207].map((i) => [i, -1, 1016]),
      );
      const written = answer.addResults.flatMap((r, i) => (r.success ? [{ i, id: r.objectId, gid: r.globalId }] : []));
      // Numbered in the request's order, each once.
      const ids = written.map((w) => w.id);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(225);
      const found = (
        (
          await getJson(
            `${layer()}/query?where=${encodeURIComponent("Name LIKE 'b%'")}&outFields=OBJECTID,Name,Visits,GlobalID&resultRecordCount=1000`,
            tokens.publisher,
          )
        ).features as { attributes: Record<string, unknown>; geometry?: { x: number; y: number } }[]
      ).map((f) => [f.attributes.OBJECTID as number, f] as const);
      const rowsById = new Map(found);
      expect(rowsById.size).toBe(225);
      for (const { i, id, gid } of written) {
        const f = rowsById.get(id);
        expect(f?.attributes).toEqual({
          OBJECTID: id,
          Name: `b${i}`,
          Visits: i >= 120 && i < 180 ? i : null,
          GlobalID: gid,
        });
        if (i === 200) expect(f?.geometry).toBeNull();
        else expect([f?.geometry?.x, f?.geometry?.y]).toEqual([i / 10, i / 10 - 30]);
      }
      const removed = (await post("0/deleteFeatures", { where: "Name LIKE 'b%'" })) as { deleteResults: unknown[] };
      expect(removed.deleteResults).toHaveLength(225);
      expect(await count()).toBe(before);
    });

    it("refuses a request that is not edits, plainly", async () => {
      const notJson = await post("0/applyEdits", { adds: "[{" });
      expect(notJson.error).toMatchObject({ code: 400, details: ["'adds' is not valid JSON."] });
      const notList = await post("0/addFeatures", { features: "{}" });
      expect(notList.error).toMatchObject({ code: 400, details: ["'features' must be a JSON array of features."] });
      const deep = await post("0/addFeatures", { features: `${"[".repeat(40)}${"]".repeat(40)}` });
      expect(deep.error).toMatchObject({ code: 400, details: ["'features' nests deeper than 12 levels."] });
      const tooMany = await post("0/deleteFeatures", {
        objectIds: Array.from({ length: 2001 }, (_, i) => i + 1).join(","),
      });
      expect(tooMany.error).toMatchObject({
        code: 400,
        details: ["A request makes at most 2000 edits (adds, updates and deletes together); this one has 2001."],
      });
      const nothing = await post("0/deleteFeatures", {});
      expect(nothing.error).toMatchObject({
        code: 400,
        details: ["deleteFeatures needs 'objectIds', 'where' or 'geometry' to name the features to delete."],
      });
      // A GET of an edit reaches the service, which asks for a POST (as ArcGIS does).
      const got = await getJson(`${layer()}/applyEdits?adds=[]`, tokens.publisher);
      expect(got.error).toMatchObject({ code: 405, details: ["This operation requires POST."] });
      const noLayer = await post("7/addFeatures", { features: "[]" });
      expect(noLayer.error).toMatchObject({ code: 400, details: ["The service has no layer or table with id 7."] });
      expect(await count()).toBe(4);
    });
  });

  describe("a service's applyEdits", () => {
    it("edits a layer and a table in one transaction, and a failure in one rolls back the other", async () => {
      const [both] = (await client([
        {
          fn: "request",
          options: {
            url: `${url}/applyEdits`,
            params: {
              edits: [
                { id: 0, adds: [{ geometry: point(3, 3), attributes: { Name: "with note" } }] },
                { id: 1, adds: [{ attributes: { Note: "seen" } }] },
              ],
            },
          },
        },
      ])) as Record<string, unknown>[];
      expect(both).toEqual([
        {
          id: 0,
          addResults: [{ objectId: ANY_ID, globalId: GID, success: true }],
          updateResults: [],
          deleteResults: [],
        },
        {
          id: 1,
          addResults: [{ objectId: ANY_ID, globalId: GID, success: true }],
          updateResults: [],
          deleteResults: [],
        },
      ]);
      const failed = await post("applyEdits", {
        edits: JSON.stringify([
          { id: 0, adds: [{ geometry: point(4, 4), attributes: { Name: "lost" } }] },
          { id: 1, adds: [{ attributes: { Note: "x".repeat(41) } }] },
        ]),
      });
      expect(failed).toEqual([
        { id: 0, addResults: [], updateResults: [], deleteResults: [] },
        {
          id: 1,
          addResults: [
            {
              objectId: -1,
              globalId: null,
              success: false,
              error: {
                code: 1016,
                description: "Setting of value for Note failed: the text is longer than the field's 40 characters.",
              },
            },
          ],
          updateResults: [],
          deleteResults: [],
        },
      ]);
      expect(await count("Name = 'lost'")).toBe(0);
      expect(await count("1=1", 1)).toBe(1);
    });
  });

  describe("who may edit", () => {
    const add = (token: string) =>
      post(
        "0/addFeatures",
        { features: JSON.stringify([{ geometry: point(8, 8), attributes: { Name: "who" } }]) },
        token,
      );

    it("refuses anonymous callers and members the service is not shared with, as a query would", async () => {
      expect((await postJson(`${layer()}/addFeatures`, "", { features: "[]" })).error).toMatchObject({ code: 499 });
      expect((await add(tokens.user)).error).toMatchObject({ code: 404, message: "Service not found." });
    });

    it("lets a member it is shared with edit while editing is enabled, and refuses once the owner turns it off", async () => {
      expect(await share(engine, tokens.publisher, itemId, { org: "true" })).toMatchObject({ notSharedWith: [] });
      expect(await add(tokens.user)).toEqual({ addResults: [{ objectId: ANY_ID, globalId: GID, success: true }] });
      const [off] = (await client([
        {
          fn: "updateServiceDefinition",
          options: { url, updateDefinition: { capabilities: "Query" } },
        },
      ])) as Record<string, unknown>[];
      expect(off).toEqual({ success: true });
      expect((await getJson(layer(), tokens.user)).capabilities).toBe("Query");
      expect((await add(tokens.user)).error).toEqual({
        code: 403,
        messageCode: "GWM_0003",
        message: "You do not have permissions to access this resource or perform this operation.",
        details: ["User does not have permissions to access 'hosted/survey.featureserver'."],
      });
      // Its owner and the organization's administrators still may.
      expect(await add(tokens.publisher)).toEqual({ addResults: [{ objectId: ANY_ID, globalId: GID, success: true }] });
      expect(await add(tokens.admin)).toEqual({ addResults: [{ objectId: ANY_ID, globalId: GID, success: true }] });
      const [on] = (await client([
        {
          fn: "updateServiceDefinition",
          options: { url, updateDefinition: { capabilities: "Query,Create,Update,Delete,Editing" } },
        },
      ])) as Record<string, unknown>[];
      expect(on).toEqual({ success: true });
      expect((await getJson(layer(), tokens.user)).capabilities).toBe("Create,Delete,Query,Update,Editing");
    });
  });

  describe("editor tracking and global ids", () => {
    it("fills the tracking fields from the caller and the clock, a forged one ignored, and moves them on update", async () => {
      const started = Date.now() - 1000;
      const forged = "{00000000-0000-0000-0000-000000000000}";
      const added = await post("0/addFeatures", {
        features: JSON.stringify([
          {
            geometry: point(9, 9),
            attributes: { Name: "tracked", Creator: "mallory", Editor: "mallory", CreationDate: 0, GlobalID: forged },
          },
        ]),
      });
      const [made] = added.addResults as { objectId: number; globalId: string }[];
      expect(made?.globalId).toEqual(GID);
      expect(made?.globalId).not.toBe(forged);
      const read = async () =>
        (
          (await getJson(`${layer()}/query?where=OBJECTID%3D${made?.objectId}&outFields=*`, tokens.publisher))
            .features as { attributes: Record<string, unknown> }[]
        )[0]?.attributes ?? {};
      const first = await read();
      expect(first).toMatchObject({ GlobalID: made?.globalId, Creator: "publisher", Editor: "publisher" });
      expect(first.CreationDate).toBeGreaterThanOrEqual(started);
      expect(first.EditDate).toBe(first.CreationDate);
      // A member it is shared with updates it: the editor and edit date move, its making stays.
      const updated = await post(
        "0/updateFeatures",
        { features: JSON.stringify([{ attributes: { OBJECTID: made?.objectId, Visits: 2, Editor: "mallory" } }]) },
        tokens.user,
      );
      expect(updated).toEqual({ updateResults: [{ objectId: made?.objectId, globalId: null, success: true }] });
      const second = await read();
      expect(second).toMatchObject({ Creator: "publisher", Editor: "user", CreationDate: first.CreationDate });
      expect(second.EditDate).toBeGreaterThanOrEqual(first.EditDate as number);
    });

    it("keeps a client's global id with useGlobalIds, and updates and deletes by it", async () => {
      const gid = "{1B2C3D4E-0000-4000-8000-00000000ABCD}";
      const added = await post("0/applyEdits", {
        adds: JSON.stringify([{ geometry: point(9, 8), attributes: { Name: "by gid", GlobalID: gid.toLowerCase() } }]),
        useGlobalIds: "true",
      });
      expect(added.addResults).toEqual([{ objectId: ANY_ID, globalId: gid, success: true }]);
      const id = (added.addResults as { objectId: number }[])[0]?.objectId;
      const updated = await post("0/applyEdits", {
        updates: JSON.stringify([{ attributes: { GlobalID: gid, Visits: 5 } }]),
        useGlobalIds: "true",
      });
      expect(updated.updateResults).toEqual([{ objectId: id, globalId: gid, success: true }]);
      expect(await count("Visits = 5 AND Name = 'by gid'")).toBe(1);
      const deleted = await post("0/applyEdits", { deletes: JSON.stringify([gid]), useGlobalIds: "true" });
      expect(deleted.deleteResults).toEqual([{ objectId: id, globalId: gid, success: true }]);
      expect(await count("Name = 'by gid'")).toBe(0);
    });

    it("records the size of the data an edit leaves in the service's item", async () => {
      const size = async () => (await getJson(`${rest()}/content/items/${itemId}`, tokens.publisher)).size as number;
      const before = await size();
      const many = Array.from({ length: 300 }, (_, i) => ({
        geometry: point(i / 10, -i / 10),
        attributes: { Name: `sz${i}` },
      }));
      const added = await post("0/addFeatures", { features: JSON.stringify(many) });
      const ids = (added.addResults as { objectId: number; success: boolean }[]).map((r) => r.objectId);
      expect(ids).toHaveLength(300);
      expect(await size()).toBeGreaterThan(before);
      await post("0/deleteFeatures", { objectIds: ids.join(",") });
      expect(await count("Name LIKE 'sz%'")).toBe(0);
    });

    it("tells its rows' extent as of the last edit: a far add widens it on the next read, its delete narrows it", async () => {
      type Extent = { xmin: number; ymin: number; xmax: number; ymax: number };
      const extent = async () => (await getJson(layer(), tokens.publisher)).extent as Extent;
      const before = await extent();
      expect(before.xmax).toBeLessThan(170);
      const added = await post("0/addFeatures", {
        features: JSON.stringify([{ geometry: point(170, -80), attributes: { Name: "far" } }]),
      });
      const id = (added.addResults as { objectId: number }[])[0]?.objectId;
      const wide = await extent();
      // A GeoPackage's extent comes from its R*Tree, whose single-precision bounds are rounded outwards.
      expect(wide.xmax).toBeCloseTo(170, 4);
      expect(wide.ymin).toBeCloseTo(-80, 4);
      expect(wide.xmin).toBeCloseTo(before.xmin, 4);
      expect(wide.ymax).toBeCloseTo(before.ymax, 4);
      expect(await post("0/deleteFeatures", { objectIds: String(id) })).toEqual({
        deleteResults: [{ objectId: id, globalId: null, success: true }],
      });
      const after = await extent();
      for (const k of ["xmin", "ymin", "xmax", "ymax"] as const) expect(after[k]).toBeCloseTo(before[k], 4);
    });
  });

  describe("the edited data", () => {
    it("is read by GDAL", async () => {
      const out = execFileSync("ogrinfo", ["-ro", "-so", ...backing.gdalSource(engine.dataDir, itemId), "Sites"], {
        encoding: "utf8",
      });
      expect(out).toContain(`Feature Count: ${await count()}`);
    });
  });

  return { engine: () => engine };
}
