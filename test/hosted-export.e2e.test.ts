// Exporting hosted feature layers back to files, through the real local engine: a CSV uploaded and published, then
// exported to CSV, GeoJSON, a zipped shapefile and a GeoPackage (by raw calls and by ArcGIS REST JS's exportItem),
// each export's file downloaded from its item and compared with what the layer's query answers, row by row and
// attribute by attribute (the shapefile and the GeoPackage read back by GDAL); formula-like text escaped in CSV;
// exports refused to those who may not make them and for bad parameters; the export item a file item like any other.
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse } from "csv-parse/sync";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine, signInMembers } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody } from "./helpers/http.ts";
import { square } from "./helpers/shapes.ts";

let engine: RunningEngine;
let scratch = "";
const tokens = { admin: "", publisher: "", user: "" };
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

// Text a spreadsheet would run as a formula, text needing quotes, text beyond ASCII, two long names that share their
// first ten characters (a .dbf keeps ten), a negative number, a double of many digits, dates, a row without a point.
const CSV = [
  "Name,Note,population_2020,population_2021,Ratio,Opened,Latitude,Longitude",
  "Louvre,=1+1,8900000,9100000,0.1234567890123,1793-08-10,48.8606,2.3376",
  'Prado,"+SUM(A1), ""quoted""",3200000,-5,-2.5,1819-11-19,40.4138,-3.6921',
  "Zürich Kunsthaus,@cmd,2700000,2750000,1e-7,1910-01-01,47.3702,8.5481",
  "東京国立博物館,-minus,10,11,3,2000-01-01,35.7188,139.7765",
  "Nowhere,plain,1,2,4.5,2001-02-03,,",
].join("\n");

async function upload(token: string, name: string, bytes: string, owner: string): Promise<string> {
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

const errorOf = (answer: Record<string, unknown>) =>
  answer.error as { code: number; message: string; details: string[] };

const itemFiles = () => {
  const dir = join(engine.dataDir, "item-files", "items");
  return existsSync(dir) ? readdirSync(dir) : [];
};

interface Exported {
  type: string;
  size: number;
  jobId: string;
  exportItemId: string;
  serviceItemId: string;
  exportFormat: string;
}

let serviceItemId = "";
let serviceUrl = "";
/** What the layer's own query answers: the truth every export is compared with. */
let truth: { attributes: Record<string, string | number | null>; geometry?: { x: number; y: number } }[] = [];

async function exportAs(
  token: string,
  exportFormat: string,
  extra: Record<string, string> = {},
  owner = "publisher",
): Promise<Record<string, unknown>> {
  return postJson(`${rest()}/content/users/${owner}/export`, token, {
    itemId: serviceItemId,
    exportFormat,
    ...extra,
  });
}

async function download(token: string, itemId: string): Promise<Buffer> {
  const res = await call(`${rest()}/content/items/${itemId}/data?token=${encodeURIComponent(token)}`, {
    ca: engine.ca,
  });
  expect(res.status).toBe(200);
  expect(res.headers["content-disposition"]).toMatch(/^attachment/);
  return res.body;
}

/** GDAL's reading of a file, as GeoJSON features (ogr2ogr to /vsistdout/). */
function gdalFeatures(
  path: string,
  ...options: string[]
): { properties: Record<string, unknown>; geometry: { coordinates: number[] } | null }[] {
  const out = execFileSync("ogr2ogr", [...options, "-f", "GeoJSON", "/vsistdout/", path], { encoding: "utf8" });
  return (JSON.parse(out) as { features: never[] }).features;
}

const day = (ms: unknown) => new Date(Number(ms)).toISOString().slice(0, 10);
const byName = <T extends { properties: Record<string, unknown> }>(rows: T[]) =>
  new Map(rows.map((r) => [String(r.properties.Name), r]));

beforeAll(async () => {
  engine = await startEngine({ env: { STORAGE_QUOTA_USER_MB: "8" } });
  scratch = mkdtempSync(join(tmpdir(), "mapgate-export-test-"));
  Object.assign(tokens, await signInMembers(rest(), engine.ca));
  const itemId = await upload(tokens.publisher, "museums.csv", CSV, "publisher");
  const analyzed = await postJson(`${rest()}/content/features/analyze`, tokens.publisher, { itemId, filetype: "csv" });
  const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
    itemId,
    filetype: "csv",
    publishParameters: JSON.stringify({ ...(analyzed.publishParameters as object), name: "Museums" }),
  })) as { services: { serviceItemId: string; serviceurl: string }[] };
  serviceItemId = published.services[0]?.serviceItemId ?? "";
  serviceUrl = published.services[0]?.serviceurl ?? "";
  const answer = await getJson(
    `${serviceUrl}/0/query?where=1%3D1&outFields=*&orderByFields=fid&outSR=4326`,
    tokens.publisher,
  );
  truth = answer.features as typeof truth;
}, 120_000);

