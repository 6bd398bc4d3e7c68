// The HTML pages of feature layers (f=html), through the real engine and its demo GeoPackage: the service, all
// its layers, one layer and the query form, their content checked against the JSON answers and the file itself
// (read here with node:sqlite), every link followed, values echoed back escaped; then the query form used in a
// headless Chromium with JavaScript disabled, under the pages' Content-Security-Policy.
import { DatabaseSync } from "node:sqlite";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngineAndBrowser, stopBrowserAndEngine } from "./helpers/browser.ts";
import { demoOrganization, demoServicePath, openDemoGeoPackage } from "./helpers/admin.ts";
import { type RunningEngine } from "./helpers/engine.ts";
import { call } from "./helpers/http.ts";

let engine: RunningEngine;
let browser: Browser;
let datastoreId: string;
let source: DatabaseSync;
const contexts: BrowserContext[] = [];

/** A demo layer's FeatureServer path (what the pages link to: paths, not URLs). */
const servicePath = (table: string) => demoServicePath(datastoreId, table);
const http = (path: string) => `${engine.ready.http}${path}`;

beforeAll(async () => {
  ({ engine, browser } = await startEngineAndBrowser());
  ({ worldStore: datastoreId } = demoOrganization(engine.dataDir));
  source = openDemoGeoPackage(engine.dataDir);
});
afterAll(async () => {
  source?.close();
  await stopBrowserAndEngine(contexts, browser, engine);
});

const all = <T>(sql: string, ...params: (string | number)[]) => source.prepare(sql).all(...params) as unknown as T[];
const count = (sql: string, ...params: (string | number)[]) =>
  Number((source.prepare(sql).get(...params) as { n: number }).n);

/** Text as the browser shows it: entities decoded (escapeHtml writes numeric ones), tags dropped. */
const textOf = (html: string) =>
  html
    .replace(/<[^>]*>/g, "")
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n)))
    .replace(/&amp;/g, "&");

/** An f=html page: served as HTML under the strict policy, without any script. */
async function getPage(path: string): Promise<string> {
  const res = await call(http(path));
  expect(res.status, path).toBe(200);
  expect(res.headers["content-type"], path).toBe("text/html; charset=utf-8");
  expect(res.headers["content-security-policy"], path).toContain("default-src 'none'");
  expect(res.text, path).toMatch(/^<!DOCTYPE html>/);
  // No script element and no handler attribute in any tag (escaped text between tags may say anything).
  expect(res.text, path).not.toMatch(/<script|<[^>]*\son[a-z]+=/i);
  return res.text;
}

/** The rows of the page's table of `cls`, each as its cells' text (header cells included). */
function table(html: string, cls: string): string[][] {
  const found = html.match(new RegExp(`<table class="${cls}">(.*?)</table>`, "s"));
  if (!found) throw new Error(`no table of class ${cls}`);
  return [...(found[1] ?? "").matchAll(/<tr>(.*?)<\/tr>/gs)].map((row) =>
    [...(row[1] ?? "").matchAll(/<t[hd]>(.*?)<\/t[hd]>/gs)].map((c) => textOf(c[1] ?? "")),
  );
}

/** Every link of the page as [text, href]. */
const links = (html: string): [string, string][] =>
  [...html.matchAll(/<a href="([^"]*)">(.*?)<\/a>/gs)].map((m) => [textOf(m[2] ?? ""), textOf(m[1] ?? "")]);

const hrefOf = (html: string, text: string) => {
  const found = links(html).filter(([t]) => t === text);
  expect(found, text).toHaveLength(1);
  return found[0]?.[1] as string;
};

/** Follows every link of a page: each is a page (not an error) or JSON (not an error envelope). */
async function followAll(html: string) {
  for (const [text, href] of links(html)) {
    const res = await call(http(href));
    expect(res.status, `${text}: ${href}`).toBe(200);
    if (/[?&]f=p?json(&|$)/.test(href)) expect(res.json(), href).not.toHaveProperty("error");
    else {
      expect(res.headers["content-type"], href).toBe("text/html; charset=utf-8");
      expect(res.text, href).not.toContain('class="error"');
    }
  }
}

