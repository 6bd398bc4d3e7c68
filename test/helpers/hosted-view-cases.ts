// A public read-only view over an editable hosted layer, run on each backing of hosted data
// (test/hosted-views.e2e.test.ts: a GeoPackage per service; test/hosted-views-postgis.e2e.test.ts: PostgreSQL +
// PostGIS behind a stand-in for RDS Proxy), through the real local engine and ArcGIS REST JS: the publisher defines a
// survey layer shared with a group of editors, then a view of it (createFeatureService with isView,
// addToServiceDefinition naming the source, updateServiceDefinition of its definition query and a hidden field)
// shared with everyone. Anonymous callers query the view (JSON, GeoJSON, PBF, counts, statistics) but neither the
// layer beneath it nor edit through it; a member's edit of the source is seen through the view on the next request;
// the hidden field is absent everywhere and refused where named; the source cannot be deleted while the view reads it.
import decodeArcgisPbf from "arcgis-pbf-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineCalls } from "./arcgis.ts";
import { PASSWORDS, type RunningEngine, signInMembers, startEngine } from "./engine.ts";
import { call, jsonCalls } from "./http.ts";
import { share } from "./publish.ts";

/** Where a run keeps hosted data. */
export interface ViewBacking {
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

type Feature = { attributes: Record<string, unknown>; geometry?: { x: number; y: number } };

export function hostedViewSuite(backing: ViewBacking): void {
  let engine: RunningEngine;
  const tokens = { admin: "", publisher: "", user: "" };
  const rest = () => `${engine.ready.https}/portal/sharing/rest`;
  const services = () => `${engine.ready.https}/arcgis/rest/services`;
  const { getJson, postJson } = jsonCalls(() => engine.ca);
  const source = () => `${services()}/Hosted/Survey/FeatureServer`;
  const view = () => `${services()}/Hosted/SurveyPublic/FeatureServer`;
  let sourceItem = "";
  let viewItem = "";
  let groupId = "";

  const client = (calls: { fn: string; options: Record<string, unknown> }[], who: "publisher" | "user" = "publisher") =>
    defineCalls(engine, who, PASSWORDS[who], calls);
  /** An anonymous GET of a view's (or the source's) resource, as JSON. */
  const anonymous = (url: string) => getJson(url);
  const viewQuery = (params: Record<string, string>, token?: string) =>
    getJson(`${view()}/0/query?${new URLSearchParams({ f: "json", ...params }).toString()}`, token);
  const names = (features: Feature[]) => features.map((f) => f.attributes.Name).sort();

  beforeAll(async () => {
    const env = await backing.start();
    engine = await startEngine({ env });
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
    // The editors: a group of the organization with the member `user` in it.
    const group = await postJson(`${rest()}/community/createGroup`, tokens.publisher, { title: "Crew", access: "org" });
    groupId = String((group.group as { id?: string } | undefined)?.id);
    await postJson(`${rest()}/community/groups/${groupId}/addUsers`, tokens.publisher, { users: "user" });
    // The layer beneath: a point layer whose Secret field is not for the public.
    const [created] = (await client([{ fn: "createFeatureService", options: { item: { name: "Survey" } } }])) as [
      Record<string, unknown>,
    ];
    sourceItem = String(created.itemId);
    const [added] = (await client([
      {
        fn: "addToServiceDefinition",
        options: {
          url: source(),
          layers: [
            {
              name: "Sites",
              type: "Feature Layer",
              geometryType: "esriGeometryPoint",
              objectIdField: "OBJECTID",
              fields: [
                { name: "OBJECTID", type: "esriFieldTypeOID" },
                { name: "Name", type: "esriFieldTypeString", length: 20 },
                { name: "Status", type: "esriFieldTypeString", length: 20 },
                { name: "Secret", type: "esriFieldTypeString", length: 40 },
                { name: "Visits", type: "esriFieldTypeInteger" },
              ],
            },
          ],
        },
      },
    ])) as [Record<string, unknown>];
    expect(added).toMatchObject({ success: true });
    expect(await share(engine, tokens.publisher, sourceItem, { groups: groupId })).toMatchObject({
      notSharedWith: [],
    });
    // The view, as ArcGIS's clients make one.
    const [made] = (await client([
      { fn: "createFeatureService", options: { item: { name: "SurveyPublic" }, params: { isView: true } } },
    ])) as [Record<string, unknown>];
    expect(made).toMatchObject({ success: true, isView: true, name: "SurveyPublic" });
    viewItem = String(made.itemId);
    const answers = await client([
      {
        fn: "addToServiceDefinition",
        options: {
          url: view(),
          layers: [
            {
              name: "Sites",
              adminLayerInfo: {
                viewLayerDefinition: { sourceServiceName: "Survey", sourceLayerId: 0, sourceLayerFields: "*" },
              },
            },
          ],
        },
      },
      {
        fn: "updateServiceDefinition",
        options: {
          url: `${view()}/0`,
          updateDefinition: {
            viewDefinitionQuery: "Status = 'approved'",
            fields: [{ name: "Secret", visible: false }],
          },
        },
      },
    ]);
    expect(answers.slice(0, 2)).toEqual([
      { success: true, layers: [{ name: "Sites", id: 0 }], tables: [] },
      { success: true },
    ]);
    expect(await share(engine, tokens.publisher, viewItem, { everyone: "true" })).toMatchObject({
      notSharedWith: [],
    });
  }, 180_000);

  afterAll(async () => {
    await engine?.stop();
    await backing.stop();
  });

  describe("a view over a layer only members edit", () => {
    it("is its own item, a View Service related to its source (Service2Service)", async () => {
      const item = await getJson(`${rest()}/content/items/${viewItem}`, tokens.publisher);
      expect(item).toMatchObject({ id: viewItem, type: "Feature Service", access: "public" });
      expect(item.typeKeywords).toEqual(expect.arrayContaining(["Hosted Service", "View Service"]));
      const related = await getJson(
        `${rest()}/content/items/${viewItem}/relatedItems?relationshipType=Service2Service&direction=reverse`,
        tokens.publisher,
      );
      expect(related).toMatchObject({ total: 1, relatedItems: [{ id: sourceItem }] });
      const [sources] = (await client([{ fn: "getViewSources", options: { url: view() } }])) as [unknown];
      expect(sources).toEqual({
        currentVersion: expect.any(Number),
        services: [{ name: "Survey", type: "FeatureServer", url: source(), serviceItemId: sourceItem }],
      });
      const layerSources = await getJson(`${view()}/0/sources`, tokens.publisher);
      expect(layerSources).toMatchObject({ layers: [{ url: `${source()}/0`, layerId: 0 }] });
    });

    it("describes itself to anyone: Query only, no Sync, its definition query, no hidden field", async () => {
      const service = await anonymous(view());
      expect(service).toMatchObject({
        isView: true,
        isUpdatableView: false,
        capabilities: "Query",
        syncEnabled: false,
        serviceItemId: viewItem,
        layers: [{ id: 0, name: "Sites" }],
      });
      const layer = await anonymous(`${view()}/0`);
      expect(layer).toMatchObject({
        isView: true,
        capabilities: "Query",
        viewDefinitionQuery: "Status = 'approved'",
        definitionQuery: "Status = 'approved'",
        objectIdField: "OBJECTID",
      });
      expect(layer).not.toHaveProperty("editFieldsInfo");
      const fields = (layer.fields as { name: string }[]).map((f) => f.name);
      expect(fields).toContain("Status");
      expect(fields).not.toContain("Secret");
      const layers = await anonymous(`${view()}/layers`);
      expect(JSON.stringify(layers)).not.toContain("Secret");
      // Its pages too: the layer's page lists the fields it shows.
      const page = await call(`${view()}/0?f=html`, { ca: engine.ca });
      expect(page.status).toBe(200);
      expect(page.body.toString("utf8")).toContain("Status");
      expect(page.body.toString("utf8")).not.toContain("Secret");
    });

    it("keeps the layer beneath from anonymous callers, and its sources from them too", async () => {
      expect(await anonymous(source())).toMatchObject({ error: { code: 499 } });
      expect(await anonymous(`${source()}/0/query?where=1%3D1`)).toMatchObject({ error: { code: 499 } });
      expect(await anonymous(`${view()}/sources`)).toMatchObject({ error: { code: 403 } });
    });

    it("shows a member's edits of the source, inside its definition query, on the next request", async () => {
      expect(await viewQuery({ where: "1=1", returnCountOnly: "true" })).toEqual({ count: 0 });
      const point = (x: number, y: number) => ({ x, y, spatialReference: { wkid: 4326 } });
      const [edited] = (await client(
        [
          {
            fn: "applyEdits",
            options: {
              url: `${source()}/0`,
              params: {
                adds: [
                  { geometry: point(1, 1), attributes: { Name: "Alder", Status: "approved", Secret: "s1", Visits: 3 } },
                  { geometry: point(2, 2), attributes: { Name: "Birch", Status: "pending", Secret: "s2", Visits: 5 } },
                  { geometry: point(3, 3), attributes: { Name: "Cedar", Status: "approved", Secret: "s3", Visits: 7 } },
                ],
              },
            },
          },
        ],
        "user",
      )) as [{ addResults: { success: boolean; objectId: number }[] }];
      expect(edited.addResults.map((r) => r.success)).toEqual([true, true, true]);
      const answer = await viewQuery({ where: "1=1", outFields: "*", orderByFields: "OBJECTID" });
      const features = answer.features as Feature[];
      expect(names(features)).toEqual(["Alder", "Cedar"]);
      expect(Object.keys(features[0]?.attributes ?? {})).not.toContain("Secret");
      expect(features[0]?.geometry).toMatchObject({ x: 1, y: 1 });
      expect((answer.fields as { name: string }[]).map((f) => f.name)).not.toContain("Secret");
      // The member approves Birch: the view shows it at once.
      const birch = edited.addResults[1]?.objectId;
      const [updated] = (await client(
        [
          {
            fn: "updateFeatures",
            options: {
              url: `${source()}/0`,
              params: { features: [{ attributes: { OBJECTID: birch, Status: "approved" } }] },
            },
          },
        ],
        "user",
      )) as [{ updateResults: { success: boolean }[] }];
      expect(updated.updateResults).toEqual([expect.objectContaining({ objectId: birch, success: true })]);
      expect(await viewQuery({ where: "1=1", returnCountOnly: "true" })).toEqual({ count: 3 });
      // The view's layer tells clients the source was edited, as the source's does.
      const [viewLayer, sourceLayer] = await Promise.all([
        anonymous(`${view()}/0`),
        getJson(`${source()}/0`, tokens.user),
      ]);
      expect(viewLayer.editingInfo).toEqual(sourceLayer.editingInfo);
    });

    it("answers counts, ids, extents, statistics and every format over the admitted rows only", async () => {
      // Pending again: the view's rows are Alder and Cedar.
      const ids = (await viewQuery({ where: "Name = 'Birch'", returnIdsOnly: "true" })) as { objectIds: number[] };
      expect(ids.objectIds).toHaveLength(1);
      await client(
        [
          {
            fn: "updateFeatures",
            options: {
              url: `${source()}/0`,
              params: { features: [{ attributes: { OBJECTID: ids.objectIds[0], Status: "pending" } }] },
            },
          },
        ],
        "user",
      );
      expect(await viewQuery({ where: "Name = 'Birch'", returnIdsOnly: "true" })).toEqual({
        objectIdFieldName: "OBJECTID",
        objectIds: [],
      });
      // A where of the caller's cannot widen the view's: the two are ANDed as trees.
      expect(await viewQuery({ where: "Status = 'pending' OR 1=1", returnCountOnly: "true" })).toEqual({ count: 2 });
      const stats = await viewQuery({
        outStatistics: JSON.stringify([
          { statisticType: "sum", onStatisticField: "Visits", outStatisticFieldName: "v" },
        ]),
      });
      expect((stats.features as Feature[])[0]?.attributes).toEqual({ v: 10 });
      const extent = await viewQuery({ where: "1=1", returnExtentOnly: "true" });
      expect(extent.extent).toMatchObject({ xmin: 1, ymin: 1, xmax: 3, ymax: 3 });
      const geojson = await getJson(`${view()}/0/query?where=1%3D1&outFields=*&f=geojson`);
      const props = (geojson.features as { properties: Record<string, unknown> }[]).map((f) => f.properties);
      expect(props.map((p) => p.Name).sort()).toEqual(["Alder", "Cedar"]);
      for (const p of props) expect(p).not.toHaveProperty("Secret");
      const pbf = await call(`${view()}/0/query?where=1%3D1&outFields=*&f=pbf`, { ca: engine.ca });
      const collection = (
        decodeArcgisPbf(new Uint8Array(pbf.body)) as {
          featureCollection: { features: { properties: Record<string, unknown> }[] };
        }
      ).featureCollection;
      expect(collection.features).toHaveLength(2);
      for (const f of collection.features) expect(f.properties).not.toHaveProperty("Secret");
    });

    it("refuses a hidden field wherever a query names it, as an unknown field", async () => {
      for (const params of [
        { where: "1=1", outFields: "Secret" } as Record<string, string>,
        { where: "Secret = 's2'" },
        { where: "1=1", orderByFields: "Secret" },
        {
          outStatistics: JSON.stringify([
            { statisticType: "count", onStatisticField: "Secret", outStatisticFieldName: "n" },
          ]),
        },
      ])
        expect(await viewQuery(params), JSON.stringify(params)).toMatchObject({ error: { code: 400 } });
      // The owner too: the view is what it is for everyone.
      expect(await viewQuery({ where: "Secret = 's1'" }, tokens.publisher)).toMatchObject({ error: { code: 400 } });
    });

    it("takes no edit: anonymous callers are asked to sign in, members told it is read-only", async () => {
      const adds = JSON.stringify([{ geometry: { x: 9, y: 9 }, attributes: { Name: "Nope", Status: "approved" } }]);
      for (const path of ["0/applyEdits", "0/addFeatures", "applyEdits"]) {
        const fields: Record<string, string> =
          path === "applyEdits" ? { edits: `[{"id":0,"adds":${adds}}]` } : { adds, features: adds };
        const answer = await postJson(`${view()}/${path}`, "", fields);
        expect(answer, path).toMatchObject({ error: { code: 499 } });
      }
      const [byOwner] = (await client([
        { fn: "addFeatures", options: { url: `${view()}/0`, params: { features: JSON.parse(adds) as unknown } } },
      ])) as [{ error?: { message: string } }];
      expect(byOwner.error?.message).toMatch(/read-only|not supported/);
      expect(await viewQuery({ where: "Name = 'Nope'", returnCountOnly: "true" })).toEqual({ count: 0 });
    });

    it("keeps its capabilities its own: Query only, Sync and editing refused", async () => {
      for (const capabilities of ["Query,Sync", "Create,Query,Update,Delete,Editing"]) {
        const [answer] = (await client([
          { fn: "updateServiceDefinition", options: { url: view(), updateDefinition: { capabilities } } },
        ])) as [{ error?: { code: number } }];
        expect(answer.error?.code, capabilities).toBe(400);
      }
      const [ok] = await client([
        { fn: "updateServiceDefinition", options: { url: view(), updateDefinition: { capabilities: "Query" } } },
      ]);
      expect(ok).toEqual({ success: true });
      expect((await anonymous(view())).capabilities).toBe("Query");
    });

    it("checks a definition change against the source layer", async () => {
      const update = (updateDefinition: Record<string, unknown>) =>
        client([{ fn: "updateServiceDefinition", options: { url: `${view()}/0`, updateDefinition } }]);
      for (const wrong of [
        { viewDefinitionQuery: "Nothing = 1" },
        { viewDefinitionQuery: "Status = " },
        { fields: [{ name: "OBJECTID", visible: false }] },
        { fields: [{ name: "Missing", visible: false }] },
        { geometryType: "esriGeometryPolygon" },
      ]) {
        const [answer] = (await update(wrong)) as [{ error?: { code: number } }];
        expect(answer.error?.code, JSON.stringify(wrong)).toBe(400);
      }
      // A definition query may name a field the view hides; showing Visits-only rows changes the answer at once.
      const [ok] = await update({ viewDefinitionQuery: "Status = 'approved' AND Secret <> 's3'" });
      expect(ok).toEqual({ success: true });
      expect(names((await viewQuery({ where: "1=1", outFields: "Name" })).features as Feature[])).toEqual(["Alder"]);
      const [back] = await update({ viewDefinitionQuery: "Status = 'approved'" });
      expect(back).toEqual({ success: true });
      expect(await viewQuery({ where: "1=1", returnCountOnly: "true" })).toEqual({ count: 2 });
      // A member without the privilege to publish makes no view.
      const [mine] = (await client(
        [{ fn: "createFeatureService", options: { item: { name: "Borrowed" }, params: { isView: true } } }],
        "user",
      )) as [{ error?: { code: unknown } }];
      expect(mine.error?.code).toBe("GWM_0003");
    });

    it("adds and deletes its layers by id, a deleted id never given again", async () => {
      const [added, again, deleted] = await client([
        {
          fn: "addToServiceDefinition",
          options: {
            url: view(),
            layers: [
              {
                name: "Visited",
                adminLayerInfo: {
                  viewLayerDefinition: {
                    sourceServiceName: "Survey",
                    sourceLayerId: 0,
                    sourceLayerFields: [{ name: "Name" }, { name: "Visits" }],
                  },
                },
                viewDefinitionQuery: "Visits > 4",
              },
            ],
          },
        },
        {
          fn: "addToServiceDefinition",
          options: {
            url: view(),
            layers: [
              {
                id: 1,
                name: "Twice",
                adminLayerInfo: { viewLayerDefinition: { sourceServiceName: "Survey", sourceLayerId: 0 } },
              },
              {
                name: "Elsewhere",
                adminLayerInfo: { viewLayerDefinition: { sourceServiceName: "Nowhere", sourceLayerId: 0 } },
              },
            ],
          },
        },
        {
          fn: "request",
          options: {
            url: `${view().replace("/rest/services/", "/rest/admin/services/")}/deleteFromDefinition`,
            params: { deleteFromDefinition: { layers: [{ id: 1 }] } },
          },
        },
      ]);
      expect(added).toEqual({ success: true, layers: [{ name: "Visited", id: 1 }], tables: [] });
      expect((again as { error?: { code: number } }).error?.code).toBe(400);
      expect(deleted).toEqual({ success: true });
      expect(await anonymous(`${view()}/1`)).toMatchObject({ error: { code: 400 } });
      expect((await anonymous(view())).layers).toEqual([expect.objectContaining({ id: 0, name: "Sites" })]);
    });

    it("keeps its source while it reads it; deleting the view leaves the source's rows", async () => {
      const del = (owner: string, id: string, token: string) =>
        postJson(`${rest()}/content/users/${owner}/items/${id}/delete`, token);
      expect(await del("publisher", sourceItem, tokens.publisher)).toMatchObject({
        error: { code: 400, message: "Unable to delete item. This service item has a related Service item" },
      });
      expect(await getJson(`${source()}/0/query?where=1%3D1&returnCountOnly=true`, tokens.publisher)).toEqual({
        count: 3,
      });
      expect(await del("publisher", viewItem, tokens.publisher)).toMatchObject({ success: true });
      expect(await anonymous(`${view()}/0/query?where=1%3D1`)).toMatchObject({ error: { code: 499 } });
      expect(await getJson(`${source()}/0/query?where=1%3D1&returnCountOnly=true`, tokens.user)).toEqual({
        count: 3,
      });
      expect(await del("publisher", sourceItem, tokens.publisher)).toMatchObject({ success: true });
    });
  });
}
