// Hosted feature layers from zipped shapefiles and GeoPackages, through the real local engine: fixtures made here by
// GDAL (ogr2ogr) and zipped with yazl, uploaded with ArcGIS REST JS's createItem, analyzed and published, queried back
// with REST JS's queryFeatures, and read back by GDAL's ESRIJSON driver over each layer's query URL. Bad files (zip
// bombs, entries that escape their folder, links, shapefiles missing a part or of an unknown .prj, GeoPackages that
// are not SQLite, hold no table, or carry a trigger and a view) are each refused or ignored as they should be.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { queryFeatures } from "@esri/arcgis-rest-feature-service";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody, signIn as signInAt } from "./helpers/http.ts";
import { square, zipOf } from "./helpers/shapes.ts";

let engine: RunningEngine;
let token = "";
let work = "";
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

type Published = { services: { serviceurl: string; serviceItemId: string; jobId: string; notes?: string[] }[] };

/** Zones in WGS 84: the shapefile made from them is in UTM zone 31N; one has a hole, one has two parts. */
const ZONES = {
  type: "FeatureCollection",
  features: [
    {
      type: "Feature",
      properties: { name: "Île", area: 1.25, rank: 3, opened: "2024-02-29" },
      geometry: { type: "Polygon", coordinates: [square(2, 48, 1), square(2.25, 48.25, 0.25).reverse()] },
    },
    {
      type: "Feature",
      properties: { name: "Nord", area: 2.5, rank: 7, opened: "1999-12-31" },
      geometry: { type: "MultiPolygon", coordinates: [[square(3, 50, 0.5)], [square(4, 50, 0.5)]] },
    },
    {
      type: "Feature",
      properties: { name: "Sud", area: 0.125, rank: -1, opened: null },
      geometry: { type: "Polygon", coordinates: [square(1, 43, 0.5)] },
    },
  ],
};
const SITES = {
  type: "FeatureCollection",
  features: [
    { type: "Feature", properties: { label: "a" }, geometry: { type: "Point", coordinates: [2.35, 48.85] } },
    { type: "Feature", properties: { label: "b" }, geometry: { type: "Point", coordinates: [4.85, 45.76] } },
  ],
};
const STATIONS = {
  type: "FeatureCollection",
  features: [
    { type: "Feature", properties: { code: "S1", height: 12.5 }, geometry: { type: "Point", coordinates: [5, 45] } },
    { type: "Feature", properties: { code: "S2", height: 30 }, geometry: { type: "Point", coordinates: [6, 46] } },
    { type: "Feature", properties: { code: "S3", height: null }, geometry: { type: "Point", coordinates: [7, 47] } },
  ],
};
const READINGS = "station,value,taken\nS1,1.5,2025-01-02\nS2,2.25,2025-01-03\nS1,3,2025-01-04\nS3,4.75,2025-01-05\n";

const ogr = (...args: string[]) => execFileSync("ogr2ogr", args, { cwd: work, stdio: "pipe" });

/** A shapefile's parts as zip entries (`zones.shp`, …), those named in `without` left out. */
function shapefileEntries(base: string, without: string[] = []) {
  return ["shp", "shx", "dbf", "prj", "cpg"]
    .filter((ext) => !without.includes(ext))
    .map((ext) => ({ name: `${base}.${ext}`, bytes: readFileSync(join(work, `${base}.${ext}`)) }));
}

/** Every occurrence of `from` in the zip's bytes (its local and central headers) as `to`, of the same length. */
function renamed(zip: Buffer, from: string, to: string): Buffer {
  expect(to.length).toBe(from.length);
  const out = Buffer.from(zip);
  const a = Buffer.from(from);
  for (let at = out.indexOf(a); at >= 0; at = out.indexOf(a, at + 1)) out.write(to, at, "latin1");
  return out;
}

async function createItemWithFile(name: string, type: string, bytes: Buffer): Promise<string> {
  const [created] = (await portalCalls(
    engine,
    "publisher",
    PASSWORDS.publisher,
    [{ fn: "createItemWithFile", options: { item: { title: name, type }, name, base64: bytes.toString("base64") } }],
    { asInBrowser: true },
  )) as [{ success?: boolean; id?: string; error?: unknown }];
  expect(created, JSON.stringify(created)).toMatchObject({ success: true });
  return created.id as string;
}