afterAll(async () => {
  await engine?.stop();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe("exporting a hosted layer", () => {
  it("reads the layer as published (the rows every export is compared with)", () => {
    expect(truth.map((r) => r.attributes.Name)).toEqual([
      "Louvre",
      "Prado",
      "Zürich Kunsthaus",
      "東京国立博物館",
      "Nowhere",
    ]);
  });

  it("to CSV: every row and attribute, points as x/y, dates in ISO 8601 UTC, formulas escaped", async () => {
    const exported = (await exportAs(tokens.publisher, "csv", {
      title: "Museums CSV",
      tags: "export,museums",
      exportParameters: JSON.stringify({ layers: [{ id: 0 }] }),
    })) as unknown as Exported;
    expect(exported).toEqual({
      type: "CSV",
      size: expect.any(Number),
      jobId: expect.stringMatching(/^[0-9a-f]{32}$/),
      exportItemId: expect.stringMatching(/^[0-9a-f]{32}$/),
      serviceItemId,
      exportFormat: "CSV",
    });
    const status = await getJson(
      `${rest()}/content/users/publisher/items/${exported.exportItemId}/status?jobId=${exported.jobId}&jobType=export`,
      tokens.publisher,
    );
    expect(status).toEqual({
      status: "completed",
      statusMessage: "completed",
      itemId: exported.exportItemId,
      jobId: exported.jobId,
    });
    const bytes = await download(tokens.publisher, exported.exportItemId);
    expect(bytes.length).toBe(exported.size);
    const text = bytes.toString("utf8");
    const [header, ...rows] = parse(text, { relax_column_count: false }) as string[][];
    expect(header).toEqual([
      "x",
      "y",
      "fid",
      "Name",
      "Note",
      "population_2020",
      "population_2021",
      "Ratio",
      "Opened",
      "Latitude",
      "Longitude",
      // The global id and editor tracking every hosted layer made now has.
      "GlobalID",
      "CreationDate",
      "Creator",
      "EditDate",
      "Editor",
    ]);
    expect(rows).toHaveLength(truth.length);
    // The cells as written: a formula-like text starts with an apostrophe; numbers (negative ones too) do not.
    expect(text.split("\r\n")[1]).toMatch(
      /^2\.3376,48\.8606,1,Louvre,'=1\+1,8900000,9100000,0\.1234567890123,1793-08-10T00:00:00\.000Z,48\.8606,2\.3376,\{[0-9A-F-]{36}\},\d{4}-\d\d-\d\dT[\d:.]+Z,publisher,/,
    );
    expect(rows[1]?.[4]).toBe(`'+SUM(A1), "quoted"`);
    expect(rows[1]?.[6]).toBe("-5");
    expect(rows[1]?.[7]).toBe("-2.5");
    expect(rows[2]?.[4]).toBe("'@cmd");
    expect(rows[3]?.[4]).toBe("'-minus");
    truth.forEach((t, i) => {
      const row = rows[i] ?? [];
      const a = t.attributes;
      const unescaped = (v: string | undefined) => (v?.startsWith("'") ? v.slice(1) : v);
      expect(row[0]).toBe(t.geometry ? String(t.geometry.x) : "");
      expect(row[1]).toBe(t.geometry ? String(t.geometry.y) : "");
      expect(row[2]).toBe(String(a.fid));
      expect(row[3]).toBe(a.Name);
      expect(unescaped(row[4])).toBe(a.Note);
      expect(Number(row[5])).toBe(a.population_2020);
      expect(Number(row[6])).toBe(a.population_2021);
      expect(Number(row[7])).toBe(a.Ratio);
      expect(row[8]).toBe(new Date(Number(a.Opened)).toISOString());
      expect(row[9]).toBe(a.Latitude === null ? "" : String(a.Latitude));
    });
    const item = await getJson(`${rest()}/content/items/${exported.exportItemId}`, tokens.publisher);
    expect(item).toMatchObject({
      type: "CSV",
      title: "Museums CSV",
      owner: "publisher",
      access: "private",
      tags: ["export", "museums"],
      name: "Museums CSV.csv",
      size: exported.size,
    });
  });

  it("to GeoJSON: a FeatureCollection in WGS 84 with every row and attribute", async () => {
    const exported = (await exportAs(tokens.publisher, "GeoJson")) as unknown as Exported;
    expect(exported).toMatchObject({ type: "GeoJson", exportFormat: "GeoJson", serviceItemId });
    const collection = JSON.parse((await download(tokens.publisher, exported.exportItemId)).toString("utf8")) as {
      type: string;
      features: {
        id: number;
        properties: Record<string, unknown>;
        geometry: { type: string; coordinates: number[] } | null;
      }[];
    };
    expect(collection.type).toBe("FeatureCollection");
    expect(collection.features).toHaveLength(truth.length);
    truth.forEach((t, i) => {
      const f = collection.features[i];
      expect(f?.id).toBe(t.attributes.fid);
      expect(f?.geometry).toEqual(t.geometry ? { type: "Point", coordinates: [t.geometry.x, t.geometry.y] } : null);
      expect(f?.properties).toEqual({
        ...t.attributes,
        Opened: new Date(Number(t.attributes.Opened)).toISOString(),
        CreationDate: new Date(Number(t.attributes.CreationDate)).toISOString(),
        EditDate: new Date(Number(t.attributes.EditDate)).toISOString(),
      });
    });
    // GDAL takes it as the file it says it is.
    const path = join(scratch, "museums.geojson");
    writeFileSync(path, JSON.stringify(collection));
    expect(gdalFeatures(path)).toHaveLength(truth.length);
  });

  it("to a zipped shapefile that GDAL reads back with every row and attribute (names cut to 10, kept unique)", async () => {
    const exported = (await exportAs(tokens.publisher, "shapefile", {
      exportParameters: JSON.stringify({ layers: [{ id: 0 }] }),
    })) as unknown as Exported;
    expect(exported).toMatchObject({ type: "Shapefile", exportFormat: "Shapefile" });
    const zip = join(scratch, "museums.zip");
    writeFileSync(zip, await download(tokens.publisher, exported.exportItemId));
    const listing = execFileSync("unzip", ["-Z1", zip], { encoding: "utf8" }).trim().split("\n").sort();
    expect(listing).toEqual(["Museums.cpg", "Museums.dbf", "Museums.prj", "Museums.shp", "Museums.shx"]);
    const info = execFileSync("ogrinfo", ["-ro", "-al", "-so", `/vsizip/${zip}`], { encoding: "utf8" });
    expect(info).toMatch(/Geometry: Point/);
    expect(info).toMatch(/Feature Count: 5/);
    expect(info).toMatch(/GEOGCRS\["WGS 84"/);
    const features = byName(gdalFeatures(`/vsizip/${zip}`));
    expect(features.size).toBe(truth.length);
    for (const t of truth) {
      const a = t.attributes;
      const f = features.get(String(a.Name));
      expect(f?.properties).toEqual({
        fid: a.fid,
        Name: a.Name,
        Note: a.Note,
        population: a.population_2020,
        populati_1: a.population_2021,
        Ratio: a.Ratio,
        Opened: day(a.Opened),
        Latitude: a.Latitude,
        Longitude: a.Longitude,
        GlobalID: a.GlobalID,
        CreationDa: day(a.CreationDate),
        Creator: a.Creator,
        EditDate: day(a.EditDate),
        Editor: a.Editor,
      });
      expect(f?.geometry?.coordinates ?? null).toEqual(t.geometry ? [t.geometry.x, t.geometry.y] : null);
    }
  });

  it("to a GeoPackage that GDAL reads back with every row and attribute, by ArcGIS REST JS's exportItem", async () => {
    const [exported] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "exportItem", options: { id: serviceItemId, exportFormat: "geoPackage", title: "Museums package" } },
    ])) as Exported[];
    expect(exported).toMatchObject({ type: "GeoPackage", exportFormat: "GeoPackage", serviceItemId });
    const path = join(scratch, "museums.gpkg");
    writeFileSync(path, await download(tokens.publisher, exported?.exportItemId ?? ""));
    const info = execFileSync("ogrinfo", ["-ro", "-al", "-so", path], { encoding: "utf8" });
    expect(info).toMatch(/Layer name: Museums/);
    expect(info).toMatch(/Feature Count: 5/);
    const features = gdalFeatures(path, "-preserve_fid") as unknown as {
      id: number;
      properties: Record<string, unknown>;
      geometry: { coordinates: number[] } | null;
    }[];
    truth.forEach((t, i) => {
      const f = features[i];
      const { fid, Opened, CreationDate, EditDate, ...rest } = t.attributes;
      expect(f?.id).toBe(fid);
      const when = (v: unknown) => Date.parse(String(v));
      expect({
        ...f?.properties,
        Opened: when(f?.properties.Opened),
        CreationDate: when(f?.properties.CreationDate),
        EditDate: when(f?.properties.EditDate),
      }).toEqual({ ...rest, Opened, CreationDate, EditDate });
      expect(f?.geometry?.coordinates ?? null).toEqual(t.geometry ? [t.geometry.x, t.geometry.y] : null);
    });
  });

  it("keeps to a layer's where, and to its coordinate column names", async () => {
    const exported = (await exportAs(tokens.publisher, "CSV", {
      exportParameters: JSON.stringify({
        layers: [{ id: 0, where: "population_2020 > 3000000", xColumnName: "lon", yColumnName: "lat" }],
      }),
    })) as unknown as Exported;
    const text = (await download(tokens.publisher, exported.exportItemId)).toString("utf8");
    const [header, ...rows] = parse(text) as string[][];
    expect(header?.slice(0, 3)).toEqual(["lon", "lat", "fid"]);
    expect(rows.map((r) => r[3])).toEqual(["Louvre", "Prado"]);
    const polygons = (await exportAs(tokens.publisher, "geojson", {
      exportParameters: JSON.stringify({ layers: [{ id: 0, where: "Name LIKE 'N%'", includeGeometry: false }] }),
    })) as unknown as Exported;
    const collection = JSON.parse((await download(tokens.publisher, polygons.exportItemId)).toString("utf8")) as {
      features: { properties: { Name: string }; geometry: unknown }[];
    };
    expect(collection.features.map((f) => [f.properties.Name, f.geometry])).toEqual([["Nowhere", null]]);
  });

  it("is refused to a member who does not own the layer, seen or not, and into another's content", async () => {
    const hidden = await exportAs(tokens.user, "CSV", {}, "user");
    expect(errorOf(hidden)).toEqual({
      code: 400,
      messageCode: "CONT_0001",
      message: "Item does not exist or is inaccessible.",
      details: [`Item '${serviceItemId}' does not exist or is inaccessible.`],
    });
    const shared = await postJson(`${rest()}/content/items/${serviceItemId}/share`, tokens.publisher, {
      everyone: "false",
      org: "true",
    });
    expect(shared.notSharedWith).toEqual([]);
    const files = itemFiles().length;
    const refused = await exportAs(tokens.user, "CSV", {}, "user");
    expect(errorOf(refused)).toEqual({
      code: 403,
      messageCode: "GWM_0003",
      message: "You do not have permissions to access this resource or perform this operation.",
      details: ["Only the layer's owner or an administrator exports it."],
    });
    const elsewhere = await exportAs(tokens.user, "CSV", {}, "publisher");
    expect(errorOf(elsewhere)).toMatchObject({ code: 403 });
    expect(itemFiles().length).toBe(files);
    // An administrator exports it into their own content.
    const byAdmin = (await exportAs(tokens.admin, "CSV", {}, "admin")) as unknown as Exported;
    const item = await getJson(`${rest()}/content/items/${byAdmin.exportItemId}`, tokens.admin);
    expect(item).toMatchObject({ owner: "admin", type: "CSV" });
  });

  it("answers a clear 400 for an unknown format, bad parameters, a missing layer, a non-hosted item", async () => {
    const files = itemFiles().length;
    expect(errorOf(await exportAs(tokens.publisher, "xlsx"))).toEqual({
      code: 400,
      message: "Unable to export item.",
      details: ["'exportFormat' must be one of CSV, GeoJson, Shapefile, GeoPackage (got 'xlsx')."],
    });
    expect(errorOf(await exportAs(tokens.publisher, "KML")).details).toEqual([
      "Exporting to KML is not available: mapgate exports to CSV, GeoJson, Shapefile, GeoPackage.",
    ]);
    expect(errorOf(await exportAs(tokens.publisher, "CSV", { exportParameters: "{layers:" })).details).toEqual([
      "'exportParameters' must be JSON.",
    ]);
    expect(
      errorOf(await exportAs(tokens.publisher, "CSV", { exportParameters: JSON.stringify({ layers: [{ id: 3 }] }) }))
        .details,
    ).toEqual(["The service has no layer 3: its layers are 0."]);
    expect(
      errorOf(
        await exportAs(tokens.publisher, "CSV", {
          exportParameters: JSON.stringify({ layers: [{ id: 0 }, { id: 0 }] }),
        }),
      ).details,
    ).toEqual(["Layer 0 is named twice in 'exportParameters.layers[1]'."]);
    const badWhere = errorOf(
      await exportAs(tokens.publisher, "CSV", {
        exportParameters: JSON.stringify({ layers: [{ id: 0, where: "nosuchfield = 1" }] }),
      }),
    );
    expect(badWhere).toMatchObject({ code: 400, message: "Unable to export item." });
    expect(badWhere.details[0]).toMatch(/^Layer 0: 'where' parameter is invalid/);
    const csvItem = await upload(tokens.publisher, "plain.csv", "a,b\n1,2\n", "publisher");
    expect(
      errorOf(
        await postJson(`${rest()}/content/users/publisher/export`, tokens.publisher, {
          itemId: csvItem,
          exportFormat: "CSV",
        }),
      ).details,
    ).toEqual(["Only hosted feature layers are exported: the item is not one."]);
    expect(itemFiles().length).toBe(files + 1);
  });

  it("makes a normal item: found by search, its bytes counted, freed when it is deleted", async () => {
    const before = Number((await getJson(`${rest()}/community/self`, tokens.publisher)).storageUsage);
    const exported = (await exportAs(tokens.publisher, "GeoPackage", {
      title: "Findable export",
    })) as unknown as Exported;
    const after = Number((await getJson(`${rest()}/community/self`, tokens.publisher)).storageUsage);
    expect(after - before).toBe(exported.size);
    const found = await getJson(
      `${rest()}/search?q=${encodeURIComponent('title:"Findable export"')}`,
      tokens.publisher,
    );
    expect((found.results as { id: string }[]).map((r) => r.id)).toContain(exported.exportItemId);
    expect(itemFiles()).toContain(exported.exportItemId);
    const removed = await postJson(
      `${rest()}/content/users/publisher/items/${exported.exportItemId}/delete`,
      tokens.publisher,
    );
    expect(removed).toMatchObject({ success: true });
    expect(itemFiles()).not.toContain(exported.exportItemId);
    expect(Number((await getJson(`${rest()}/community/self`, tokens.publisher)).storageUsage)).toBe(before);
  });
});

