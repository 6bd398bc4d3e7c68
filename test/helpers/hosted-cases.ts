// The hosted-layer suite, run on each backing of hosted data (test/hosted-layers.e2e.test.ts: a GeoPackage per
// service; test/hosted-layers-postgis.e2e.test.ts: PostgreSQL + PostGIS behind a stand-in for RDS Proxy), through the
// real local engine: a CSV of points and a GeoJSON of polygons uploaded, analyzed, published, polled and queried as
// ArcGIS clients do, their data read back by GDAL from where the backing keeps it; bad files refused with nothing
// left behind; the data gone with the service.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningEngine, startEngine, signInMembers } from "./engine.ts";
import { call, form, jsonCalls, multipartBody } from "./http.ts";

/** Where a run keeps hosted data, and how a test looks at it there. */
/** The global id and editor-tracking fields a published layer has after its own (shared/hosted/tracking.ts). */
const TRACKED = ["GlobalID", "CreationDate", "Creator", "EditDate", "Editor"];
/** A row's attributes without the server's tracking fields (their values are the publish's: checked elsewhere). */
const own = (attributes: Record<string, unknown>) =>
  Object.fromEntries(Object.entries(attributes).filter(([k]) => !TRACKED.includes(k)));

export interface HostedBacking {
  /** Started before the engine; answers the engine's environment. */
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
  /** How many services' data the backing holds. */
  kept(dataDir: string): Promise<number>;
  /** GDAL's summary (ogrinfo -so) of a service's layer, read where the backing keeps it. */
  ogrinfo(dataDir: string, serviceItemId: string, layer: string): string;
  /** The layer's name as GDAL shows it. */
  gdalName(serviceItemId: string, layer: string): string;
  /** The bytes a service's data takes where they can be known from outside (a file's size). */
  dataBytes(dataDir: string, serviceItemId: string): number | undefined;
}

/** What a backing's own tests use of the running suite. */
export interface HostedSuite {
  readonly engine: () => RunningEngine;
  readonly rest: () => string;
  readonly servicesUrl: () => string;
  readonly publisher: () => string;
  readonly upload: (token: string, name: string, bytes: string) => Promise<string>;
  readonly postJson: ReturnType<typeof jsonCalls>["postJson"];
  readonly getJson: ReturnType<typeof jsonCalls>["getJson"];
}