/** addItem with a multipart file (the raw wire): the item's id, or the refusal. */
async function upload(name: string, bytes: Buffer): Promise<Record<string, unknown>> {
  const { body, type } = await multipartBody({ f: "json", token }, { file: { name, bytes } });
  const res = await call(`${rest()}/content/users/publisher/addItem`, {
    ca: engine.ca,
    body,
    headers: { "content-type": type },
  });
  return res.json();
}

/** analyze with the file sent in the request (no item), as ArcGIS's analyze takes one. */
async function analyzeFile(name: string, bytes: Buffer, filetype: string): Promise<Record<string, unknown>> {
  const { body, type } = await multipartBody({ f: "json", token, filetype }, { file: { name, bytes } });
  const res = await call(`${rest()}/content/features/analyze`, {
    ca: engine.ca,
    body,
    headers: { "content-type": type },
  });
  return res.json();
}

const publish = (itemId: string, filetype: string, name: string) =>
  postJson(`${rest()}/content/users/publisher/publish`, token, {
    itemId,
    filetype,
    publishParameters: JSON.stringify({ name }),
  }) as Promise<Published & { error?: { code: number; details: string[] } }>;

/** The features GDAL reads from a layer over its query URL (the ESRIJSON driver, paging as it does). */
function gdalFeatures(layerUrl: string): { properties: Record<string, unknown>; geometry: unknown }[] {
  const url = `${layerUrl}/query?where=1%3D1&outFields=*&orderByFields=fid&f=json&token=${token}`;
  const out = execFileSync("ogr2ogr", ["-f", "GeoJSON", "/vsistdout/", `ESRIJSON:${url}`], {
    encoding: "utf8",
    env: { ...process.env, GDAL_HTTP_UNSAFESSL: "YES" },
  });
  return (JSON.parse(out) as { features: { properties: Record<string, unknown>; geometry: unknown }[] }).features;
}

function gdalCount(layerUrl: string): number {
  const url = `${layerUrl}/query?where=1%3D1&outFields=*&f=json&token=${token}`;
  const info = execFileSync("ogrinfo", ["-ro", "-al", "-so", `ESRIJSON:${url}`], {
    encoding: "utf8",
    env: { ...process.env, GDAL_HTTP_UNSAFESSL: "YES" },
  });
  return Number(/Feature Count: (\d+)/.exec(info)?.[1]);
}

const details = (answer: Record<string, unknown>) =>
  (answer.error as { code: number; details: string[] } | undefined) ?? { code: 200, details: [] };

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "hosted-formats-"));
  writeFileSync(join(work, "zones.geojson"), JSON.stringify(ZONES));
  writeFileSync(join(work, "sites.geojson"), JSON.stringify(SITES));
  writeFileSync(join(work, "stations.geojson"), JSON.stringify(STATIONS));
  writeFileSync(join(work, "readings.csv"), READINGS);
  ogr("-f", "ESRI Shapefile", "-t_srs", "EPSG:32631", "-lco", "ENCODING=UTF-8", "zones.shp", "zones.geojson");
  ogr("-f", "ESRI Shapefile", "-t_srs", "EPSG:3857", "-lco", "ENCODING=UTF-8", "sites.shp", "sites.geojson");
  ogr("-f", "GPKG", "-t_srs", "EPSG:3857", "-nln", "stations", "network.gpkg", "stations.geojson");
  ogr("-f", "GPKG", "-update", "-nln", "readings", "-oo", "AUTODETECT_TYPE=YES", "network.gpkg", "readings.csv");
  engine = await startEngine();
  token = await signInAt(rest(), engine.ca, "publisher", PASSWORDS.publisher);
}, 120_000);