const json = async (path: string) => (await call(http(path))).json<Record<string, unknown>>();
const query = (table: string, params: Record<string, string>) =>
  getPage(`${servicePath(table)}/0/query?${new URLSearchParams({ f: "html", ...params })}`);

type Extent = { xmin: number; ymin: number; xmax: number; ymax: number };
const extentRows = (e: Extent, sr: string) => [
  ["XMin", String(e.xmin)],
  ["YMin", String(e.ymin)],
  ["XMax", String(e.xmax)],
  ["YMax", String(e.ymax)],
  ["Spatial Reference", sr],
];

describe("the service's page", () => {
  it("describes the service, links its layer, its layers page, its folder, its item, its JSON and its map", async () => {
    const path = servicePath("places");
    const html = await getPage(`${path}?f=html`);
    const name = path.split("/").at(-2);
    expect(html).toContain(`<h1>World/${name} (FeatureServer)</h1>`);
    const service = await json(`${path}?f=json`);
    const itemId = service.serviceItemId as string;
    expect(table(html, "service")).toEqual([
      ["Service Description", "Layer of places"],
      ["Capabilities", "Query"],
      ["Max Record Count", "2000"],
      ["Supported Query Formats", "JSON, geoJSON, PBF"],
      ["Spatial Reference", "4326 (4326)"],
      ["Units", "esriDecimalDegrees"],
      ["Has Versioned Data", "false"],
      ["Service Item", itemId],
    ]);
    expect(links(html)).toEqual([
      ["Home", "/arcgis/rest/services?f=html"],
      ["World", "/arcgis/rest/services/World?f=html"],
      [`World/${name} (FeatureServer)`, `${path}?f=html`],
      ["JSON", `${path}?f=pjson`],
      ["View", `/viewer/map?url=${encodeURIComponent(path)}`],
      [itemId, `/portal/sharing/rest/content/items/${itemId}?f=html`],
      ["places", `${path}/0?f=html`],
      ["All Layers and Tables", `${path}/layers?f=html`],
    ]);
    expect(html).toMatch(/<h2>Tables<\/h2><p><span class="muted">\(none\)<\/span><\/p>/);
    expect(table(html, "extent")).toEqual(extentRows(service.fullExtent as Extent, "4326 (4326)"));
    await followAll(html);
  });

  it("lists a dataset without geometry under Tables", async () => {
    const path = servicePath("attribution");
    const html = await getPage(`${path}?f=html`);
    expect(html).toMatch(/<h2>Layers<\/h2><p><span class="muted">\(none\)<\/span><\/p><h2>Tables<\/h2><ul><li>/);
    expect(hrefOf(html, "attribution")).toBe(`${path}/0?f=html`);
    expect(table(html, "service")).toContainEqual(["Spatial Reference", "unknown"]);
  });
});

