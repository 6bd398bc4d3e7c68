// Hosted feature services defined by their clients, run on each backing of hosted data
// (test/hosted-define.e2e.test.ts: a GeoPackage per service; test/hosted-define-postgis.e2e.test.ts: PostgreSQL +
// PostGIS behind a stand-in for RDS Proxy), through the real local engine: ArcGIS REST JS's createFeatureService and
// addToServiceDefinition (its session exchanging its portal token for a server-token for the admin wire by itself),
// the service then read by REST JS, the REST directory, search and GDAL; fields added, renamed and deleted and
// layers deleted on the admin wire, each seen by the next query; a published layer truncated; who may do it; bad
// definitions each refused with what is wrong, leaving the service as it was.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { defineCalls } from "./arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine, signInMembers } from "./engine.ts";
import { call, form, jsonCalls, multipartBody } from "./http.ts";

/** Where a run keeps hosted data, and how a test looks at a service's data there. */
export interface DefineBacking {
  /** Started before the engine; answers the engine's environment. */
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** How GDAL opens a service's layers and tables (its file, or its schema of the database): ogrinfo's last arguments. */
  gdalSource(dataDir: string, serviceItemId: string): string[];
  /** Whether a service's data is kept. */
  exists(dataDir: string, serviceItemId: string): Promise<boolean>;
  /** What a service's data takes where it is kept. */
  dataBytes(dataDir: string, serviceItemId: string): Promise<number>;
  /** The aliases kept where the backing keeps them, by column, for one layer's table. */
  aliases(dataDir: string, serviceItemId: string, table: string): Promise<Record<string, string>>;
  /** The columns of one layer's table with a btree index of their own (beside its key), in name order. */
  indexedColumns(dataDir: string, serviceItemId: string, table: string): Promise<string[]>;
}