export function hostedLayerSuite(backing: HostedBacking): HostedSuite {
  let engine: RunningEngine;
  const tokens = { admin: "", publisher: "", user: "" };
  const rest = () => `${engine.ready.https}/portal/sharing/rest`;
  const { getJson, postJson } = jsonCalls(() => engine.ca);

  const CSV = [
    "Name,Visitors,Opened,Latitude,Longitude",
    "Louvre,8900000,1793-08-10,48.8606,2.3376",
    'Prado,"3200000",1819-11-19,40.4138,-3.6921',
    "Rijksmuseum,2700000,1800-05-31,52.36,4.8852",
    "Nowhere,10,2000-01-01,,",
    "Bad,11,2000-01-02,north,east",
  ].join("\n");

  const SQUARE = (x: number, y: number) => [
    [
      [x, y],
      [x + 1, y],
      [x + 1, y + 1],
      [x, y + 1],
      [x, y],
    ],
  ];
  const GEOJSON = JSON.stringify({
    type: "FeatureCollection",
    features: [
      {
        type: "Feature",
        properties: { zone: "A", area: 1.5, meta: { a: [1, 2] } },
        geometry: { type: "Polygon", coordinates: SQUARE(2, 48) },
      },
      {
        type: "Feature",
        properties: { zone: "B", area: 2 },
        geometry: { type: "MultiPolygon", coordinates: [SQUARE(4, 50), SQUARE(6, 50)] },
      },
    ],
  });

  async function upload(token: string, name: string, bytes: string | Buffer, owner = "publisher"): Promise<string> {
    const { body, type } = await multipartBody({ f: "json", token }, { file: { name, bytes } });
    const res = await call(`${rest()}/content/users/${owner}/addItem`, {
      ca: engine.ca,
      body,
      headers: { "content-type": type },
    });
    const answer = res.json<{ success?: boolean; id?: string }>();
    expect(answer.success, JSON.stringify(answer)).toBe(true);
    return answer.id as string;
  }

  type Published = { services: { serviceurl: string; serviceItemId: string; jobId: string; type: string }[] };

  beforeAll(async () => {
    const env = await backing.start();
    engine = await startEngine({ env });
    Object.assign(tokens, await signInMembers(rest(), engine.ca));
  }, 120_000);

  afterAll(async () => {
    await engine?.stop();
    await backing.stop();
  });

  describe("a CSV of points", () => {
    let itemId = "";
    let published: Published;

    it("is analyzed: its fields typed from every value, the coordinate columns found", async () => {
      itemId = await upload(tokens.publisher, "museums.csv", CSV);
      const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId,
        filetype: "csv",
      });
      expect(analyzed.publishParameters).toMatchObject({
        type: "csv",
        name: "museums",
        locationType: "coordinates",
        latitudeFieldName: "Latitude",
        longitudeFieldName: "Longitude",
        layerInfo: {
          type: "Feature Layer",
          geometryType: "esriGeometryPoint",
          fields: [
            { name: "fid", type: "esriFieldTypeOID" },
            { name: "Name", type: "esriFieldTypeString", alias: "Name", length: 256 },
            { name: "Visitors", type: "esriFieldTypeInteger" },
            { name: "Opened", type: "esriFieldTypeDate" },
            // "north" is no number: the column stays text, and its row gets no point.
            { name: "Latitude", type: "esriFieldTypeString" },
            { name: "Longitude", type: "esriFieldTypeString" },
          ],
        },
      });
      expect((analyzed.records as unknown[]).length).toBe(5);
      expect(analyzed.notes).toEqual([
        "2 row(s) had no coordinates that parse as a latitude and longitude: kept without a point.",
      ]);
    });

    it("is published as a hosted feature service in the Hosted folder, its status completed", async () => {
      const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId,
        filetype: "csv",
      });
      published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "csv",
        publishParameters: JSON.stringify({ ...(analyzed.publishParameters as object), name: "Museums" }),
      })) as unknown as Published;
      const [service] = published.services;
      expect(service).toMatchObject({
        type: "Feature Service",
        serviceurl: `${engine.ready.https}/arcgis/rest/services/Hosted/Museums/FeatureServer`,
        serviceItemId: expect.stringMatching(/^[0-9a-f]{32}$/),
      });
      const status = await getJson(
        `${rest()}/content/users/publisher/items/${service?.serviceItemId}/status?jobId=${service?.jobId}&jobType=publish`,
        tokens.publisher,
      );
      expect(status).toMatchObject({ status: "completed", itemId: service?.serviceItemId });
      const item = await getJson(`${rest()}/content/items/${service?.serviceItemId}`, tokens.publisher);
      expect(item).toMatchObject({ type: "Feature Service", title: "museums", owner: "publisher", access: "private" });
      expect(item.typeKeywords).toContain("Hosted Service");
      // Integrations hear of it as of any published service (the engine's bus writes what it delivers).
      await expect
        .poll(() => {
          const log = join(engine.dataDir, "events.jsonl");
          if (!existsSync(log)) return undefined;
          return readFileSync(log, "utf8")
            .split("\n")
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { "detail-type": string; detail: Record<string, unknown> })
            .find((e) => e["detail-type"] === "Service Published" && e.detail.itemId === service?.serviceItemId)
            ?.detail;
        })
        .toMatchObject({ type: "Feature Service", owner: "publisher", url: service?.serviceurl });
      // The directory lists it under Hosted.
      const folder = await getJson(`${engine.ready.https}/arcgis/rest/services/Hosted`, tokens.publisher);
      expect(folder.services).toContainEqual({ name: "Hosted/Museums", type: "FeatureServer" });
    });

    it("answers queries with every row and its point; GDAL reads the same rows where they are kept", async () => {
      const url = published.services[0]?.serviceurl as string;
      const count = await getJson(`${url}/0/query?where=1%3D1&returnCountOnly=true`, tokens.publisher);
      expect(count).toEqual({ count: 5 });
      const answer = await getJson(
        `${url}/0/query?where=Visitors%3E1000000&outFields=Name,Visitors,Opened&outSR=4326&orderByFields=fid`,
        tokens.publisher,
      );
      const features = answer.features as { attributes: Record<string, unknown>; geometry: { x: number; y: number } }[];
      expect(features.map((f) => f.attributes.Name)).toEqual(["Louvre", "Prado", "Rijksmuseum"]);
      expect(features[0]?.attributes).toMatchObject({ Visitors: 8900000, Opened: Date.UTC(1793, 7, 10) });
      expect(features[1]?.geometry.x).toBeCloseTo(-3.6921, 6);
      expect(features[1]?.geometry.y).toBeCloseTo(40.4138, 6);
      const info = backing.ogrinfo(engine.dataDir, published.services[0]?.serviceItemId as string, "Museums");
      expect(info).toContain(
        `Layer name: ${backing.gdalName(published.services[0]?.serviceItemId as string, "Museums")}\n`,
      );
      expect(info).toMatch(/Feature Count: 5/);
      expect(info).toMatch(/Visitors: Integer/);
    });

    it("refuses a second service of the same name, a wrong filetype, a file type not published yet", async () => {
      const again = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "Museums" }),
      });
      expect(again.error).toMatchObject({ code: 400, details: ["Service name 'Museums' already exists."] });
      const wrongType = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "geojson",
      });
      expect((wrongType.error as { details: string[] }).details[0]).toMatch(/must match it/);
      const excel = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "excel",
      });
      expect((excel.error as { details: string[] }).details[0]).toMatch(/not available yet/);
      // Someone who cannot see the item, or may not publish, publishes nothing.
      const byUser = await postJson(`${rest()}/content/users/user/publish`, tokens.user, { itemId, filetype: "csv" });
      expect((byUser.error as { code: number }).code).toBe(403);
    });

    it("is gone, data and all, when its item is deleted; the file it came from stays", async () => {
      const service = published.services[0];
      const before = await backing.kept(engine.dataDir);
      // Its data counted against its owner's quota, as uploads are; given back with it.
      const usage = async () =>
        ((await getJson(`${rest()}/community/self`, tokens.publisher)) as { storageUsage: number }).storageUsage;
      const used = await usage();
      const dataBytes = backing.dataBytes(engine.dataDir, service?.serviceItemId as string);
      const removed = await postJson(
        `${rest()}/content/users/publisher/items/${service?.serviceItemId}/delete`,
        tokens.publisher,
      );
      expect(removed).toMatchObject({ success: true });
      expect(await backing.kept(engine.dataDir)).toBe(before - 1);
      const after = await usage();
      expect(after).toBeLessThan(used);
      if (dataBytes !== undefined) expect(after).toBe(used - dataBytes);
      expect(await getJson(`${rest()}/content/items/${itemId}`, tokens.publisher)).toMatchObject({ type: "CSV" });
      // The name is free again.
      const again = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "Museums" }),
      })) as unknown as Published;
      expect(again.services[0]?.serviceurl).toMatch(/\/Hosted\/Museums\/FeatureServer$/);
    });
  });

  describe("a GeoJSON of polygons, and files that cannot be published", () => {
    it("publishes polygons (a Polygon and a MultiPolygon make one multipolygon layer), nested properties as text", async () => {
      const itemId = await upload(tokens.publisher, "zones.geojson", GEOJSON);
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "geojson",
      })) as unknown as Published;
      const url = published.services[0]?.serviceurl as string;
      const layer = await getJson(`${url}/0`, tokens.publisher);
      expect(layer).toMatchObject({ geometryType: "esriGeometryPolygon" });
      const answer = await getJson(
        `${url}/0/query?where=1%3D1&outFields=*&outSR=4326&orderByFields=fid`,
        tokens.publisher,
      );
      const features = answer.features as { attributes: Record<string, unknown>; geometry: { rings: number[][][] } }[];
      expect(features.map((f) => f.attributes.zone)).toEqual(["A", "B"]);
      expect(features[0]?.attributes.meta).toBe('{"a":[1,2]}');
      expect(features[1]?.geometry.rings).toHaveLength(2);
    });

    it("publishes a CSV without coordinate columns as a table", async () => {
      const itemId = await upload(tokens.publisher, "budget.csv", "year,amount\n2025,10.5\n2026,12\n");
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "csv",
      })) as unknown as Published;
      const url = published.services[0]?.serviceurl as string;
      const service = await getJson(url, tokens.publisher);
      expect(service.tables).toEqual([expect.objectContaining({ name: "budget", type: "Table" })]);
    });

    it("refuses mixed geometry types, leaving no service and no data behind", async () => {
      const mixed = JSON.stringify({
        type: "FeatureCollection",
        features: [
          { type: "Feature", properties: {}, geometry: { type: "Point", coordinates: [1, 2] } },
          { type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: SQUARE(0, 0) } },
        ],
      });
      const itemId = await upload(tokens.publisher, "mixed.geojson", mixed);
      const files = await backing.kept(engine.dataDir);
      const answer = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "geojson",
        publishParameters: JSON.stringify({ name: "Mixed" }),
      });
      expect((answer.error as { details: string[] }).details[0]).toMatch(/mixes geometry types \(POINT, POLYGON\)/);
      expect(await backing.kept(engine.dataDir)).toBe(files);
      const folder = await getJson(`${engine.ready.https}/arcgis/rest/services/Hosted`, tokens.publisher);
      expect(JSON.stringify(folder.services)).not.toContain("Mixed");
    });

    it("refuses malformed coordinates and a file of too many columns, saying why", async () => {
      const broken = JSON.stringify({
        type: "FeatureCollection",
        features: [{ type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [[1, 2]] } }],
      });
      const brokenId = await upload(tokens.publisher, "broken.geojson", broken);
      const answer = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: brokenId,
        filetype: "geojson",
      });
      expect((answer.error as { details: string[] }).details[0]).toMatch(
        /does not have the coordinates its type needs/,
      );
      const wide = `${Array.from({ length: 1200 }, (_, i) => `c${i}`).join(",")}\n${"1,".repeat(1199)}1\n`;
      const wideId = await upload(tokens.publisher, "wide.csv", wide);
      const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId: wideId,
        filetype: "csv",
      });
      expect((analyzed.error as { details: string[] }).details[0]).toMatch(
        /has 1200 columns; a layer holds at most 1000/,
      );
    });

    it("renames duplicate and reserved field names as it says", async () => {
      const itemId = await upload(tokens.publisher, "names.csv", "OBJECTID,name,Name,2nd value,\n1,a,b,c,d\n");
      const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId,
        filetype: "csv",
      });
      const fields = (analyzed.publishParameters as { layerInfo: { fields: { name: string; alias: string }[] } })
        .layerInfo.fields;
      expect(fields.map((f) => [f.name, f.alias])).toEqual([
        ["fid", "fid"],
        ["OBJECTID_1", "OBJECTID"],
        ["name", "name"],
        ["Name_1", "Name"],
        ["F2nd_value", "2nd value"],
        ["Field5", ""],
      ]);
      expect((analyzed.notes as string[])[0]).toMatch(/^Renamed 4 field\(s\)/);
      // The published layer keeps each column's own name as its field's alias, quotes and markup as they were.
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: await upload(tokens.publisher, "aliases.csv", `OBJECTID,name,Name,"it's <b>2nd</b>",\n1,a,b,c,d\n`),
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "Aliases", locationType: "none" }),
      })) as unknown as Published;
      const layer = await getJson(`${published.services[0]?.serviceurl}/0`, tokens.publisher);
      expect((layer.fields as { name: string; alias: string }[]).map((f) => [f.name, f.alias])).toEqual([
        ["fid", "fid"],
        ["OBJECTID_1", "OBJECTID"],
        ["name", "name"],
        ["Name_1", "Name"],
        ["it_s__b_2nd__b_", "it's <b>2nd</b>"],
        ["Field5", "Field5"],
        ...TRACKED.map((n) => [n, n]),
      ]);
    });

    it("takes the ArcGIS Python API's spelling (itemid, fileType) and a name it makes from a title with digits first", async () => {
      const itemId = await upload(
        tokens.publisher,
        "sales.csv",
        "region;amount;when\nNorth;12;2024-02-30\nSouth;7;2020-01-01 10:00\n",
      );
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemid: itemId,
        fileType: "csv",
        publishParameters: JSON.stringify({ name: "2024_Sales", locationType: "none" }),
      })) as unknown as Published;
      const url = published.services[0]?.serviceurl as string;
      expect(url).toMatch(/\/Hosted\/2024_Sales\/FeatureServer$/);
      // The semicolons were found as the delimiter; a day that does not exist keeps the column text.
      const answer = await getJson(`${url}/0/query?where=1%3D1&outFields=*&orderByFields=fid`, tokens.publisher);
      expect((answer.features as { attributes: Record<string, unknown> }[]).map((f) => own(f.attributes))).toEqual([
        { fid: 1, region: "North", amount: 12, when: "2024-02-30" },
        { fid: 2, region: "South", amount: 7, when: "2020-01-01 10:00" },
      ]);
    });

    it("keeps dates without an offset as UTC, GeoJSON strings as strings, and a __proto__ column as a field", async () => {
      const csvId = await upload(tokens.publisher, "times.csv", "__proto__,at\nx,2020-01-01 10:00\n");
      const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId: csvId,
        filetype: "csv",
      });
      const params = analyzed.publishParameters as { layerInfo: { fields: { name: string; type: string }[] } };
      expect(params.layerInfo.fields.map((f) => [f.name, f.type])).toEqual([
        ["fid", "esriFieldTypeOID"],
        ["F__proto__", "esriFieldTypeString"],
        ["at", "esriFieldTypeDate"],
      ]);
      expect((analyzed.records as { attributes: Record<string, unknown> }[])[0]?.attributes).toEqual({
        F__proto__: "x",
        at: "2020-01-01T10:00:00.000Z",
      });
      const geoId = await upload(
        tokens.publisher,
        "codes.geojson",
        JSON.stringify({
          type: "FeatureCollection",
          features: [
            { type: "Feature", properties: { code: "007", n: 7 }, geometry: { type: "Point", coordinates: [1, 2] } },
          ],
        }),
      );
      const geo = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId: geoId,
        filetype: "geojson",
      });
      const fields = (geo.publishParameters as { layerInfo: { fields: { name: string; type: string }[] } }).layerInfo
        .fields;
      expect(fields.map((f) => [f.name, f.type])).toEqual([
        ["fid", "esriFieldTypeOID"],
        ["code", "esriFieldTypeString"],
        ["n", "esriFieldTypeInteger"],
      ]);
    });

    it("refuses a GeoJSON in another coordinate system, a reserved service name, and a file of too many values", async () => {
      const projected = await upload(
        tokens.publisher,
        "mercator.geojson",
        JSON.stringify({
          type: "FeatureCollection",
          crs: { type: "name", properties: { name: "urn:ogc:def:crs:EPSG::3857" } },
          features: [
            { type: "Feature", properties: {}, geometry: { type: "Point", coordinates: [261845.7, 6250564.3] } },
          ],
        }),
      );
      const refused = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: projected,
        filetype: "geojson",
      });
      expect((refused.error as { details: string[] }).details[0]).toMatch(
        /names the coordinate system 'urn:ogc:def:crs:EPSG::3857'/,
      );
      const small = await upload(tokens.publisher, "small.csv", "a\n1\n");
      const reserved = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: small,
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "gpkg_contents" }),
      });
      expect((reserved.error as { code: number; details: string[] }).code).toBe(400);
      expect((reserved.error as { details: string[] }).details[0]).toMatch(/not beginning with gpkg_/);
      // A thousand columns over thousands of short rows: a few bytes a row, millions of values (refused as soon as the
      // rows read pass what the file's size allows).
      const header = Array.from({ length: 1000 }, (_, i) => `c${i}`).join(",");
      const many = await upload(tokens.publisher, "short-rows.csv", `${header}\n${"1\n".repeat(4000)}`);
      const answer = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, {
        itemId: many,
        filetype: "csv",
      });
      expect((answer.error as { details: string[] }).details[0]).toMatch(
        /^The file has 3001 rows of 1000 fields: at most 3,000,000 values are published from a file of 12,890 bytes \(4 a byte, and 3,000,000 from any file\)\.$/,
      );
    });
  });

  describe("a GeoPackage of a point layer and a table", () => {
    it("is published as one service of two layers (ids 0 and 1), each queried and read back by GDAL", async () => {
      // Made by GDAL as users make theirs: a point layer from GeoJSON, then an attribute table beside it.
      const work = mkdtempSync(join(tmpdir(), "mapgate-two-tables-"));
      try {
        const points = {
          type: "FeatureCollection",
          features: [
            {
              type: "Feature",
              properties: { site: "North", depth: 12.5 },
              geometry: { type: "Point", coordinates: [5, 52] },
            },
            {
              type: "Feature",
              properties: { site: "South", depth: 3 },
              geometry: { type: "Point", coordinates: [4, 44] },
            },
            {
              type: "Feature",
              properties: { site: "West", depth: 7 },
              geometry: { type: "Point", coordinates: [-1, 47] },
            },
          ],
        };
        writeFileSync(join(work, "sites.geojson"), JSON.stringify(points));
        writeFileSync(join(work, "visits.csv"), "site,visitor,count\nNorth,ana,2\nSouth,ben,5\n");
        const gpkg = join(work, "survey.gpkg");
        execFileSync("ogr2ogr", ["-f", "GPKG", gpkg, join(work, "sites.geojson"), "-nln", "sites"], { stdio: "pipe" });
        execFileSync(
          "ogr2ogr",
          ["-update", "-f", "GPKG", gpkg, join(work, "visits.csv"), "-nln", "visits", "-oo", "AUTODETECT_TYPE=YES"],
          {
            stdio: "pipe",
          },
        );
        const itemId = await upload(tokens.publisher, "survey.gpkg", readFileSync(gpkg));
        const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
          itemId,
          filetype: "geoPackage",
          publishParameters: JSON.stringify({ name: "Survey" }),
        })) as unknown as Published;
        const service = published.services[0];
        expect(service?.serviceurl, JSON.stringify(published)).toMatch(/\/Hosted\/Survey\/FeatureServer$/);
        const url = service?.serviceurl as string;
        const json = await getJson(url, tokens.publisher);
        expect(json.layers).toMatchObject([{ id: 0, name: "sites" }]);
        expect(json.tables).toMatchObject([{ id: 1, name: "visits" }]);
        expect(await getJson(`${url}/0/query?where=depth%3E5&returnCountOnly=true`, tokens.publisher)).toEqual({
          count: 2,
        });
        const visits = await getJson(
          `${url}/1/query?where=1%3D1&outFields=site,count&orderByFields=site`,
          tokens.publisher,
        );
        expect((visits.features as { attributes: Record<string, unknown> }[]).map((f) => f.attributes)).toEqual([
          { fid: 1, site: "North", count: 2 },
          { fid: 2, site: "South", count: 5 },
        ]);
        const serviceItemId = service?.serviceItemId as string;
        expect(backing.ogrinfo(engine.dataDir, serviceItemId, "sites")).toMatch(/Feature Count: 3/);
        expect(backing.ogrinfo(engine.dataDir, serviceItemId, "visits")).toMatch(/Feature Count: 2/);
        // Appending from a file of several tables names the one to take.
        const unnamed = await postJson(`${url}/1/append`, tokens.publisher, {
          appendItemId: itemId,
          appendUploadFormat: "geoPackage",
        });
        expect((unnamed.error as { details: string[] }).details).toEqual([
          "The file has 2 tables: name the one to append in 'sourceTableName' ('sites', 'visits').",
        ]);
        expect(
          await postJson(`${url}/1/append`, tokens.publisher, {
            appendItemId: itemId,
            appendUploadFormat: "geoPackage",
            sourceTableName: "visits",
          }),
        ).toEqual({ success: true });
        expect(backing.ogrinfo(engine.dataDir, serviceItemId, "visits")).toMatch(/Feature Count: 4/);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    });
  });

  describe("a GeoPackage table whose integers pass 32 bits", () => {
    it("keeps a 32-bit integer field an Integer, and publishes one holding 64-bit values as a Double, every value exact", async () => {
      const work = mkdtempSync(join(tmpdir(), "mapgate-wide-"));
      try {
        // GDAL types `small` Integer (a GeoPackage MEDIUMINT) and `big` Integer64 (an INTEGER).
        writeFileSync(join(work, "counts.csv"), "label,small,big\na,7,5000000000\nb,-3,-9000000000\nc,2147483647,1\n");
        const gpkg = join(work, "counts.gpkg");
        execFileSync(
          "ogr2ogr",
          ["-f", "GPKG", gpkg, join(work, "counts.csv"), "-nln", "counts", "-oo", "AUTODETECT_TYPE=YES"],
          { stdio: "pipe" },
        );
        expect(execFileSync("ogrinfo", ["-ro", "-so", gpkg, "counts"], { encoding: "utf8" })).toMatch(
          /small: Integer \(0\.0\)\nbig: Integer64 \(0\.0\)/,
        );
        const itemId = await upload(tokens.publisher, "counts.gpkg", readFileSync(gpkg));
        const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
          itemId,
          filetype: "geoPackage",
          publishParameters: JSON.stringify({ name: "Counts" }),
        })) as unknown as Published;
        const service = published.services[0];
        expect(service?.serviceurl, JSON.stringify(published)).toMatch(/\/Hosted\/Counts\/FeatureServer$/);
        const url = service?.serviceurl as string;
        const table = await getJson(`${url}/0`, tokens.publisher);
        expect((table.fields as { name: string; type: string }[]).map((f) => [f.name, f.type])).toEqual([
          ["fid", "esriFieldTypeOID"],
          ["label", "esriFieldTypeString"],
          ["small", "esriFieldTypeInteger"],
          ["big", "esriFieldTypeDouble"],
          ["GlobalID", "esriFieldTypeGlobalID"],
          ["CreationDate", "esriFieldTypeDate"],
          ["Creator", "esriFieldTypeString"],
          ["EditDate", "esriFieldTypeDate"],
          ["Editor", "esriFieldTypeString"],
        ]);
        const rows = await getJson(
          `${url}/0/query?where=1%3D1&outFields=small,big&orderByFields=fid`,
          tokens.publisher,
        );
        expect((rows.features as { attributes: Record<string, unknown> }[]).map((f) => f.attributes)).toEqual([
          { fid: 1, small: 7, big: 5000000000 },
          { fid: 2, small: -3, big: -9000000000 },
          { fid: 3, small: 2147483647, big: 1 },
        ]);
        // Kept 32 bits wide where it is kept: GDAL reads an Integer, not an Integer64.
        const info = backing.ogrinfo(engine.dataDir, service?.serviceItemId as string, "counts");
        expect(info).toMatch(/small: Integer \(/);
        expect(info).toMatch(/big: Real \(/);
      } finally {
        rmSync(work, { recursive: true, force: true });
      }
    });
  });

  describe("changing a layer's data without changing its item: append, upsert, overwrite", () => {
    const SITES = ["code,name,visits,Latitude,Longitude", "A1,Alpha,10,48.1,2.1", "B2,Beta,20,48.2,2.2"].join("\n");
    let url = "";
    let serviceItemId = "";
    type Row = { attributes: Record<string, unknown>; geometry: { x: number; y: number } | null };
    const rows = async () =>
      (await getJson(`${url}/0/query?where=1%3D1&outFields=*&outSR=4326&orderByFields=fid`, tokens.publisher))
        .features as Row[];
    const append = (fields: Record<string, string>, token = tokens.publisher) =>
      postJson(`${url}/0/append`, token, fields);
    const gdalCount = () =>
      Number(/Feature Count: (\d+)/.exec(backing.ogrinfo(engine.dataDir, serviceItemId, "Sites"))?.[1]);

    it("publishes the layer the changes are made to", async () => {
      const itemId = await upload(tokens.publisher, "sites.csv", SITES);
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId,
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "Sites" }),
      })) as unknown as Published;
      url = published.services[0]?.serviceurl as string;
      serviceItemId = published.services[0]?.serviceItemId as string;
      expect(url).toMatch(/\/Hosted\/Sites\/FeatureServer$/);
      // Clients look for this before they append.
      expect(await getJson(`${url}/0`, tokens.publisher)).toMatchObject({
        supportsAppend: true,
        supportedAppendFormats: "csv,geojson,shapefile,geoPackage",
      });
      // Shared with the organization: members see it, and still may not change its data.
      await postJson(`${rest()}/content/users/publisher/items/${serviceItemId}/share`, tokens.publisher, {
        everyone: "false",
        org: "true",
      });
    });

    it("appends a file's rows: object ids continue after the layer's, a field the layer lacks is left out", async () => {
      const file = await upload(
        tokens.publisher,
        "more-sites.csv",
        ["code,name,visits,extra,Latitude,Longitude", "C3,Gamma,30,x,49.5,3.5", "D4,Delta,,y,50.5,4.5"].join("\n"),
      );
      expect(await append({ appendItemId: file, appendUploadFormat: "csv" })).toEqual({ success: true });
      const got = await rows();
      expect(got.map((r) => own(r.attributes))).toEqual([
        { fid: 1, code: "A1", name: "Alpha", visits: 10, Latitude: 48.1, Longitude: 2.1 },
        { fid: 2, code: "B2", name: "Beta", visits: 20, Latitude: 48.2, Longitude: 2.2 },
        { fid: 3, code: "C3", name: "Gamma", visits: 30, Latitude: 49.5, Longitude: 3.5 },
        { fid: 4, code: "D4", name: "Delta", visits: null, Latitude: 50.5, Longitude: 4.5 },
      ]);
      expect(got[3]?.geometry?.x).toBeCloseTo(4.5, 6);
      expect(gdalCount()).toBe(4);
      // The layer's extent and the item's take the new rows in.
      const layer = (await getJson(`${url}/0`, tokens.publisher)) as { extent: { xmax: number; ymax: number } };
      expect(layer.extent.xmax).toBeCloseTo(4.5, 6);
      const item = (await getJson(`${rest()}/content/items/${serviceItemId}`, tokens.publisher)) as {
        extent: number[][];
      };
      expect(item.extent[1]?.[0]).toBeCloseTo(4.5, 6);
    });

    it("upserts by a key field: matched rows updated (their points moved), the others added; async answers a status", async () => {
      const file = await upload(
        tokens.publisher,
        "changed-sites.csv",
        ["code,visits,Latitude,Longitude", "B2,25,40,-3", "E5,50,41,-4"].join("\n"),
      );
      const answer = (await append({
        appendItemId: file,
        appendUploadFormat: "csv",
        upsert: "true",
        upsertMatchingField: "code",
        async: "true",
      })) as { statusUrl: string };
      expect(answer.statusUrl).toMatch(
        new RegExp(
          `/portal/sharing/rest/content/users/publisher/items/${serviceItemId}/status\\?jobId=[0-9a-f]{32}&jobType=append$`,
        ),
      );
      const status = await getJson(answer.statusUrl, tokens.publisher);
      expect(status).toEqual({
        status: "Completed",
        itemId: serviceItemId,
        jobId: expect.stringMatching(/^[0-9a-f]{32}$/),
      });
      const got = await rows();
      expect(got.map((r) => [r.attributes.fid, r.attributes.code, r.attributes.name, r.attributes.visits])).toEqual([
        [1, "A1", "Alpha", 10],
        // Updated: the fields the file has; its name (not in the file) kept.
        [2, "B2", "Beta", 25],
        [3, "C3", "Gamma", 30],
        [4, "D4", "Delta", null],
        [5, "E5", null, 50],
      ]);
      expect(got[1]?.geometry?.x).toBeCloseTo(-3, 6);
      expect(got[1]?.geometry?.y).toBeCloseTo(40, 6);
      expect(gdalCount()).toBe(5);
      // skipInserts: only matches change; fieldMappings: a file's column written to a field of another name.
      const again = await upload(tokens.publisher, "renamed.csv", "site_code,label\nA1,First\nZ9,Ignored\n");
      expect(
        await append({
          appendItemId: again,
          appendUploadFormat: "csv",
          upsert: "true",
          upsertMatchingField: "code",
          skipInserts: "true",
          updateGeometry: "false",
          fieldMappings: JSON.stringify([
            { name: "code", source: "site_code" },
            { name: "name", source: "label" },
          ]),
        }),
      ).toEqual({ success: true });
      const after = await rows();
      expect(after.map((r) => r.attributes.name)).toEqual(["First", "Beta", "Gamma", "Delta", null]);
      // A table's rows updated attributes only: the point stays.
      expect(after[0]?.geometry?.x).toBeCloseTo(2.1, 6);
    });

    it("refuses a value that does not fit, a repeated key, other shapes: a 400 naming it, and nothing changes", async () => {
      const before = await rows();
      const bad = await upload(
        tokens.publisher,
        "bad-sites.csv",
        ["code,visits,Latitude,Longitude", "G7,70,1,1", "H8,many,2,2"].join("\n"),
      );
      expect(await append({ appendItemId: bad, appendUploadFormat: "csv" })).toEqual({
        error: {
          code: 400,
          message: "Unable to append data.",
          details: [
            `Row 2: 'visits' is "many", which is not a number (the layer's field 'visits' is esriFieldTypeInteger).`,
          ],
        },
      });
      const twice = await upload(tokens.publisher, "twice.csv", "code,visits\nA1,1\nA1,2\n");
      const repeated = await append({
        appendItemId: twice,
        appendUploadFormat: "csv",
        upsert: "true",
        upsertMatchingField: "code",
        skipInserts: "true",
        updateGeometry: "false",
      });
      expect((repeated.error as { details: string[] }).details).toEqual([
        `Row 2: 'code' is "A1" again: each row must match one row.`,
      ]);
      const polygons = await upload(tokens.publisher, "zones-again.geojson", GEOJSON);
      const shapes = await append({ appendItemId: polygons, appendUploadFormat: "geojson" });
      expect((shapes.error as { details: string[] }).details).toEqual([
        "The layer holds points; the file holds polygons.",
      ]);
      const wrongFormat = await append({ appendItemId: bad, appendUploadFormat: "filegdb" });
      expect((wrongFormat.error as { details: string[] }).details[0]).toMatch(/not available yet/);
      expect(await rows()).toEqual(before);
      expect(gdalCount()).toBe(5);
    });

    it("refuses a missing item (400), a member who does not own the layer (403), an anonymous caller", async () => {
      const missing = await append({ appendItemId: "0".repeat(32), appendUploadFormat: "csv" });
      expect(missing.error).toMatchObject({
        code: 400,
        details: [`Item '${"0".repeat(32)}' does not exist or is inaccessible.`],
      });
      const noItem = await append({ appendUploadFormat: "csv" });
      expect((noItem.error as { details: string[] }).details).toEqual([
        "'appendItemId' must be specified (the uploaded file's item).",
      ]);
      const file = await upload(tokens.user, "mine.csv", "code,visits,Latitude,Longitude\nU1,1,1,1\n", "user");
      const byMember = await append({ appendItemId: file, appendUploadFormat: "csv" }, tokens.user);
      expect((byMember.error as { code: number }).code).toBe(403);
      const anonymous = (
        await call(`${url}/0/append`, { ca: engine.ca, body: form({ f: "json", appendItemId: file }) })
      ).json<Record<string, unknown>>();
      expect((anonymous.error as { code: number }).code).toBe(499);
      expect(gdalCount()).toBe(5);
    });

    it("takes two appends at once one after the other (the service's lock): no row is lost", async () => {
      const files = await Promise.all(
        ["P", "Q"].map((p) =>
          upload(tokens.publisher, `batch-${p}.csv`, `code,visits,Latitude,Longitude\n${p}1,1,30,30\n${p}2,2,31,31\n`),
        ),
      );
      const answers = await Promise.all(files.map((f) => append({ appendItemId: f, appendUploadFormat: "csv" })));
      expect(answers).toEqual([{ success: true }, { success: true }]);
      const got = await rows();
      expect(got.map((r) => r.attributes.fid)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
      expect(
        got
          .map((r) => r.attributes.code)
          .slice(5)
          .sort(),
      ).toEqual(["P1", "P2", "Q1", "Q2"]);
      expect(gdalCount()).toBe(9);
    });

    it("publishes again over the service (overwrite=true): the same item id and URL, its sharing kept, the new rows served", async () => {
      const file = await upload(
        tokens.publisher,
        "sites-2026.csv",
        ["code,rating,Latitude,Longitude", "N1,4.5,10,10", "N2,3,11,11", "N3,5,12,12"].join("\n"),
      );
      const answer = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: file,
        filetype: "csv",
        overwrite: "true",
        publishParameters: JSON.stringify({ name: "Sites" }),
      })) as unknown as Published;
      expect(answer.services[0]).toMatchObject({ serviceurl: url, serviceItemId });
      const got = await rows();
      expect(got.map((r) => own(r.attributes))).toEqual([
        { fid: 1, code: "N1", rating: 4.5, Latitude: 10, Longitude: 10 },
        { fid: 2, code: "N2", rating: 3, Latitude: 11, Longitude: 11 },
        { fid: 3, code: "N3", rating: 5, Latitude: 12, Longitude: 12 },
      ]);
      expect(gdalCount()).toBe(3);
      const item = await getJson(`${rest()}/content/items/${serviceItemId}`, tokens.publisher);
      expect(item).toMatchObject({ id: serviceItemId, access: "org" });
      // A member sees the new rows through the same URL (the sharing stayed).
      expect(await getJson(`${url}/0/query?where=1%3D1&returnCountOnly=true`, tokens.user)).toEqual({ count: 3 });
    });

    it("empties the layer on the admin wire (truncate); rows appended after are numbered from 1 again, as ArcGIS resets them", async () => {
      const admin = url.replace("/rest/services/", "/rest/admin/services/");
      expect(await postJson(`${admin}/0/truncate`, tokens.publisher)).toEqual({ success: true });
      expect(await rows()).toEqual([]);
      expect(gdalCount()).toBe(0);
      const file = await upload(tokens.publisher, "after.csv", "code,rating,Latitude,Longitude\nN9,1,5,5\n");
      expect(await append({ appendItemId: file })).toEqual({ success: true });
      expect((await rows()).map((r) => own(r.attributes))).toEqual([
        { fid: 1, code: "N9", rating: 1, Latitude: 5, Longitude: 5 },
      ]);
    });

    it("refuses an overwrite of other shapes, by a member who does not own it, of a service that does not exist", async () => {
      const polygons = await upload(tokens.publisher, "zones-over.geojson", GEOJSON);
      const shapes = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: polygons,
        filetype: "geojson",
        overwrite: "true",
        publishParameters: JSON.stringify({ name: "Sites" }),
      });
      expect(shapes.error).toMatchObject({
        code: 400,
        details: ["Layer 0 ('Sites') holds points; the file's first holds polygons."],
      });
      const file = await upload(tokens.user, "theirs.csv", "code,Latitude,Longitude\nX,1,1\n", "user");
      const byMember = await postJson(`${rest()}/content/users/user/publish`, tokens.user, {
        itemId: file,
        filetype: "csv",
        overwrite: "true",
        publishParameters: JSON.stringify({ name: "Sites" }),
      });
      expect((byMember.error as { code: number }).code).toBe(403);
      const none = await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
        itemId: polygons,
        filetype: "geojson",
        overwrite: "true",
        publishParameters: JSON.stringify({ name: "NoSuchService" }),
      });
      expect(none.error).toMatchObject({
        code: 400,
        details: ["There is no hosted feature service 'NoSuchService' to overwrite."],
      });
      expect(gdalCount()).toBe(1);
    });
  });

  return {
    engine: () => engine,
    rest,
    servicesUrl: () => `${engine.ready.https}/arcgis/rest/services`,
    publisher: () => tokens.publisher,
    upload: (token, name, bytes) => upload(token, name, bytes),
    postJson,
    getJson,
  };
}