describe("exporting layers of other shapes and sizes", () => {
  it("pages through a layer larger than a query's page, every row once, in object id order", async () => {
    const rows = Array.from({ length: 4500 }, (_, i) => `site ${i},${i % 7},${(i % 170) - 85},${(i % 350) - 175}`);
    const itemId = await upload(tokens.publisher, "many.csv", ["Label,Kind,Lat,Lon", ...rows].join("\n"), "publisher");
    const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
      itemId,
      filetype: "csv",
      publishParameters: JSON.stringify({ name: "Many", latitudeFieldName: "Lat", longitudeFieldName: "Lon" }),
    })) as { services: { serviceItemId: string }[] };
    const many = published.services[0]?.serviceItemId ?? "";
    const exported = (await postJson(`${rest()}/content/users/publisher/export`, tokens.publisher, {
      itemId: many,
      exportFormat: "GeoJson",
      exportParameters: JSON.stringify({ layers: [{ id: 0, where: "Kind <> 3" }] }),
    })) as unknown as Exported;
    const collection = JSON.parse((await download(tokens.publisher, exported.exportItemId)).toString("utf8")) as {
      features: { id: number; properties: { Label: string; Kind: number } }[];
    };
    const expected = Array.from({ length: 4500 }, (_, i) => i).filter((i) => i % 7 !== 3);
    expect(collection.features.map((f) => f.properties.Label)).toEqual(expected.map((i) => `site ${i}`));
    expect(collection.features.map((f) => f.id)).toEqual(expected.map((i) => i + 1));
    const shapefile = (await postJson(`${rest()}/content/users/publisher/export`, tokens.publisher, {
      itemId: many,
      exportFormat: "Shapefile",
    })) as unknown as Exported;
    const zip = join(scratch, "many.zip");
    writeFileSync(zip, await download(tokens.publisher, shapefile.exportItemId));
    expect(execFileSync("ogrinfo", ["-ro", "-al", "-so", `/vsizip/${zip}`], { encoding: "utf8" })).toMatch(
      /Feature Count: 4500/,
    );
  });

  it("writes polygons to a shapefile GDAL reads as the same shapes, and to a CSV of attributes alone", async () => {
    // The second polygon has a hole; rings are given counter-clockwise outside (RFC 7946), a shapefile wants clockwise.
    const hole = [
      [4.25, 50.25],
      [4.25, 50.75],
      [4.75, 50.75],
      [4.75, 50.25],
      [4.25, 50.25],
    ];
    const geojson = JSON.stringify({
      type: "FeatureCollection",
      features: [
        { type: "Feature", properties: { zone: "A" }, geometry: { type: "Polygon", coordinates: [square(2, 48, 1)] } },
        {
          type: "Feature",
          properties: { zone: "=B" },
          geometry: { type: "MultiPolygon", coordinates: [[square(4, 50, 1), hole], [square(6, 50, 1)]] },
        },
      ],
    });
    const itemId = await upload(tokens.publisher, "zones.geojson", geojson, "publisher");
    const published = (await postJson(`${rest()}/content/users/publisher/publish`, tokens.publisher, {
      itemId,
      filetype: "geojson",
      publishParameters: JSON.stringify({ name: "Zones" }),
    })) as { services: { serviceItemId: string }[] };
    const zones = published.services[0]?.serviceItemId ?? "";
    const shapefile = (await postJson(`${rest()}/content/users/publisher/export`, tokens.publisher, {
      itemId: zones,
      exportFormat: "Shapefile",
    })) as unknown as Exported;
    const zip = join(scratch, "zones.zip");
    writeFileSync(zip, await download(tokens.publisher, shapefile.exportItemId));
    const sql = "SELECT zone, ST_Area(geometry) AS area, ST_NumGeometries(geometry) AS parts FROM Zones ORDER BY zone";
    const read = gdalFeatures(`/vsizip/${zip}`, "-dialect", "SQLite", "-sql", sql);
    expect(read.map((f) => f.properties)).toEqual([
      { zone: "=B", area: 1.75, parts: 2 },
      { zone: "A", area: 1, parts: 1 },
    ]);
    const csv = (await postJson(`${rest()}/content/users/publisher/export`, tokens.publisher, {
      itemId: zones,
      exportFormat: "CSV",
    })) as unknown as Exported;
    // Its own columns, then its global id and tracking.
    const lines = (await download(tokens.publisher, csv.exportItemId)).toString("utf8").split("\r\n");
    expect(lines.map((l) => l.split(",").slice(0, 2).join(","))).toEqual(["fid,zone", "1,A", "2,'=B", ""]);
    expect(lines[0]).toBe("fid,zone,GlobalID,CreationDate,Creator,EditDate,Editor");
  });
});