describe("the layer's page and the layers page", () => {
  it("lists the fields with their types, aliases and lengths, as the JSON and the file have them", async () => {
    const path = servicePath("places");
    const html = await getPage(`${path}/0?f=html`);
    expect(html).toContain("<h1>Layer: places (ID: 0)</h1>");
    expect(table(html, "layer")).toEqual([
      ["Name", "places"],
      ["Type", "Feature Layer"],
      ["Geometry Type", "esriGeometryPoint"],
      ["Description", "Layer of places"],
      ["Copyright Text", "(none)"],
      ["Display Field", "name"],
      ["Object ID Field", "fid"],
      ["Unique ID Field", "fid"],
      ["Has Z", "false"],
      ["Has M", "false"],
      ["Has Attachments", "false"],
      ["Capabilities", "Query"],
      ["Max Record Count", "2000"],
      ["Supported Query Formats", "JSON, geoJSON, PBF"],
      ["Use Standardized Queries", "true"],
      [
        "Supported Spatial Relationships",
        "esriSpatialRelIntersects, esriSpatialRelContains, esriSpatialRelCrosses, esriSpatialRelEnvelopeIntersects, esriSpatialRelOverlaps, esriSpatialRelTouches, esriSpatialRelWithin",
      ],
    ]);
    const fields = table(html, "fields");
    expect(fields).toEqual([
      ["Name", "Type", "Alias", "Length", "Nullable"],
      ["fid", "esriFieldTypeOID", "fid", "", "false"],
      ["name", "esriFieldTypeString", "name", "", "false"],
      ["country", "esriFieldTypeString", "country", "2", "true"],
      ["admin1", "esriFieldTypeString", "admin1", "", "true"],
      ["admin1_name", "esriFieldTypeString", "admin1_name", "", "true"],
      ["admin2", "esriFieldTypeString", "admin2", "", "true"],
      ["lat", "esriFieldTypeDouble", "lat", "", "true"],
      ["lng", "esriFieldTypeDouble", "lng", "", "true"],
    ]);
    // The same fields as the JSON and the file's own columns (the geometry column aside).
    const layer = await json(`${path}/0?f=json`);
    const described = layer.fields as { name: string; type: string; alias: string; length?: number }[];
    expect(fields.slice(1).map(([n, t, a, l]) => ({ name: n, type: t, alias: a, length: l }))).toEqual(
      described
        .map((f) => ({ ...f, length: f.length === undefined ? "" : String(f.length) }))
        .map(({ name, type, alias, length }) => ({ name, type, alias, length })),
    );
    const columns = all<{ name: string }>("SELECT name FROM pragma_table_info('places') WHERE name <> 'geom'");
    expect(fields.slice(1).map(([n]) => n)).toEqual(columns.map((c) => c.name));
    expect(table(html, "extent")).toEqual(extentRows(layer.extent as Extent, "4326 (4326)"));
    expect(hrefOf(html, "Query")).toBe(`${path}/0/query?f=html`);
    expect(hrefOf(html, "JSON")).toBe(`${path}/0?f=pjson`);
    await followAll(html);
  });

  it("a table's page names it a table and shows no extent", async () => {
    const html = await getPage(`${servicePath("attribution")}/0?f=html`);
    expect(html).toContain("<h1>Table: attribution (ID: 0)</h1>");
    expect(table(html, "layer")).toContainEqual(["Type", "Table"]);
    expect(html).not.toContain('<table class="extent">');
    expect(table(html, "fields").map(([n, t]) => `${n} ${t}`)).toEqual([
      "Name Type",
      "fid esriFieldTypeOID",
      "layer esriFieldTypeString",
      "source esriFieldTypeString",
      "licence esriFieldTypeString",
      "url esriFieldTypeString",
      "attribution_required esriFieldTypeSmallInteger",
      "credit esriFieldTypeString",
    ]);
  });

  it("the layers page shows every layer with its fields, linked to its own page", async () => {
    const path = servicePath("countries");
    const html = await getPage(`${path}/layers?f=html`);
    expect(html).toContain(`<h2><a href="${path}/0?f=html">Layer: countries (ID: 0)</a></h2>`);
    expect(table(html, "fields")).toEqual([
      ["Name", "Type", "Alias", "Length", "Nullable"],
      ["fid", "esriFieldTypeOID", "fid", "", "false"],
      ["name", "esriFieldTypeString", "name", "", "false"],
      ["iso_n3", "esriFieldTypeString", "iso_n3", "3", "true"],
    ]);
    expect(hrefOf(html, "JSON")).toBe(`${path}/layers?f=pjson`);
    await followAll(html);
  });
});

/** The form's fields in order: [name, kind, value the browser sends] ("true" or "" for a box, checked or not). */
function formFields(html: string): [string, string, string][] {
  const form = html.match(/<form method="get" action="([^"]*)">(.*?)<\/form>/s);
  if (!form) throw new Error("no GET form");
  const controls = /<textarea([^>]*)>(.*?)<\/textarea>|<select([^>]*)>(.*?)<\/select>|<input([^>]*)>/gs;
  const nameIn = (attrs: string) => textOf(attrs.match(/name="([^"]*)"/)?.[1] ?? "");
  return [...(form[2] ?? "").matchAll(controls)].map((m): [string, string, string] => {
    if (m[1] !== undefined) return [nameIn(m[1]), "textarea", textOf(m[2] ?? "")];
    if (m[3] !== undefined) {
      // What the browser sends: the selected option, else the first one.
      const options = [...(m[4] ?? "").matchAll(/<option(?: value="([^"]*)")?( selected)?>(.*?)<\/option>/g)];
      const chosen = options.find((o) => o[2] !== undefined) ?? options[0];
      return [nameIn(m[3]), "select", textOf(chosen?.[1] ?? chosen?.[3] ?? "")];
    }
    const attrs = m[5] ?? "";
    const type = attrs.match(/type="([^"]*)"/)?.[1] ?? "";
    if (type === "checkbox") return [nameIn(attrs), "checkbox", attrs.includes(" checked") ? "true" : ""];
    return [nameIn(attrs), type, textOf(attrs.match(/value="([^"]*)"/)?.[1] ?? "")];
  });
}