export function hostedDefineSuite(backing: DefineBacking): { readonly engine: () => RunningEngine } {
  let engine: RunningEngine;
  const tokens = { admin: "", publisher: "", user: "" };
  const rest = () => `${engine.ready.https}/portal/sharing/rest`;
  const services = () => `${engine.ready.https}/arcgis/rest/services`;
  const admin = () => `${engine.ready.https}/arcgis/rest/admin/services`;
  const { getJson, postJson } = jsonCalls(() => engine.ca);

  beforeAll(async () => {
    const env = await backing.start();
    // A member may keep 1 MiB: an empty service takes 40 KB (a GeoPackage) or nothing (a schema), each empty point
    // layer about 19 KB (a GeoPackage) or 16 KB (a table's key and spatial indexes).
    engine = await startEngine({ env: { ...env, STORAGE_QUOTA_USER_MB: "1" } });
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
  }, 120_000);

  afterAll(async () => {
    await engine?.stop();
    await backing.stop();
  });

  const OID = { name: "OBJECTID", type: "esriFieldTypeOID", alias: "OBJECTID", nullable: false, editable: false };
  /** The global id and editor-tracking fields every new hosted layer has, after its own. */
  const TRACKED = ["GlobalID", "CreationDate", "Creator", "EditDate", "Editor"];
  const TRACKED_FIELDS = [
    { name: "GlobalID", type: "esriFieldTypeGlobalID", alias: "GlobalID", length: 38 },
    { name: "CreationDate", type: "esriFieldTypeDate", alias: "CreationDate" },
    { name: "Creator", type: "esriFieldTypeString", alias: "Creator", length: 128 },
    { name: "EditDate", type: "esriFieldTypeDate", alias: "EditDate" },
    { name: "Editor", type: "esriFieldTypeString", alias: "Editor", length: 128 },
  ];
  const SITES_LAYER = {
    name: "Sites",
    type: "Feature Layer",
    geometryType: "esriGeometryPoint",
    objectIdField: "OBJECTID",
    extent: { xmin: -180, ymin: -90, xmax: 180, ymax: 90, spatialReference: { wkid: 4326 } },
    drawingInfo: { renderer: { type: "simple" } },
    fields: [
      OID,
      { name: "Name", type: "esriFieldTypeString", alias: "Site <i>name</i>", length: 100 },
      { name: "Visits", type: "esriFieldTypeInteger", alias: "Visits" },
      { name: "Checked", type: "esriFieldTypeDate", alias: "Checked" },
      { name: "Shape", type: "esriFieldTypeGeometry", alias: "Shape" },
    ],
  };
  const VISITS_TABLE = {
    name: "Visits",
    type: "Table",
    objectIdField: "OBJECTID",
    fields: [OID, { name: "SiteId", type: "esriFieldTypeInteger" }, { name: "Note", type: "esriFieldTypeString" }],
  };

  /** The fields a layer's JSON lists, as name, type, alias and length. */
  const fieldsOf = (layer: Record<string, unknown>) =>
    (layer.fields as { name: string; type: string; alias: string; length?: number }[]).map((f) => ({
      name: f.name,
      type: f.type,
      alias: f.alias,
      ...(f.length !== undefined ? { length: f.length } : {}),
    }));

  const gdal = (itemId: string) => backing.gdalSource(engine.dataDir, itemId);

  describe("a service defined by ArcGIS REST JS", () => {
    let url = "";
    let itemId = "";

    it("is created empty, given a point layer and a table, and read back as ArcGIS answers", async () => {
      const results = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
        {
          fn: "createFeatureService",
          options: {
            item: {
              name: "Sites",
              serviceDescription: "Field sites",
              capabilities: "Query",
              maxRecordCount: 2000,
              spatialReference: { wkid: 102100 },
              initialExtent: {
                xmin: -20037507,
                ymin: -30240971,
                xmax: 20037507,
                ymax: 18398924,
                spatialReference: { wkid: 102100 },
              },
              hasStaticData: false,
            },
          },
        },
      ])) as [Record<string, unknown>, { portalToken: string }];
      const [created] = results;
      url = `${services()}/Hosted/Sites/FeatureServer`;
      expect(created).toEqual({
        encodedServiceURL: url,
        itemId: expect.stringMatching(/^[0-9a-f]{32}$/),
        name: "Sites",
        serviceItemId: created.itemId,
        serviceurl: url,
        size: -1,
        success: true,
        type: "Feature Service",
        isView: false,
      });
      itemId = String(created.itemId);

      const [added, service, layer, table, query, token, editingOff, readOnly, editingOn, session] = (await defineCalls(
        engine,
        "publisher",
        PASSWORDS.publisher,
        [
          { fn: "addToServiceDefinition", options: { url, layers: [SITES_LAYER], tables: [VISITS_TABLE] } },
          { fn: "getService", options: { url } },
          { fn: "getLayer", options: { url: `${url}/0` } },
          { fn: "getLayer", options: { url: `${url}/1` } },
          { fn: "queryFeatures", options: { url: `${url}/0`, params: { where: "1=1", outFields: "*" } } },
          { fn: "tokenFor", options: { url: `${admin()}/Hosted/Sites/FeatureServer/addToDefinition` } },
          // Editing is on from the start; its owner turns it off and on again on the admin wire.
          { fn: "updateServiceDefinition", options: { url, updateDefinition: { capabilities: "Query" } } },
          { fn: "getService", options: { url } },
          {
            fn: "updateServiceDefinition",
            options: { url, updateDefinition: { capabilities: "Create,Delete,Query,Update,Editing" } },
          },
        ],
      )) as Record<string, unknown>[];
      expect(added).toEqual({ success: true, layers: [{ name: "Sites", id: 0 }], tables: [{ name: "Visits", id: 1 }] });
      expect(service).toMatchObject({
        serviceDescription: "Field sites",
        capabilities: "Create,Delete,Query,Update,Editing",
        spatialReference: { wkid: 4326, latestWkid: 4326 },
        layers: [{ id: 0, name: "Sites", type: "Feature Layer", geometryType: "esriGeometryPoint" }],
        tables: [{ id: 1, name: "Visits", type: "Table" }],
        serviceItemId: itemId,
      });
      expect(layer).toMatchObject({
        id: 0,
        name: "Sites",
        type: "Feature Layer",
        geometryType: "esriGeometryPoint",
        objectIdField: "OBJECTID",
        capabilities: "Create,Delete,Query,Update,Editing",
        allowGeometryUpdates: true,
        supportsRollbackOnFailureParameter: true,
        templates: [
          {
            name: "Sites",
            description: "",
            prototype: { attributes: {} },
            drawingTool: "esriFeatureEditToolPoint",
          },
        ],
      });
      expect(fieldsOf(layer as Record<string, unknown>)).toEqual([
        { name: "OBJECTID", type: "esriFieldTypeOID", alias: "OBJECTID" },
        { name: "Name", type: "esriFieldTypeString", alias: "Site <i>name</i>", length: 100 },
        { name: "Visits", type: "esriFieldTypeInteger", alias: "Visits" },
        { name: "Checked", type: "esriFieldTypeDate", alias: "Checked" },
        ...TRACKED_FIELDS,
      ]);
      expect(table).toMatchObject({ id: 1, name: "Visits", type: "Table", objectIdField: "OBJECTID" });
      expect(fieldsOf(table as Record<string, unknown>)).toEqual([
        { name: "OBJECTID", type: "esriFieldTypeOID", alias: "OBJECTID" },
        { name: "SiteId", type: "esriFieldTypeInteger", alias: "SiteId" },
        { name: "Note", type: "esriFieldTypeString", alias: "Note", length: 256 },
        ...TRACKED_FIELDS,
      ]);
      expect(query).toMatchObject({ objectIdFieldName: "OBJECTID", features: [], exceededTransferLimit: false });
      // The admin wire got a server-token the session exchanged for its portal token (at generateToken, with
      // serverUrl): not the portal token itself.
      expect(typeof token).toBe("string");
      expect(token).not.toBe(session?.portalToken);
      expect(session?.federatedServers).toEqual([`${engine.ready.https}/arcgis`]);
      expect(editingOff).toEqual({ success: true });
      expect(readOnly).toMatchObject({ capabilities: "Query" });
      expect(editingOn).toEqual({ success: true });
    });

    it("takes rows by append into a defined layer, and upserts them by a key field (its object id OBJECTID)", async () => {
      const layer = `${url}/0`;
      const append = async (csv: string, fields: Record<string, string> = {}) => {
        const { body, type } = await multipartBody(
          { f: "json", token: tokens.publisher, type: "CSV", title: "More sites" },
          { file: { name: "more.csv", bytes: csv } },
        );
        const file = (
          await call(`${rest()}/content/users/publisher/addItem`, {
            ca: engine.ca,
            body,
            headers: { "content-type": type },
          })
        ).json<{ id: string }>().id;
        return postJson(`${layer}/append`, tokens.publisher, {
          appendItemId: file,
          appendUploadFormat: "csv",
          ...fields,
        });
      };
      expect(await append("Name,Visits,Latitude,Longitude\nA,1,48.8,2.3\nB,2,40.4,-3.7\n")).toEqual({ success: true });
      expect(
        await append("Name,Visits,Latitude,Longitude\nA,5,48.8,2.3\nC,3,52.3,4.9\n", {
          upsert: "true",
          upsertMatchingField: "Name",
        }),
      ).toEqual({ success: true });
      const rows = await getJson(
        `${layer}/query?where=1%3D1&outFields=Name,Visits&orderByFields=Name`,
        tokens.publisher,
      );
      expect((rows.features as { attributes: Record<string, unknown> }[]).map((f) => f.attributes)).toEqual([
        { OBJECTID: 1, Name: "A", Visits: 5 },
        { OBJECTID: 2, Name: "B", Visits: 2 },
        { OBJECTID: 3, Name: "C", Visits: 3 },
      ]);
      // Emptied again for what follows (the layer is read as empty below).
      const admin = layer.replace("/rest/services/", "/rest/admin/services/");
      expect(await postJson(`${admin}/truncate`, tokens.publisher)).toEqual({ success: true });
    });

    it("is listed in the REST directory and found by search; GDAL reads its empty layer and table", async () => {
      const folder = await getJson(`${services()}/Hosted`, tokens.publisher);
      expect(folder.services).toContainEqual({ name: "Hosted/Sites", type: "FeatureServer" });
      const found = await getJson(`${rest()}/search?q=${encodeURIComponent('title:"Sites"')}`, tokens.publisher);
      expect(found.results).toContainEqual(
        expect.objectContaining({ id: itemId, type: "Feature Service", url, owner: "publisher" }),
      );
      const info = execFileSync("ogrinfo", ["-ro", "-al", "-so", ...gdal(itemId)], { encoding: "utf8" });
      expect(info).toMatch(/Layer name: Sites\n/);
      expect(info).toMatch(/Geometry: Point\n/);
      expect(info).toMatch(/Layer name: Visits\n/);
      // mapgate's own tables beside the layers (the editing record, the edit log), which GDAL lists among a database
      // schema's tables, are no layers.
      const layerCounts = Object.fromEntries(
        [...info.matchAll(/Layer name: (\w+)[\s\S]*?Feature Count: (\d+)/g)]
          .filter((m) => !m[1]?.startsWith("mapgate_"))
          .map((m) => [m[1], Number(m[2])]),
      );
      expect(layerCounts).toEqual({ Sites: 0, Visits: 0 });
      expect(info).toMatch(/Name: String \(100\.0\)/);
      // An Integer is 32 bits wide where it is kept (GDAL would say Integer64 of a wider column).
      expect(info).toMatch(/Visits: Integer \(0\.0\)/);
      // The alias is kept where the backing keeps aliases (a GeoPackage's gpkg_data_columns, a column's comment).
      expect(await backing.aliases(engine.dataDir, itemId, "Sites")).toEqual({ Name: "Site <i>name</i>" });
      // The global id is indexed: edits by global id find their feature without reading the table.
      expect(await backing.indexedColumns(engine.dataDir, itemId, "Sites")).toEqual(["GlobalID"]);
      expect(await backing.indexedColumns(engine.dataDir, itemId, "Visits")).toEqual(["GlobalID"]);
    });

    it("escapes names and aliases on its HTML pages", async () => {
      const page = await call(`${url}/0?f=html&token=${tokens.publisher}`, { ca: engine.ca });
      expect(page.status).toBe(200);
      expect(page.text).toContain("<td>Site &#60;i&#62;name&#60;/i&#62;</td>");
      expect(page.text).not.toContain("<i>name");
      // A layer's name too, on the service's page.
      const odd = await postJson(`${admin()}/Hosted/Sites/FeatureServer/addToDefinition`, tokens.publisher, {
        addToDefinition: JSON.stringify({ tables: [{ name: 'Odd <img src=x onerror="alert(1)">' }] }),
      });
      expect(odd).toMatchObject({ success: true, tables: [{ id: 2 }] });
      const servicePage = await call(`${url}?f=html&token=${tokens.publisher}`, { ca: engine.ca });
      expect(servicePage.text).toContain("Odd &#60;img src=x onerror=&#34;alert(1)&#34;&#62;");
      expect(servicePage.text).not.toContain("<img");
      const removed = await postJson(`${admin()}/Hosted/Sites/FeatureServer/deleteFromDefinition`, tokens.publisher, {
        deleteFromDefinition: JSON.stringify({ tables: [{ id: 2 }] }),
      });
      expect(removed).toEqual({ success: true });
    });

    it("has fields added, renamed and deleted on the admin wire, each answered {success: true}", async () => {
      const layerUrl = `${admin()}/Hosted/Sites/FeatureServer/0`;
      const query = (params: string) => getJson(`${url}/0/query?f=json&${params}`, tokens.publisher);
      const queriedFields = async (params: string) =>
        ((await query(params)).fields as { name: string }[] | undefined)?.map((f) => f.name);
      // Read (and so described, by a reader that keeps a layer's schema) before each change.
      expect(await queriedFields("where=1%3D1&outFields=*")).toEqual([
        "OBJECTID",
        "Name",
        "Visits",
        "Checked",
        ...TRACKED,
      ]);
      const add = await postJson(`${layerUrl}/addToDefinition`, tokens.publisher, {
        addToDefinition: JSON.stringify({
          fields: [{ name: "Rating", type: "esriFieldTypeDouble", alias: "Rating (0–5)", nullable: true }],
        }),
      });
      expect(add).toEqual({ success: true });
      // The next query sees the new field: asked for, and in a where clause.
      expect(await queriedFields("where=Rating%20IS%20NULL&outFields=Rating")).toEqual(["OBJECTID", "Rating"]);
      const update = await postJson(`${layerUrl}/updateDefinition`, tokens.publisher, {
        updateDefinition: JSON.stringify({ fields: [{ name: "visits", alias: "Visits this year" }] }),
      });
      expect(update).toEqual({ success: true });
      // An administrator changes a member's service too.
      const remove = await postJson(`${layerUrl}/deleteFromDefinition`, tokens.admin, {
        deleteFromDefinition: JSON.stringify({ fields: [{ name: "Checked" }] }),
      });
      expect(remove).toEqual({ success: true });
      // The next query no longer has the deleted field, nor asks the data for it.
      expect(await queriedFields("where=1%3D1&outFields=*")).toEqual([
        "OBJECTID",
        "Name",
        "Visits",
        ...TRACKED,
        "Rating",
      ]);
      expect(await query("where=Checked%20IS%20NULL")).toMatchObject({ error: { code: 400 } });
      const layer = await getJson(`${url}/0`, tokens.publisher);
      expect(fieldsOf(layer)).toEqual([
        { name: "OBJECTID", type: "esriFieldTypeOID", alias: "OBJECTID" },
        { name: "Name", type: "esriFieldTypeString", alias: "Site <i>name</i>", length: 100 },
        { name: "Visits", type: "esriFieldTypeInteger", alias: "Visits this year" },
        ...TRACKED_FIELDS,
        { name: "Rating", type: "esriFieldTypeDouble", alias: "Rating (0–5)" },
      ]);
    });

    it("refuses another member (403; 404 while they cannot see it), an anonymous caller (499) and creating as another user", async () => {
      const fields = { addToDefinition: JSON.stringify({ fields: [{ name: "X", type: "esriFieldTypeInteger" }] }) };
      // Private: another member is not told it exists.
      expect(await postJson(`${admin()}/Hosted/Sites/FeatureServer/0/addToDefinition`, tokens.user, fields)).toEqual({
        error: {
          code: 404,
          message: "Service not found.",
          details: ["The service does not exist or is inaccessible."],
        },
      });
      // Shared with the organization, the member reads it, and may still not change it.
      const shared = await postJson(`${rest()}/content/users/publisher/items/${itemId}/share`, tokens.publisher, {
        everyone: "false",
        org: "true",
      });
      expect(shared).toMatchObject({ notSharedWith: [] });
      expect(await getJson(`${url}/0`, tokens.user)).toMatchObject({ name: "Sites" });
      expect(await postJson(`${admin()}/Hosted/Sites/FeatureServer/0/addToDefinition`, tokens.user, fields)).toEqual({
        error: {
          code: 403,
          messageCode: "GWM_0003",
          message: "You do not have permissions to access this resource or perform this operation.",
          details: [],
        },
      });
      const anonymous = await call(`${admin()}/Hosted/Sites/FeatureServer/0/addToDefinition`, {
        ca: engine.ca,
        body: form({ f: "json", ...fields }),
      });
      expect(anonymous.json<{ error: { code: number } }>().error.code).toBe(499);
      const created = await postJson(`${rest()}/content/users/user/createService`, tokens.user, {
        outputType: "featureService",
        createParameters: JSON.stringify({ name: "Mine" }),
      });
      expect((created.error as { code: number }).code).toBe(403);
      const layer = await getJson(`${url}/0`, tokens.publisher);
      expect(fieldsOf(layer).map((f) => f.name)).toEqual(["OBJECTID", "Name", "Visits", ...TRACKED, "Rating"]);
    });

    it("refuses bad definitions, each with what is wrong, and stays as it was", async () => {
      const addLayer = (layer: object) =>
        postJson(`${admin()}/Hosted/Sites/FeatureServer/addToDefinition`, tokens.publisher, {
          addToDefinition: JSON.stringify({ layers: [layer] }),
        });
      const unknownType = await addLayer({
        name: "Bad1",
        geometryType: "esriGeometryPoint",
        fields: [{ name: "Depth", type: "esriFieldTypeFloat" }],
      });
      expect(unknownType).toEqual({
        error: {
          code: 400,
          message: "Unable to add feature service definition.",
          details: [
            "Layer 'Bad1': field 'Depth' has an unknown type \"esriFieldTypeFloat\" (one of esriFieldTypeOID, esriFieldTypeSmallInteger, esriFieldTypeInteger, esriFieldTypeSingle, esriFieldTypeDouble, esriFieldTypeString, esriFieldTypeDate).",
          ],
        },
      });
      const duplicate = await addLayer({
        name: "Bad2",
        geometryType: "esriGeometryPolygon",
        fields: [
          { name: "Zone", type: "esriFieldTypeString" },
          { name: "ZONE", type: "esriFieldTypeInteger" },
        ],
      });
      expect(duplicate).toEqual({
        error: {
          code: 400,
          message: "Unable to add feature service definition.",
          details: ["Layer 'Bad2': field 'ZONE' is given twice or exists already."],
        },
      });
      const geometry = await addLayer({ name: "Bad3", geometryType: "esriGeometryCircle", fields: [] });
      expect(geometry).toEqual({
        error: {
          code: 400,
          message: "Unable to add feature service definition.",
          details: [
            "Layer 'Bad3': 'geometryType' must be one of esriGeometryPoint, esriGeometryMultipoint, esriGeometryPolyline, esriGeometryPolygon (got \"esriGeometryCircle\").",
          ],
        },
      });
      const reserved = await addLayer({
        name: "Bad4",
        geometryType: "esriGeometryPoint",
        fields: [{ name: "shape", type: "esriFieldTypeString" }],
        spatialReference: { wkid: 27700 },
      });
      expect((reserved.error as { details: string[] }).details).toEqual([
        "Layer 'Bad4': the spatial reference 27700 is not one hosted layers take (WGS 84, wkid 4326, or Web Mercator, 102100/3857: hosted data is kept in WGS 84).",
        "Layer 'Bad4': 'shape' is a name hosted layers keep for themselves: name the field otherwise.",
      ]);
      const existing = await addLayer({ name: "sites", geometryType: "esriGeometryPoint" });
      expect((existing.error as { details: string[] }).details).toEqual([
        "The service has a layer or table named 'sites' already.",
      ]);
      const notJson = await postJson(`${admin()}/Hosted/Sites/FeatureServer/addToDefinition`, tokens.publisher, {
        addToDefinition: "{layers:",
      });
      expect((notJson.error as { details: string[] }).details).toEqual(["'addToDefinition' must be JSON."]);
      const missingField = await postJson(
        `${admin()}/Hosted/Sites/FeatureServer/0/deleteFromDefinition`,
        tokens.publisher,
        {
          deleteFromDefinition: JSON.stringify({
            fields: [{ name: "Nope" }, { name: "OBJECTID" }, { name: "Editor" }],
          }),
        },
      );
      expect((missingField.error as { details: string[] }).details).toEqual([
        "The layer has no field 'Nope'.",
        "'OBJECTID' is the layer's object id: it cannot be deleted.",
        "'Editor' is the layer's global id or an editor-tracking field: it cannot be deleted.",
      ]);
      const capabilities = await postJson(`${admin()}/Hosted/Sites/FeatureServer/updateDefinition`, tokens.publisher, {
        updateDefinition: JSON.stringify({ capabilities: "Query,Sync,Extract" }),
      });
      expect((capabilities.error as { details: string[] }).details).toEqual([
        "Hosted layers here offer Query, Create, Update, Delete, Editing: 'Sync', 'Extract' cannot be set.",
      ]);
      const service = await getJson(url, tokens.publisher);
      expect((service.layers as { name: string }[]).map((l) => l.name)).toEqual(["Sites"]);
      expect((service.tables as { name: string }[]).map((l) => l.name)).toEqual(["Visits"]);
    });

    it("has its table deleted from its definition", async () => {
      const deleted = await postJson(`${admin()}/Hosted/Sites/FeatureServer/deleteFromDefinition`, tokens.publisher, {
        deleteFromDefinition: JSON.stringify({ tables: [{ id: "1" }] }),
      });
      expect(deleted).toEqual({ success: true });
      const service = await getJson(url, tokens.publisher);
      expect(service.tables).toEqual([]);
      expect(await getJson(`${url}/1`, tokens.publisher)).toMatchObject({
        error: { code: 400, message: "Invalid URL" },
      });
      const info = execFileSync("ogrinfo", ["-ro", "-q", ...gdal(itemId)], { encoding: "utf8" });
      expect(info).not.toMatch(/Visits/);
    });
  });

  describe("changes made at once", () => {
    it("take turns: every field added by concurrent requests is kept", async () => {
      const created = await postJson(`${rest()}/content/users/publisher/createService`, tokens.publisher, {
        outputType: "featureService",
        createParameters: JSON.stringify({ name: "Busy" }),
      });
      expect(created).toMatchObject({ success: true, name: "Busy" });
      const base = `${admin()}/Hosted/Busy/FeatureServer`;
      const added = await postJson(`${base}/addToDefinition`, tokens.publisher, {
        addToDefinition: JSON.stringify({ tables: [{ name: "Log" }] }),
      });
      expect(added).toEqual({ success: true, layers: [], tables: [{ name: "Log", id: 0 }] });
      const names = ["A1", "B2", "C3", "D4", "E5", "F6"];
      const answers = await Promise.all(
        names.map((name) =>
          postJson(`${base}/0/addToDefinition`, tokens.publisher, {
            addToDefinition: JSON.stringify({ fields: [{ name, type: "esriFieldTypeInteger" }] }),
          }),
        ),
      );
      expect(answers).toEqual(names.map(() => ({ success: true })));
      const table = await getJson(`${services()}/Hosted/Busy/FeatureServer/0`, tokens.publisher);
      // In the order the changes took their turns.
      const kept = fieldsOf(table).map((f) => f.name);
      expect(kept[0]).toBe("OBJECTID");
      expect(
        kept
          .filter((n) => !TRACKED.includes(n))
          .slice(1)
          .sort(),
      ).toEqual(names);
    });

    it("never leave a service behind its item: deleting the item removes its data", async () => {
      const found = await getJson(`${rest()}/search?q=${encodeURIComponent('title:"Busy"')}`, tokens.publisher);
      const id = (found.results as { id: string; title: string }[]).find((r) => r.title === "Busy")?.id ?? "";
      expect(await backing.exists(engine.dataDir, id)).toBe(true);
      expect(await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher)).toMatchObject({
        success: true,
      });
      expect(await backing.exists(engine.dataDir, id)).toBe(false);
      const gone = await postJson(`${admin()}/Hosted/Busy/FeatureServer/0/truncate`, tokens.publisher);
      expect((gone.error as { code: number }).code).toBe(404);
    });
  });

  describe("the storage quota", () => {
    it("refuses layers that would take the owner past it, and leaves the service as it was", async () => {
      const created = await postJson(`${rest()}/content/users/admin/createService`, tokens.admin, {
        outputType: "featureService",
        createParameters: JSON.stringify({ name: "Big" }),
      });
      expect(created).toMatchObject({ success: true });
      const before = await backing.dataBytes(engine.dataDir, String(created.itemId));
      const layers = Array.from({ length: 80 }, (_, i) => ({ name: `L${i}`, geometryType: "esriGeometryPoint" }));
      const refused = await postJson(`${admin()}/Hosted/Big/FeatureServer/addToDefinition`, tokens.admin, {
        addToDefinition: JSON.stringify({ layers }),
      });
      expect(refused).toEqual({
        error: {
          code: 403,
          message: "Storage quota exceeded.",
          details: ["Your uploaded files may take at most 1 MB: delete some, or ask an administrator for more."],
        },
      });
      expect(await backing.dataBytes(engine.dataDir, String(created.itemId))).toBe(before);
      const service = await getJson(`${services()}/Hosted/Big/FeatureServer`, tokens.admin);
      expect(service).toMatchObject({ layers: [], tables: [] });
      // Fewer fit, and are counted.
      const fits = await postJson(`${admin()}/Hosted/Big/FeatureServer/addToDefinition`, tokens.admin, {
        addToDefinition: JSON.stringify({ layers: layers.slice(0, 5) }),
      });
      expect(fits).toMatchObject({ success: true, layers: [{ name: "L0", id: 0 }, {}, {}, {}, { name: "L4", id: 4 }] });
    });
  });

  describe("truncate", () => {
    it("deletes every row of a layer published from a CSV; its fields stay", async () => {
      const csv = ["Name,Latitude,Longitude", "A,48.8,2.3", "B,40.4,-3.7", "C,52.3,4.9"].join("\n");
      const { body, type } = await multipartBody(
        { f: "json", token: tokens.publisher },
        { file: { name: "points.csv", bytes: csv } },
      );
      const upload = await call(`${rest()}/content/users/publisher/addItem`, {
        ca: engine.ca,
        body,
        headers: { "content-type": type },
      });
      const itemId = upload.json<{ id: string }>().id;
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "Points" }),
      })) as { services: { serviceurl: string }[] };
      const layerUrl = `${published.services[0]?.serviceurl}/0`;
      expect(await getJson(`${layerUrl}/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 3,
      });
      // Another member may not (nor learn that the private service exists).
      const refused = await postJson(`${admin()}/Hosted/Points/FeatureServer/0/truncate`, tokens.user);
      expect((refused.error as { code: number }).code).toBe(404);
      const truncated = await postJson(`${admin()}/Hosted/Points/FeatureServer/0/truncate`, tokens.publisher);
      expect(truncated).toEqual({ success: true });
      expect(await getJson(`${layerUrl}/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 0,
      });
      const layer = await getJson(layerUrl, tokens.publisher);
      expect(fieldsOf(layer).map((f) => f.name)).toEqual(["fid", "Name", "Latitude", "Longitude", ...TRACKED]);
      // A service published from a file is defined as one made by createService: its layer keeps id 0.
      const adding = await postJson(`${admin()}/Hosted/Points/FeatureServer/addToDefinition`, tokens.publisher, {
        addToDefinition: JSON.stringify({ tables: [{ name: "More" }] }),
      });
      expect(adding).toEqual({ success: true, layers: [], tables: [{ name: "More", id: 1 }] });
      const service = await getJson(String(published.services[0]?.serviceurl), tokens.publisher);
      expect(service).toMatchObject({ layers: [{ id: 0, name: "Points" }], tables: [{ id: 1, name: "More" }] });
      expect(await getJson(`${layerUrl}/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 0,
      });
    });
  });

  describe("a published service of several layers", () => {
    it("is defined by the ids it was published with: a deleted layer's id stays unserved, a new layer takes the next", async () => {
      const work = mkdtempSync(join(tmpdir(), "mapgate-define-"));
      let bytes: Buffer;
      try {
        const file = join(work, "network.gpkg");
        writeGeoPackage(file, [
          {
            name: "stations",
            geometryType: "POINT",
            columns: [{ name: "label", type: "TEXT" }],
            rows: [
              { values: { label: "a" }, geometry: { type: "Point", coordinates: [2.3, 48.8] } },
              { values: { label: "b" }, geometry: { type: "Point", coordinates: [4.9, 52.3] } },
            ],
          },
          {
            name: "readings",
            columns: [{ name: "value", type: "DOUBLE" }],
            rows: [{ values: { value: 1 } }, { values: { value: 2 } }, { values: { value: 3 } }],
          },
        ]);
        bytes = readFileSync(file);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
      const { body, type } = await multipartBody(
        { f: "json", token: tokens.publisher },
        { file: { name: "network.gpkg", bytes } },
      );
      const upload = await call(`${rest()}/content/users/publisher/addItem`, {
        ca: engine.ca,
        body,
        headers: { "content-type": type },
      });
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: upload.json<{ id: string }>().id,
        filetype: "geoPackage",
        publishParameters: JSON.stringify({ name: "Network" }),
      })) as { services: { serviceurl: string; serviceItemId: string }[] };
      const serviceUrl = String(published.services[0]?.serviceurl);
      const base = `${admin()}/Hosted/Network/FeatureServer`;
      expect(
        await postJson(`${base}/deleteFromDefinition`, tokens.publisher, {
          deleteFromDefinition: JSON.stringify({ layers: [{ id: 0 }] }),
        }),
      ).toEqual({ success: true });
      expect(await getJson(serviceUrl, tokens.publisher)).toMatchObject({
        layers: [],
        tables: [{ id: 1, name: "readings", type: "Table" }],
      });
      expect(await getJson(`${serviceUrl}/0`, tokens.publisher)).toMatchObject({ error: { code: 400 } });
      expect(await getJson(`${serviceUrl}/1/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 3,
      });
      // The deleted layer's id is not given again, even when asked for; its name is free.
      const stations = { name: "stations", geometryType: "esriGeometryPoint" };
      const again = await postJson(`${base}/addToDefinition`, tokens.publisher, {
        addToDefinition: JSON.stringify({ layers: [{ ...stations, id: 0 }] }),
      });
      expect(again).toEqual({
        error: {
          code: 400,
          message: "Unable to add feature service definition.",
          details: ["Layer id 0 is taken (a deleted layer's id is never given again)."],
        },
      });
      const added = await postJson(`${base}/addToDefinition`, tokens.publisher, {
        addToDefinition: JSON.stringify({ layers: [stations] }),
      });
      expect(added).toEqual({ success: true, layers: [{ name: "stations", id: 2 }], tables: [] });
      expect(await getJson(serviceUrl, tokens.publisher)).toMatchObject({
        layers: [{ id: 2, name: "stations", geometryType: "esriGeometryPoint" }],
        tables: [{ id: 1, name: "readings" }],
      });
      expect(await getJson(`${serviceUrl}/2/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 0,
      });
      // The file holds what the service serves: the new, empty table and the kept one.
      const info = execFileSync(
        "ogrinfo",
        ["-ro", "-al", "-so", ...gdal(String(published.services[0]?.serviceItemId))],
        {
          encoding: "utf8",
        },
      );
      // mapgate's own tables (the layers' editing record, the edit log), which GDAL lists among a database schema's
      // tables, are no layers.
      const counts = Object.fromEntries(
        [...info.matchAll(/Layer name: (\w+)[\s\S]*?Feature Count: (\d+)/g)]
          .filter((m) => !m[1]?.startsWith("mapgate_"))
          .map((m) => [m[1], Number(m[2])]),
      );
      expect(counts).toEqual({ stations: 0, readings: 3 });
      // Exported by the ids it serves: the deleted one is named as no layer, a kept one is written.
      const exportAs = (layers: object[]) =>
        postJson(`${rest()}/content/users/publisher/export`, tokens.publisher, {
          itemId: String(published.services[0]?.serviceItemId),
          exportFormat: "CSV",
          exportParameters: JSON.stringify({ layers }),
        });
      expect(await exportAs([{ id: 0 }])).toEqual({
        error: {
          code: 400,
          message: "Unable to export item.",
          details: ["The service has no layer 0: its layers are 1, 2."],
        },
      });
      const exported = await exportAs([{ id: 1 }]);
      expect(exported).toMatchObject({ type: "CSV", exportItemId: expect.stringMatching(/^[0-9a-f]{32}$/) });
      const csv = await call(
        `${rest()}/content/items/${String(exported.exportItemId)}/data?token=${tokens.publisher}`,
        {
          ca: engine.ca,
        },
      );
      // Its own columns first, then its global id and tracking (each row's, as publishing filled them).
      expect(
        csv.text
          .trim()
          .split("\r\n")
          .map((line) => line.split(",").slice(0, 3).join(",")),
      ).toEqual([
        "fid,value,GlobalID",
        expect.stringMatching(/^1,1,\{[0-9A-F-]{36}\}$/),
        expect.stringMatching(/^2,2,/),
        expect.stringMatching(/^3,3,/),
      ]);
    });
  });

  describe("the admin wire's tokens", () => {
    it("takes a server-token for its server and its organization's portal tokens; the portal refuses server-tokens", async () => {
      const exchanged = await call(`${rest()}/generateToken`, {
        ca: engine.ca,
        body: form({ f: "json", token: tokens.publisher, serverUrl: `${engine.ready.https}/arcgis` }),
      });
      const serverToken = exchanged.json<{ token: string }>().token;
      expect(serverToken).toEqual(expect.any(String));
      const body = { addToDefinition: JSON.stringify({ tables: [{ name: "Notes", fields: [] }] }) };
      expect(await postJson(`${admin()}/Hosted/Sites/FeatureServer/addToDefinition`, serverToken, body)).toEqual({
        success: true,
        layers: [],
        // Deleted tables' ids (1, 2) are never given again.
        tables: [{ name: "Notes", id: 3 }],
      });
      const self = await getJson(`${rest()}/community/self`, serverToken);
      expect(self).toEqual({ error: { code: 498, message: "Invalid token.", details: ["Invalid token."] } });
      // An unknown server is no server at all.
      const elsewhere = await postJson(
        `${engine.ready.https}/nowhere/rest/admin/services/Hosted/Sites/FeatureServer/addToDefinition`,
        serverToken,
        body,
      );
      expect((elsewhere.error as { code: number }).code).toBe(404);
    });
  });

  return { engine: () => engine };
}