afterAll(async () => {
  await engine?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("a zip of two shapefiles in projected coordinate systems", () => {
  let zipped: Buffer;
  let published: Published;

  it("is analyzed as two layers, its dBASE fields typed, its .prj known", async () => {
    zipped = await zipOf([...shapefileEntries("zones"), ...shapefileEntries("sites")]);
    const itemId = await createItemWithFile("regions.zip", "Shapefile", zipped);
    const analyzed = await postJson(`${rest()}/content/features/analyze`, token, { itemId, filetype: "shapefile" });
    const parameters = analyzed.publishParameters as { layers: { id: number; name: string; fields: unknown[] }[] };
    expect(parameters).toMatchObject({ type: "shapefile", name: "regions_zip" });
    expect(parameters.layers.map((l) => [l.id, l.name])).toEqual([
      [0, "sites"],
      [1, "zones"],
    ]);
    expect(parameters.layers[1]).toMatchObject({
      type: "Feature Layer",
      geometryType: "esriGeometryPolygon",
      fields: [
        { name: "fid", type: "esriFieldTypeOID" },
        { name: "name", type: "esriFieldTypeString", length: 256 },
        { name: "area", type: "esriFieldTypeDouble" },
        { name: "rank", type: "esriFieldTypeInteger" },
        { name: "opened", type: "esriFieldTypeDate" },
      ],
    });
    published = (await publish(itemId, "shapefile", "Regions")) as Published;
    expect(published.services[0]?.serviceurl).toBe(
      `${engine.ready.https}/arcgis/rest/services/Hosted/Regions/FeatureServer`,
    );
  });

  it("is a service of two layers, each at its id, with the service's JSON listing both", async () => {
    const url = published.services[0]?.serviceurl as string;
    const service = await getJson(url, token);
    expect(service.layers).toEqual([
      expect.objectContaining({ id: 0, name: "sites", geometryType: "esriGeometryPoint" }),
      expect.objectContaining({ id: 1, name: "zones", geometryType: "esriGeometryPolygon" }),
    ]);
    expect(service.tables).toEqual([]);
    expect(await getJson(`${url}/1`, token)).toMatchObject({ id: 1, name: "zones", type: "Feature Layer" });
    const layers = await getJson(`${url}/layers`, token);
    expect((layers.layers as { id: number }[]).map((l) => l.id)).toEqual([0, 1]);
    expect(details(await getJson(`${url}/2`, token)).code).toBe(400);
  });

  it("answers queryFeatures with every zone, in WGS 84, holes and parts kept", async () => {
    const url = `${engine.ready.http}/arcgis/rest/services/Hosted/Regions/FeatureServer/1`;
    const answer = (await queryFeatures({
      url,
      where: "1=1",
      outFields: ["name", "area", "rank", "opened"],
      orderByFields: "fid",
      outSR: "4326",
      params: { token },
    })) as { features: { attributes: Record<string, unknown>; geometry: { rings: number[][][] } }[] };
    expect(answer.features.map((f) => f.attributes)).toEqual([
      { fid: 1, name: "Île", area: 1.25, rank: 3, opened: Date.UTC(2024, 1, 29) },
      { fid: 2, name: "Nord", area: 2.5, rank: 7, opened: Date.UTC(1999, 11, 31) },
      { fid: 3, name: "Sud", area: 0.125, rank: -1, opened: null },
    ]);
    const [ile, nord] = answer.features;
    expect(ile?.geometry.rings).toHaveLength(2);
    expect(nord?.geometry.rings).toHaveLength(2);
    const xs = (ile?.geometry.rings[0] ?? []).map((p) => p[0] as number);
    expect(Math.min(...xs)).toBeCloseTo(2, 6);
    expect(Math.max(...xs)).toBeCloseTo(3, 6);
  });

  it("reads back in GDAL with the source's feature counts and attribute values", () => {
    const url = published.services[0]?.serviceurl as string;
    expect(gdalCount(`${url}/0`)).toBe(2);
    expect(gdalCount(`${url}/1`)).toBe(3);
    const zones = gdalFeatures(`${url}/1`);
    expect(zones.map((f) => [f.properties.name, f.properties.area, f.properties.rank])).toEqual(
      ZONES.features.map((f) => [f.properties.name, f.properties.area, f.properties.rank]),
    );
    const sites = gdalFeatures(`${url}/0`);
    expect(sites.map((f) => f.properties.label)).toEqual(["a", "b"]);
  });
});

describe("a GeoPackage of a point table and an attribute table", () => {
  let published: Published;
  let bytes: Buffer;

  it("publishes one layer and one table, numbered together, its view not published and its trigger without effect", async () => {
    // A view (listed in gpkg_contents) and a trigger, as a crafted file might carry them.
    const db = new DatabaseSync(join(work, "network.gpkg"));
    db.exec(`
      CREATE TABLE audit (note TEXT);
      CREATE TRIGGER stations_touched AFTER INSERT ON stations BEGIN INSERT INTO audit VALUES ('written'); END;
      CREATE VIEW busy AS SELECT fid, geom, code FROM stations WHERE height > 20;
      INSERT INTO gpkg_contents (table_name, data_type, identifier, srs_id) VALUES ('busy', 'features', 'busy', 3857);
      INSERT INTO gpkg_geometry_columns VALUES ('busy', 'geom', 'POINT', 3857, 0, 0);
    `);
    db.close();
    bytes = readFileSync(join(work, "network.gpkg"));
    const itemId = await createItemWithFile("network.gpkg", "GeoPackage", bytes);
    const analyzed = await postJson(`${rest()}/content/features/analyze`, token, { itemId, filetype: "geoPackage" });
    expect(
      (analyzed.publishParameters as { layers: { id: number; name: string; type: string }[] }).layers.map((l) => [
        l.id,
        l.name,
        l.type,
      ]),
    ).toEqual([
      [0, "stations", "Feature Layer"],
      [1, "readings", "Table"],
    ]);
    published = (await publish(itemId, "geoPackage", "Network")) as Published;
    expect(published.services[0]?.notes).toEqual(['"busy" is a view: only tables are published.']);
    const service = await getJson(published.services[0]?.serviceurl as string, token);
    expect(service.layers).toEqual([expect.objectContaining({ id: 0, name: "stations" })]);
    expect(service.tables).toEqual([expect.objectContaining({ id: 1, name: "readings", type: "Table" })]);
    // The upload is as it was sent: nothing was written into it (no trigger fired).
    const data = await call(`${rest()}/content/items/${itemId}/data?token=${token}`, { ca: engine.ca });
    expect(Buffer.from(data.body).equals(bytes)).toBe(true);
  });

  it("answers queries with the source's rows, projected to WGS 84; GDAL reads each back", async () => {
    const url = `${engine.ready.http}/arcgis/rest/services/Hosted/Network/FeatureServer`;
    const stations = (await queryFeatures({
      url: `${url}/0`,
      where: "1=1",
      outFields: ["code", "height"],
      orderByFields: "fid",
      outSR: "4326",
      params: { token },
    })) as { features: { attributes: Record<string, unknown>; geometry: { x: number; y: number } }[] };
    expect(stations.features.map((f) => f.attributes)).toEqual([
      { fid: 1, code: "S1", height: 12.5 },
      { fid: 2, code: "S2", height: 30 },
      { fid: 3, code: "S3", height: null },
    ]);
    expect(stations.features[2]?.geometry.x).toBeCloseTo(7, 6);
    expect(stations.features[2]?.geometry.y).toBeCloseTo(47, 6);
    const readings = (await queryFeatures({
      url: `${url}/1`,
      where: "station = 'S1'",
      outFields: ["station", "value", "taken"],
      orderByFields: "fid",
      params: { token },
    })) as { features: { attributes: Record<string, unknown> }[] };
    expect(readings.features.map((f) => f.attributes)).toEqual([
      { fid: 1, station: "S1", value: 1.5, taken: Date.UTC(2025, 0, 2) },
      { fid: 3, station: "S1", value: 3, taken: Date.UTC(2025, 0, 4) },
    ]);
    const https = published.services[0]?.serviceurl as string;
    expect(gdalCount(`${https}/0`)).toBe(3);
    expect(gdalCount(`${https}/1`)).toBe(4);
    expect(gdalFeatures(`${https}/1`).map((f) => [f.properties.station, f.properties.value])).toEqual([
      ["S1", 1.5],
      ["S2", 2.25],
      ["S1", 3],
      ["S3", 4.75],
    ]);
  });
});

describe("bad files, each refused with a 400 that says why", () => {
  const analyzeZip = async (files: Parameters<typeof zipOf>[0] | Buffer) =>
    details(await analyzeFile("bad.zip", Buffer.isBuffer(files) ? files : await zipOf(files), "shapefile"));

  it("refuses a zip bomb by its declared ratio, before inflating it", async () => {
    const answer = await analyzeZip([{ name: "bomb.dbf", bytes: Buffer.alloc(20 * 1024 * 1024) }]);
    expect(answer).toMatchObject({
      code: 400,
      details: [
        'The zip entry "bomb.dbf" inflates to more than 250 times its compressed size: the file looks like a zip bomb and is refused.',
      ],
    });
  });

  it("refuses an entry that inflates past the size it declares, stopping as it counts", async () => {
    const zip = await zipOf([{ name: "liar.dbf", bytes: Buffer.alloc(4 * 1024 * 1024) }]);
    // The central directory's uncompressed size (offset 24 of its header) made to say 1,000 bytes.
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    zip.writeUInt32LE(1000, central + 24);
    expect(await analyzeZip(zip)).toMatchObject({
      code: 400,
      details: [
        'The zip entry "liar.dbf" inflates to more bytes than it declares (1000): the file looks like a zip bomb and is refused.',
      ],
    });
  });

  it("refuses an entry whose name escapes its folder", async () => {
    const zip = renamed(await zipOf([{ name: "xx/evil.shp", bytes: "x" }]), "xx/evil.shp", "../evil.shp");
    expect(await analyzeZip(zip)).toMatchObject({
      code: 400,
      details: ['The zip entry "../evil.shp" escapes its folder (..): it is refused.'],
    });
  });

  it("refuses an entry named by an absolute path, or by a drive", async () => {
    const absolute = renamed(await zipOf([{ name: "xetc/passwd", bytes: "x" }]), "xetc/passwd", "/etc/passwd");
    expect(await analyzeZip(absolute)).toMatchObject({
      code: 400,
      details: ['The zip entry "/etc/passwd" is an absolute path: it is refused.'],
    });
    const drive = renamed(await zipOf([{ name: "Cx/boot.ini", bytes: "x" }]), "Cx/boot.ini", "C:/boot.ini");
    expect(await analyzeZip(drive)).toMatchObject({
      code: 400,
      details: ['The zip entry "C:/boot.ini" names a drive: it is refused.'],
    });
  });

  it("refuses a symbolic link", async () => {
    expect(await analyzeZip([{ name: "zones.shp", bytes: "/etc/passwd", mode: 0o120777 }])).toMatchObject({
      code: 400,
      details: ['The zip entry "zones.shp" is a symbolic link: links are refused.'],
    });
  });

  it("refuses an encrypted entry", async () => {
    const zip = await zipOf([{ name: "zones.dbf", bytes: "x".repeat(100) }]);
    // The general purpose flag's bit 0 (encrypted) set, in the local header (offset 6) and the central one (8).
    zip.writeUInt16LE(zip.readUInt16LE(6) | 1, 6);
    const central = zip.indexOf(Buffer.from([0x50, 0x4b, 0x01, 0x02]));
    zip.writeUInt16LE(zip.readUInt16LE(central + 8) | 1, central + 8);
    expect(await analyzeZip(zip)).toMatchObject({
      code: 400,
      details: ['The zip entry "zones.dbf" is encrypted: encrypted entries cannot be read.'],
    });
  });

  it("refuses a shapefile missing its .shp, its .dbf or its .prj, naming it", async () => {
    for (const ext of ["shp", "dbf", "prj"])
      expect(await analyzeZip(shapefileEntries("zones", [ext]))).toMatchObject({
        code: 400,
        details: [`The shapefile "zones" has no "zones.${ext}" in the zip file.`],
      });
  });

  it("refuses a .prj no projection library knows", async () => {
    const prj = 'PROJCS["Nowhere",GEOGCS["Nothing"],PROJECTION["No_Such_Projection"]]';
    const entries = [...shapefileEntries("zones", ["prj"]), { name: "zones.prj", bytes: prj }];
    expect(await analyzeZip(entries)).toMatchObject({
      code: 400,
      details: [`The shapefile "zones" has a .prj that no projection library knows: ${JSON.stringify(prj)}.`],
    });
  });

  it("refuses a GeoPackage with no tables, and one that is not SQLite", async () => {
    const empty = join(work, "empty.gpkg");
    writeGeoPackage(empty, []);
    expect(details(await analyzeFile("empty.gpkg", readFileSync(empty), "geoPackage"))).toMatchObject({
      code: 400,
      details: [
        "The GeoPackage holds no feature or attribute tables to publish (views and other entries are not published).",
      ],
    });
    const text = Buffer.from("this is not a database, only text long enough to look at.".repeat(4));
    expect(details(await analyzeFile("fake.gpkg", text, "geoPackage"))).toMatchObject({
      code: 400,
      details: ["The file is not a GeoPackage: it is not an SQLite database."],
    });
    // Nor is it taken as an item of that type.
    expect(details(await upload("fake.gpkg", text)).code).toBe(400);
  });
});