describe("the query page", () => {
  it("without a query: a GET form with every query parameter, nothing run, nothing that would constrain", async () => {
    const path = servicePath("places");
    const html = await getPage(`${path}/0/query?f=html`);
    expect(html).toContain("<h1>Query: places (ID: 0)</h1>");
    expect(html).toContain(`<form method="get" action="${path}/0/query">`);
    expect(formFields(html)).toEqual([
      ["where", "textarea", ""],
      ["objectIds", "text", ""],
      ["geometry", "textarea", ""],
      ["geometryType", "select", ""],
      ["inSR", "text", ""],
      ["spatialRel", "select", "esriSpatialRelIntersects"],
      ["distance", "text", ""],
      ["units", "select", "esriSRUnit_Meter"],
      ["outFields", "text", ""],
      ["returnGeometry", "select", "true"],
      ["outSR", "text", ""],
      ["geometryPrecision", "text", ""],
      ["maxAllowableOffset", "text", ""],
      ["orderByFields", "text", ""],
      ["groupByFieldsForStatistics", "text", ""],
      ["outStatistics", "textarea", ""],
      ["having", "text", ""],
      ["resultOffset", "text", ""],
      ["resultRecordCount", "text", ""],
      ["returnCountOnly", "checkbox", ""],
      ["returnIdsOnly", "checkbox", ""],
      ["returnExtentOnly", "checkbox", ""],
      ["returnDistinctValues", "checkbox", ""],
      ["f", "select", "html"],
    ]);
    // Choices start at the parameter's default; the geometry type left out is inferred from the geometry.
    expect(html).toContain(
      '<select id="field-geometryType" name="geometryType"><option value="" selected>(from the geometry)</option>',
    );
    expect(html).toContain(
      '<select id="field-f" name="f"><option selected>html</option><option>json</option><option>pjson</option><option>geojson</option><option>pbf</option></select>',
    );
    expect(html).not.toContain("<h2>Result</h2>");
    expect(html).not.toContain('name="csrf"');
  });

  it("the form as a browser sends it untouched asks exactly what no parameter asks", async () => {
    // Every field, empty or at its first option, as a GET form sends them.
    const html = await getPage(`${servicePath("places")}/0/query?f=html`);
    const sent = Object.fromEntries(
      formFields(html)
        .filter(([, kind, value]) => kind !== "checkbox" || value !== "")
        .map(([name, , value]) => [name, value]),
    );
    expect(Object.keys(sent)).toHaveLength(20);
    const asked: Record<string, string>[] = [
      {},
      { returnCountOnly: "true" },
      { returnIdsOnly: "true", where: "country = 'FO'" },
    ];
    for (const extra of asked) {
      const asForm = await json(
        `${servicePath("places")}/0/query?${new URLSearchParams({ ...sent, ...extra, f: "json" })}`,
      );
      const bare = await json(`${servicePath("places")}/0/query?${new URLSearchParams({ ...extra, f: "json" })}`);
      expect(asForm).toEqual(bare);
      expect(asForm).not.toHaveProperty("error");
    }
  });

  it("features: the page as a table matching the file, geometry summarized, the limit noted, pages linked", async () => {
    const params = { where: "country = 'IS'", outFields: "fid,name", resultRecordCount: "4", orderByFields: "name" };
    const expected = all<{ fid: number; name: string; lng: number; lat: number }>(
      "SELECT fid, name, lng, lat FROM places WHERE country = 'IS' ORDER BY name, fid",
    );
    expect(expected.length).toBeGreaterThan(8);
    const rowsOf = (rows: typeof expected) => rows.map((r) => [String(r.fid), r.name, `Point (${r.lng}, ${r.lat})`]);
    let html = await query("places", params);
    expect(table(html, "answer")).toEqual([
      ["Features", "4"],
      ["Geometry Type", "esriGeometryPoint"],
      ["Spatial Reference", "4326 (4326)"],
    ]);
    expect(table(html, "features")).toEqual([["fid", "name", "Geometry"], ...rowsOf(expected.slice(0, 4))]);
    expect(html).toContain(
      '<p class="limit">exceededTransferLimit: true — more features match than this page holds.</p>',
    );
    // The form keeps what was asked.
    expect(formFields(html)).toEqual(
      expect.arrayContaining([
        ["where", "textarea", "country = 'IS'"],
        ["outFields", "text", "fid,name"],
        ["orderByFields", "text", "name"],
        ["resultRecordCount", "text", "4"],
        ["f", "select", "html"],
      ]),
    );
    // The JSON link is the same query.
    const jsonHref = hrefOf(html, "JSON");
    const answer = await json(jsonHref);
    expect((answer.features as { attributes: { fid: number } }[]).map((f) => f.attributes.fid)).toEqual(
      expected.slice(0, 4).map((r) => r.fid),
    );
    // The next pages, to the last one.
    const seen = table(html, "features").slice(1);
    while (html.includes(">Next page</a>")) {
      html = await getPage(hrefOf(html, "Next page"));
      seen.push(...table(html, "features").slice(1));
    }
    expect(seen).toEqual(rowsOf(expected));
    expect(html).toContain('<p class="limit">exceededTransferLimit: false — no more features match.</p>');
  });

  it("polygons are summarized by rings and vertices, as the JSON answer has them", async () => {
    const params = { where: "name LIKE 'F%'", outFields: "name", maxAllowableOffset: "0.05" };
    const html = await query("countries", params);
    const answer = await json(`${servicePath("countries")}/0/query?${new URLSearchParams({ ...params, f: "json" })}`);
    const features = answer.features as {
      attributes: { fid: number; name: string };
      geometry: { rings: number[][][] };
    }[];
    expect(features.length).toBe(count("SELECT count(*) AS n FROM countries WHERE name LIKE 'F%'"));
    expect(table(html, "features")).toEqual([
      ["fid", "name", "Geometry"],
      ...features.map((f) => [
        String(f.attributes.fid),
        f.attributes.name,
        `Polygon: ${f.geometry.rings.length} ring${f.geometry.rings.length === 1 ? "" : "s"}, ${f.geometry.rings.flat().length} vertices`,
      ]),
    ]);
  });

  it("counts, ids, extents and statistics, as the file holds them", async () => {
    const where = "country IN ('IS', 'FO')";
    const n = count("SELECT count(*) AS n FROM places WHERE country IN ('IS', 'FO')");
    expect(table(await query("places", { where, returnCountOnly: "true" }), "answer")).toEqual([["Count", String(n)]]);
    const ids = all<{ fid: number }>("SELECT fid FROM places WHERE country IN ('IS', 'FO') ORDER BY fid");
    expect(table(await query("places", { where, returnIdsOnly: "true" }), "answer")).toEqual([
      ["Object ID Field", "fid"],
      ["Object IDs", ids.map((r) => r.fid).join(", ")],
      ["Count", String(n)],
    ]);
    const extent = await query("places", { where, returnExtentOnly: "true", returnCountOnly: "true" });
    const e = all<Extent>(
      "SELECT min(lng) AS xmin, min(lat) AS ymin, max(lng) AS xmax, max(lat) AS ymax FROM places WHERE country IN ('IS', 'FO')",
    )[0] as Extent;
    expect(table(extent, "answer")).toEqual([["Count", String(n)]]);
    const corners = table(extent, "extent");
    // The index's float32 boxes, rounded outwards.
    [e.xmin, e.ymin, e.xmax, e.ymax].forEach((v, i) => expect(Number(corners[i]?.[1])).toBeCloseTo(v, 4));
    expect(corners[4]).toEqual(["Spatial Reference", "4326 (4326)"]);
    const stats = await query("places", {
      where,
      outStatistics: JSON.stringify([
        { statisticType: "count", onStatisticField: "fid", outStatisticFieldName: "n" },
        { statisticType: "max", onStatisticField: "lat", outStatisticFieldName: "north" },
      ]),
      groupByFieldsForStatistics: "country",
    });
    const grouped = all<{ country: string; n: number; north: number }>(
      "SELECT country, count(*) AS n, max(lat) AS north FROM places WHERE country IN ('IS', 'FO') GROUP BY country ORDER BY country",
    );
    expect(table(stats, "features")).toEqual([
      ["country", "n", "north"],
      ...grouped.map((g) => [g.country, String(g.n), String(g.north)]),
    ]);
    const table_ = await query("attribution", { where: "attribution_required = 1", outFields: "layer,licence" });
    expect(table(table_, "features")).toEqual([
      ["fid", "layer", "licence"],
      ...all<{ fid: number; layer: string; licence: string }>(
        "SELECT fid, layer, licence FROM attribution WHERE attribution_required = 1 ORDER BY fid",
      ).map((r) => [String(r.fid), r.layer, r.licence]),
    ]);
  });

  it("echoes a hostile where escaped, and shows a bad one as the pipeline's error page", async () => {
    const hostile = `name = '</textarea><script>alert("x")</script>' OR name = 'a&b"<img src=x onerror=alert(1)>'`;
    const html = await query("places", { where: hostile, outFields: "name" });
    expect(formFields(html)).toContainEqual(["where", "textarea", hostile]);
    expect(html).toContain(
      "name = &#39;&#60;/textarea&#62;&#60;script&#62;alert(&#34;x&#34;)&#60;/script&#62;&#39; OR name = &#39;a&#38;b&#34;&#60;img src=x onerror=alert(1)&#62;&#39;",
    );
    expect(table(html, "answer")).toEqual([
      ["Features", "0"],
      ["Geometry Type", "esriGeometryPoint"],
      ["Spatial Reference", "4326 (4326)"],
    ]);
    // Also in the JSON link's query string, escaped as an attribute.
    expect(new URL(hrefOf(html, "JSON"), engine.ready.http).searchParams.get("where")).toBe(hostile);

    const bad = `name = '<b>' AND <script>`;
    const res = await call(http(`${servicePath("places")}/0/query?${new URLSearchParams({ f: "html", where: bad })}`));
    expect(res.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(res.text).toContain(
      '<div class="error"><h1>Unable to complete operation.</h1><ul><li>&#39;where&#39; parameter is invalid</li><li>',
    );
    expect(res.text).not.toMatch(/<script|<b>/);
    expect(textOf(res.text)).toContain("Expected a value but found '<' at position 18.");
    const field = await call(
      http(`${servicePath("places")}/0/query?${new URLSearchParams({ f: "html", outFields: '"><img src=x>' })}`),
    );
    expect(field.text).toContain("&#39;outFields&#39; parameter is invalid");
    expect(field.text).not.toContain("<img");
  });
});

describe("in a browser", () => {
  const consoleMessages: string[] = [];
  const policies: string[] = [];

  async function newPage(): Promise<Page> {
    const context = await browser.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });
    contexts.push(context);
    const page = await context.newPage();
    page.on("console", (m) => consoleMessages.push(`${m.type()}: ${m.text()}`));
    page.on("pageerror", (e) => consoleMessages.push(`pageerror: ${e.message}`));
    page.on("response", (r) => {
      if ((r.headers()["content-type"] ?? "").startsWith("text/html"))
        policies.push(r.headers()["content-security-policy"] ?? "");
    });
    return page;
  }

  async function go(page: Page, action: () => Promise<unknown>) {
    const loaded = page.waitForEvent("load");
    await action();
    await loaded;
  }

  /** The cells' text of each row of the page's table of `cls`. */
  async function cells(page: Page, cls: string): Promise<string[][]> {
    const rows = await page.locator(`table.${cls} tr`).all();
    return Promise.all(rows.map(async (r) => (await r.locator("th,td").allTextContents()).map((t) => t.trim())));
  }

  it("walks from the service to the query form, submits it and reads the answer below it", async () => {
    const page = await newPage();
    const path = servicePath("places");
    await page.goto(`${engine.ready.https}${path}?f=html`);
    await go(page, () => page.getByRole("link", { name: "places", exact: true }).click());
    expect(new URL(page.url()).pathname).toBe(`${path}/0`);
    await go(page, () => page.getByRole("link", { name: "Query", exact: true }).click());
    expect(new URL(page.url()).pathname).toBe(`${path}/0/query`);

    await page.getByLabel("Where").fill("country = 'FO'");
    await page.getByLabel("Out Fields").fill("fid,name,admin1_name");
    await page.getByLabel("Order By Fields").fill("fid DESC");
    await page.getByLabel("Result Record Count").fill("5");
    await go(page, () => page.getByRole("button", { name: "Query (GET)" }).click());
    const url = new URL(page.url());
    expect(url.pathname).toBe(`${path}/0/query`);
    expect(url.searchParams.get("where")).toBe("country = 'FO'");
    expect(url.searchParams.get("f")).toBe("html");
    const expected = all<{ fid: number; name: string; admin1_name: string | null; lng: number; lat: number }>(
      "SELECT fid, name, admin1_name, lng, lat FROM places WHERE country = 'FO' ORDER BY fid DESC LIMIT 5",
    );
    expect(await cells(page, "features")).toEqual([
      ["fid", "name", "admin1_name", "Geometry"],
      ...expected.map((r) => [String(r.fid), r.name, r.admin1_name ?? "null", `Point (${r.lng}, ${r.lat})`]),
    ]);
    // The values submitted stay in the form, so the next query starts from this one.
    expect(await page.getByLabel("Where").inputValue()).toBe("country = 'FO'");
    expect(await page.getByLabel("Result Record Count").inputValue()).toBe("5");
    expect(await page.getByLabel("Return Geometry").inputValue()).toBe("true");

    await page.getByLabel("Return Count Only").check();
    await go(page, () => page.getByRole("button", { name: "Query (GET)" }).click());
    expect(await cells(page, "answer")).toEqual([
      ["Count", String(count("SELECT count(*) AS n FROM places WHERE country = 'FO'"))],
    ]);
    expect(await page.getByLabel("Return Count Only").isChecked()).toBe(true);

    await page.getByLabel("Return Count Only").uncheck();
    await page.getByLabel("Return Geometry").selectOption("false");
    await page.getByLabel("Result Record Count").fill("");
    await go(page, () => page.getByRole("button", { name: "Query (GET)" }).click());
    expect((await cells(page, "features"))[0]).toEqual(["fid", "name", "admin1_name"]);
    expect(await page.locator("p.limit").textContent()).toBe("exceededTransferLimit: false — no more features match.");
  });

  it("sends the form as JSON when asked, the same answer as the URL without the empty fields", async () => {
    const page = await newPage();
    const path = servicePath("countries");
    await page.goto(`${engine.ready.https}${path}/0/query?f=html`);
    await page.getByLabel("Where").fill("name LIKE 'N%'");
    await page.getByLabel("Return IDs Only").check();
    await page.getByLabel("Format").selectOption("json");
    const [response] = await Promise.all([
      page.waitForResponse((r) => new URL(r.url()).pathname === `${path}/0/query`),
      page.getByRole("button", { name: "Query (GET)" }).click(),
    ]);
    expect(new URL(response.url()).searchParams.get("objectIds")).toBe("");
    expect(await response.json()).toEqual(
      await json(
        `${path}/0/query?${new URLSearchParams({ f: "json", where: "name LIKE 'N%'", returnIdsOnly: "true" })}`,
      ),
    );
  });

  it("no page broke its Content-Security-Policy, and every one carried it", async () => {
    expect(policies.length).toBeGreaterThan(5);
    for (const csp of policies) {
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("form-action 'self'");
    }
    expect(consoleMessages).toEqual([]);
  });

  it("(control) a violation of that policy does show up as a console error", async () => {
    const page = await newPage();
    const seen: string[] = [];
    page.on("console", (m) => seen.push(`${m.type()}: ${m.text()}`));
    const here = `${engine.ready.https}/arcgis/control`;
    await page.route(here, (route) =>
      route.fulfill({
        contentType: "text/html; charset=utf-8",
        headers: { "content-security-policy": policies[0] ?? "" },
        body: "<!DOCTYPE html><style>body{color:red}</style><p>control</p>",
      }),
    );
    await page.goto(here);
    await expect.poll(() => seen.some((t) => /^error: .*Content Security Policy/.test(t))).toBe(true);
  });
});
