// Database data stores, through the real engine and a throwaway PostgreSQL + PostGIS cluster on loopback:
// registered by the operator command (the password kept as the store's secret and nowhere else), described,
// bulk-published, and queried — answering exactly what the same data answers from a GeoPackage, for every
// part of the query grammar — and failing clearly when the database is down, black-holed or refuses the login.
import { execFileSync, spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  statSync,
  readFileSync,
  readdirSync,
  mkdtempSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { getLayer, queryAllFeatures } from "@esri/arcgis-rest-feature-service";
import { tmpdir } from "node:os";
import { join } from "node:path";
import decodeArcgisPbf from "arcgis-pbf-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_GEOPACKAGE_PATH, DEMO_LAYERS_FOLDER } from "#infra/admin/demo.ts";
import { writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { stableItemId } from "#shared/publishing.ts";
import {
  adminCommand,
  demoOrganization,
  type DemoOrganization,
  registerFolderStore,
  registerPostgresStore,
} from "./helpers/admin.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { cities, citiesLayer } from "./helpers/feature-layer.ts";
import { call } from "./helpers/http.ts";
import { jobEnd, share } from "./helpers/publish.ts";
import { blackHole, copyGeoPackageTable, type Postgres, startPostgres } from "./helpers/postgres.ts";

let engine: RunningEngine;
let db: Postgres;
let org: DemoOrganization;
let token: string;
let pgStore: string;
let citiesStore: string;
let work: string;
/** The job that bulk-published the database store. */
let pgPublished: Record<string, unknown>;
const rest = () => `${engine.ready.https}/portal/sharing/rest`;

const get = async (url: string) => (await call(url, { ca: engine.ca })).json<Record<string, unknown>>();
const post = async (url: string, fields: Record<string, string>) =>
  (await call(url, { ca: engine.ca, body: new URLSearchParams(fields).toString() })).json<Record<string, unknown>>();

/** A layer's FeatureServer as bulk publishing names it: `<dataset name>_<6 hex>` in the job's folder. */
const layerUrl = (folder: string, datastoreId: string, name: string, path: string) =>
  `${engine.ready.https}/arcgis/rest/services/${folder}/${name.replace(/[^A-Za-z0-9_]/g, "_")}_${stableItemId(datastoreId, path).slice(0, 6)}/FeatureServer`;
const gpkgLayer = (table: string) =>
  table === "cities"
    ? layerUrl("Cities", citiesStore, "cities", "/cities.gpkg/cities")
    : layerUrl(DEMO_LAYERS_FOLDER, org.worldStore, table, `/world.gpkg/${table}`);
const pgLayer = (table: string) => layerUrl("Pg", pgStore, `public.${table}`, `/public.${table}`);

/** Each job's key, by job id (to read its page). */
const jobKeys = new Map<string, string>();

/** Starts a data store operation that answers a job, and waits for the job's end. */
async function job(operation: string, fields: Record<string, string>): Promise<Record<string, unknown>> {
  const started = await post(`${rest()}/portals/self/datastores/${operation}`, { f: "json", token, ...fields });
  jobKeys.set(String(started.jobId), String(started.key));
  return jobEnd(engine, token, started);
}

const publishAll = (datastoreId: string, folder: string) =>
  job("allDatasets/publishLayers", { datastoreId, serverId: org.serverId, serverFolder: folder });

beforeAll(async () => {
  const [started, cluster] = await Promise.allSettled([startEngine(), startPostgres()]);
  // Whichever started is stopped after, even when the other did not.
  if (started.status === "fulfilled") engine = started.value;
  if (cluster.status === "fulfilled") db = cluster.value;
  if (started.status === "rejected") throw started.reason;
  if (cluster.status === "rejected") throw cluster.reason;
  org = demoOrganization(engine.dataDir);
  token = (await post(`${rest()}/generateToken`, { f: "json", username: "publisher", password: PASSWORDS.publisher }))
    .token as string;
  // The same rows in a GeoPackage and in PostGIS: the demo's world tables, and the cities fixture (every type).
  work = mkdtempSync(join(tmpdir(), "mapgate-pg-test-"));
  writeGeoPackage(join(work, "cities.gpkg"), [citiesLayer]);
  const world = join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH);
  for (const table of ["countries", "places", "attribution"]) await copyGeoPackageTable(world, table, db.admin);
  await copyGeoPackageTable(join(work, "cities.gpkg"), "cities", db.admin);
  // A table mapgate cannot publish (no integer key), listed with the reason.
  await db.admin.query("CREATE TABLE public.nokey (code text, label text)");
  // Dates as PostgreSQL keeps them: to the microsecond (answered in whole milliseconds).
  await db.admin.query(
    "CREATE TABLE public.moments (id integer PRIMARY KEY, at timestamptz, local timestamp, day date, geom geometry(Point, 4326))",
  );
  await db.admin.query(
    "INSERT INTO public.moments VALUES " +
      "(1, '2024-03-05 12:34:56.789654+00', '2024-03-05 12:34:56.123456', '2024-03-05', ST_SetSRID(ST_MakePoint(1, 2), 4326)), " +
      "(2, '2001-09-09 01:46:40.000500+00', '2001-09-09 01:46:40.0015', '2001-09-09', ST_SetSRID(ST_MakePoint(3, 4), 4326))",
  );
  // Types the wire has no field type of its own for: served as ArcGIS maps them.
  await db.admin.query("CREATE TABLE public.kinds (id integer PRIMARY KEY, flag boolean, tag uuid, meta jsonb)");
  await db.admin.query(
    "INSERT INTO public.kinds VALUES (1, true, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": 1}'), " +
      "(2, false, '00000000-0000-0000-0000-00000000beef', '[1, 2]'), (3, NULL, NULL, NULL)",
  );
  // Views: one over one table showing its key (renamed), which keeps rows one for one; one that does not.
  await db.admin.query(
    "CREATE VIEW public.san_places AS SELECT fid AS place_id, name, country, geom FROM public.places WHERE name LIKE 'San %'",
  );
  await db.admin.query("CREATE VIEW public.place_names AS SELECT DISTINCT name, country FROM public.places");
  await db.admin.query("CREATE VIEW public.renamed AS SELECT CAST(fid AS integer) + 0 AS fid, name FROM public.places");
  await db.admin.query("GRANT SELECT ON ALL TABLES IN SCHEMA public TO mapgate_reader");
  citiesStore = registerFolderStore(engine.dataDir, org, "Cities", work);
  const registered = registerPostgresStore(engine.dataDir, org, "World in PostGIS", db.uri());
  expect(registered.printed).not.toContain(db.reader.password);
  pgStore = registered.datastoreId;
  pgPublished = await publishAll(pgStore, "Pg");
  expect(pgPublished).toMatchObject({ status: "completed", result: { published: 7 } });
  expect(await publishAll(citiesStore, "Cities")).toMatchObject({ status: "completed", result: { published: 1 } });
}, 120_000);

afterAll(async () => {
  await engine?.stop();
  await db?.stop();
  // The GeoPackage, the GDAL copies and the secrets folder this file made (a run left them behind).
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("registration", () => {
  it("keeps the password in the store's secret only: not in the store, its item, the list or the log", async () => {
    const secrets = join(engine.dataDir, "datastore-secrets");
    const file = join(secrets, `${pgStore}.json`);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      password: db.reader.password,
      for: { host: "127.0.0.1", port: db.port, database: db.database, user: db.reader.user },
    });
    const listed = adminCommand(engine.dataDir, ["list"]);
    expect(listed).toMatch(/"host": ?"127\.0\.0\.1"/);
    expect(listed).not.toContain(db.reader.password);
    const item = await get(`${rest()}/content/items/${pgStore}?f=json&token=${token}`);
    expect(JSON.stringify(item)).not.toContain(db.reader.password);
    expect(engine.lines.join("\n")).not.toContain(db.reader.password);
    expect(readdirSync(secrets)).toEqual([`${pgStore}.json`]);
  });

  it("takes ArcGIS's connection string form too", async () => {
    // The form has no escaping: its password cannot hold ';' (a libpq URI's can, %-escaped).
    await db.admin.query("CREATE ROLE mapgate_gis LOGIN PASSWORD 'gis pass=1'");
    const arcgis = `SERVER=127.0.0.1;INSTANCE=sde:postgresql:127.0.0.1,${db.port};DBCLIENT=postgresql;DATABASE=${db.database};USER=mapgate_gis;PASSWORD=gis pass=1;AUTHENTICATION_MODE=DBMS;SSLMODE=disable`;
    const out = adminCommand(
      engine.dataDir,
      [
        "register-datastore",
        ...["--portal", org.portalId, "--title", "ArcGIS form", "--owner", "publisher", "--server", org.serverId],
        ...["--postgres", "-"],
      ],
      { MAPGATE_POSTGRES: arcgis },
    );
    expect(JSON.parse(out)).toMatchObject({
      kind: "database",
      connection: { host: "127.0.0.1", port: db.port, database: "gis", user: "mapgate_gis", sslmode: "disable" },
    });
    expect(out).not.toContain("gis pass=1");
  });

  it("refuses a wrong password, a database without PostGIS and a black-holed host, clearly and in seconds", async () => {
    const register = (uri: string) => {
      try {
        adminCommand(
          engine.dataDir,
          [
            "register-datastore",
            ...["--portal", org.portalId, "--title", "Bad", "--owner", "publisher", "--server", org.serverId],
            ...["--postgres", "-"],
          ],
          { MAPGATE_POSTGRES: uri },
        );
        return "registered";
      } catch (err) {
        return String((err as { stderr?: string }).stderr);
      }
    };
    const wrong = register(db.uri(db.reader.user, "not-the-password"));
    expect(wrong).toContain("refused the login");
    expect(wrong).not.toContain("not-the-password");
    expect(register(db.uri().replace(`/${db.database}?`, "/postgres?"))).toContain("PostGIS is not installed");
    const hole = await blackHole();
    try {
      const started = Date.now();
      const answer = register(`postgresql://u:secret-pw@127.0.0.1:${hole.port}/gis?sslmode=disable`);
      expect(answer).toContain("cannot be reached");
      expect(answer).not.toContain("secret-pw");
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      await hole.close();
    }
    expect(register("postgresql://u:pw@127.0.0.1:5432/gis?application_name=x")).toContain("not supported");
    // No secret was left behind by the refused registrations.
    expect(readdirSync(join(engine.dataDir, "datastore-secrets"))).toHaveLength(2);
  }, 60_000);
});

describe("describe", () => {
  it("lists the database's tables as schema.table, each with its type, and why one cannot be published", async () => {
    const described = await job("describe", {
      datastoreId: pgStore,
      serverId: org.serverId,
      path: "/",
      type: "datastore",
    });
    expect(described.status).toBe("completed");
    const children = (described.result as { children: Record<string, unknown>[] }).children;
    const byName = new Map(children.map((c) => [c.name, c]));
    expect(byName.get("public.places")).toMatchObject({ type: "featureClass", path: "/public.places" });
    expect(byName.get("public.attribution")).toMatchObject({ type: "table" });
    expect(String(byName.get("public.nokey")?.unpublishable)).toContain("primary key");
    expect(byName.has("public.spatial_ref_sys")).toBe(false);
    expect(byName.get("public.san_places")).toMatchObject({
      name: "public.san_places",
      type: "featureClass",
      path: "/public.san_places",
    });
    expect(String(byName.get("public.place_names")?.unpublishable)).toContain("one for one");
    expect(String(byName.get("public.renamed")?.unpublishable)).toContain("primary key");
  });
});

describe("publishLayers", () => {
  it("names each table it did not publish, and why, in the job's messages and on its page", async () => {
    const noKey = "The table has no single-column integer primary key to serve as object ids.";
    expect(pgPublished).toMatchObject({
      status: "completed",
      result: { published: 7, alreadyPublished: 0, layers: 7, skipped: 3 },
    });
    expect(pgPublished.messages).toEqual([
      { type: "warning", message: `Dataset '/public.nokey' was not published: ${noKey}` },
      {
        type: "warning",
        message: expect.stringMatching(/^Dataset '\/public\.place_names' was not published: .*one for one/),
      },
      {
        type: "warning",
        message: expect.stringMatching(/^Dataset '\/public\.renamed' was not published: .*primary key/),
      },
    ]);
    const id = String(pgPublished.id);
    const html = await call(
      `${rest()}/portals/self/jobs/${id}?f=html&token=${token}&key=${encodeURIComponent(jobKeys.get(id) ?? "")}`,
      { ca: engine.ca },
    );
    expect(html.text).toContain("<h2>Not published</h2>");
    expect(html.text).toContain(`<li>Dataset &#39;/public.nokey&#39; was not published: ${noKey}</li>`);
    expect(html.text).toContain("/public.place_names");
    // A second run publishes nothing new and says the same.
    const again = await publishAll(pgStore, "Pg");
    expect(again).toMatchObject({ result: { published: 0, alreadyPublished: 7, skipped: 3 } });
    expect(again.messages).toEqual(pgPublished.messages);
  });
});

/** Numbers equal to 9 significant digits (statistics summed in another order), extents to 1e-4 degrees. */
function close(a: unknown, b: unknown, path = "", tolerance = 1e-9): string | undefined {
  if (typeof a === "number" && typeof b === "number") {
    return Math.abs(a - b) <= tolerance * Math.max(1, Math.abs(a), Math.abs(b)) ? undefined : `${path}: ${a} ≠ ${b}`;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${path}: length ${a.length} ≠ ${b.length}`;
    for (let i = 0; i < a.length; i++) {
      const d = close(a[i], b[i], `${path}[${i}]`, tolerance);
      if (d) return d;
    }
    return undefined;
  }
  if (a && b && typeof a === "object" && typeof b === "object") {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    if (ka.join() !== kb.join()) return `${path}: keys ${ka.join()} ≠ ${kb.join()}`;
    for (const k of ka) {
      const d = close(
        (a as Record<string, unknown>)[k],
        (b as Record<string, unknown>)[k],
        `${path}.${k}`,
        // A GeoPackage's R*Tree keeps boxes as 32-bit floats, rounded outwards.
        /^(xmin|ymin|xmax|ymax|bbox)$/.test(k) ? 1e-6 : tolerance,
      );
      if (d) return d;
    }
    return undefined;
  }
  return a === b ? undefined : `${path}: ${JSON.stringify(a)} ≠ ${JSON.stringify(b)}`;
}

const polygon = (ring: number[][], wkid = 4326) => JSON.stringify({ rings: [ring], spatialReference: { wkid } });
const PLACES: Record<string, string>[] = [
  { where: "country = 'IS'", outFields: "*" },
  { where: "country IN ('IS', 'FO') AND lat > 64", outFields: "name,lat", returnGeometry: "false" },
  { where: "name LIKE 'Reyk%' OR name LIKE '%fjörður'", outFields: "*", orderByFields: "name DESC" },
  { where: "UPPER(name) LIKE 'A%' AND CHAR_LENGTH(name) BETWEEN 3 AND 5", returnCountOnly: "true" },
  { where: "country = 'IS'", resultOffset: "10", resultRecordCount: "5", outFields: "fid,name" },
  { where: "country = 'LU'", outSR: "3857", geometryPrecision: "2", outFields: "name" },
  { objectIds: "1,2,3,500,100000,999999999", outFields: "*" },
  {
    geometry: "-25,63,-13,67",
    geometryType: "esriGeometryEnvelope",
    inSR: "4326",
    spatialRel: "esriSpatialRelIntersects",
    outFields: "fid,name",
    orderByFields: "name DESC, fid",
    resultRecordCount: "100",
  },
  {
    geometry: polygon(
      [
        [-2450000, 9300000],
        [-2450000, 9800000],
        [-1450000, 9800000],
        [-2450000, 9300000],
      ],
      3857,
    ),
    geometryType: "esriGeometryPolygon",
    spatialRel: "esriSpatialRelContains",
    returnIdsOnly: "true",
  },
  { where: "country = 'IS'", returnExtentOnly: "true", returnCountOnly: "true" },
  {
    where: "country LIKE 'A%'",
    outStatistics: JSON.stringify([
      { statisticType: "count", onStatisticField: "fid", outStatisticFieldName: "n" },
      { statisticType: "avg", onStatisticField: "lat", outStatisticFieldName: "mean_lat" },
      { statisticType: "min", onStatisticField: "name", outStatisticFieldName: "first" },
      { statisticType: "max", onStatisticField: "lng", outStatisticFieldName: "east" },
      { statisticType: "stddev", onStatisticField: "lat", outStatisticFieldName: "sd" },
    ]),
    groupByFieldsForStatistics: "country",
    having: "COUNT(fid) > 100",
    orderByFields: "n DESC",
  },
  { where: "country LIKE 'B%'", outFields: "country", returnDistinctValues: "true", orderByFields: "country" },
  { where: "admin1 IS NULL AND country = 'US'", returnCountOnly: "true" },
];
const COUNTRIES: Record<string, string>[] = [
  // Many points at once (PostGIS probes its index point by point), and a line crossing borders.
  {
    geometry: JSON.stringify({
      points: [
        [2.35, 48.85],
        [13.4, 52.5],
        [-3.7, 40.4],
        [0, -60],
      ],
    }),
    geometryType: "esriGeometryMultipoint",
    outFields: "name",
  },
  {
    geometry: JSON.stringify({
      paths: [
        [
          [2, 45],
          [10, 50],
          [16, 50],
        ],
      ],
    }),
    geometryType: "esriGeometryPolyline",
    spatialRel: "esriSpatialRelCrosses",
    outFields: "name",
    orderByFields: "name",
  },
  {
    geometry: "-25,63,-13,67",
    geometryType: "esriGeometryEnvelope",
    spatialRel: "esriSpatialRelEnvelopeIntersects",
    outFields: "name",
  },
  { geometry: "2.35,48.85", geometryType: "esriGeometryPoint", spatialRel: "esriSpatialRelIntersects", outFields: "*" },
  { where: "name = 'Iceland'", maxAllowableOffset: "0.1", outFields: "name" },
  { where: "iso_n3 < '100'", orderByFields: "iso_n3", returnGeometry: "false", outFields: "*" },
];
const CITIES: Record<string, string>[] = [
  { where: "founded > timestamp '2000-01-01 00:00:00'", outFields: "*" },
  { where: "day = date '2001-03-04'", outFields: "fid,name,day" },
  { where: "EXTRACT(YEAR FROM founded) = 2001", outFields: "name" },
  { where: "name LIKE '%!%%' ESCAPE '!'", outFields: "name" },
  { where: "COALESCE(pop, -1) < 0", outFields: "*" },
  { where: "ROUND(area, 0) = 105 OR ABS(pop - 500000) < 100000", outFields: "name" },
  { where: "TRIM(name) = 'Nice' OR LOWER(name) = 'paris'", outFields: "name" },
  { where: "SUBSTRING(name FROM 1 FOR 3) = 'Lil'", outFields: "name" },
  { where: "CAST(pop AS VARCHAR(10)) LIKE '2%'", outFields: "name,pop" },
  { where: "pop / 0 IS NULL", returnCountOnly: "true" },
  { where: "kind IS NULL OR NOT (pop > 100000)", outFields: "fid", orderByFields: "founded DESC" },
  { where: "name LIKE 'p%'", outFields: "name" },
  { where: "area * 2 + 1 > 100 AND pop <> 0", outFields: "name,area" },
  {
    outStatistics: JSON.stringify([
      { statisticType: "var", onStatisticField: "area", outStatisticFieldName: "v" },
      { statisticType: "sum", onStatisticField: "pop", outStatisticFieldName: "total" },
      { statisticType: "max", onStatisticField: "founded", outStatisticFieldName: "latest" },
    ]),
    groupByFieldsForStatistics: "kind",
    orderByFields: "kind",
  },
  { outFields: "*", orderByFields: "day DESC, fid" },
  { where: "1=1", returnExtentOnly: "true", outSR: "102100" },
];

describe("the same answers from PostGIS as from a GeoPackage", () => {
  const cases: [string, Record<string, string>][] = [
    ...PLACES.map((p): [string, Record<string, string>] => ["places", p]),
    ...COUNTRIES.map((p): [string, Record<string, string>] => ["countries", p]),
    ...CITIES.map((p): [string, Record<string, string>] => ["cities", p]),
  ];

  it.each(cases)("%s %j", async (table, params) => {
    for (const f of ["json", "geojson"]) {
      const q = new URLSearchParams({ f, token, ...params }).toString();
      const [fromFile, fromDb] = await Promise.all([
        get(`${gpkgLayer(table)}/0/query?${q}`),
        get(`${pgLayer(table)}/0/query?${q}`),
      ]);
      expect(fromDb.error).toBeUndefined();
      if (f === "json" && "features" in fromDb) expect((fromDb.features as unknown[]).length).toBeGreaterThan(0);
      expect(close(fromFile, fromDb)).toBeUndefined();
    }
  });

  it("describes the layer alike: fields, object id, geometry, extent", async () => {
    for (const table of ["places", "cities", "attribution"]) {
      const [fromFile, fromDb] = await Promise.all([
        get(`${gpkgLayer(table)}/0?f=json&token=${token}`),
        get(`${pgLayer(table)}/0?f=json&token=${token}`),
      ]);
      expect(fromDb.name).toBe(`public.${table}`);
      for (const key of ["fields", "objectIdField", "geometryType", "type", "displayField", "hasZ"])
        expect(close(fromFile[key], fromDb[key], key)).toBeUndefined();
      if (fromFile.extent) expect(close(fromFile.extent, fromDb.extent, "extent")).toBeUndefined();
    }
  });

  it("PBF decodes to the same features from both", async () => {
    const q = new URLSearchParams({ f: "pbf", token, where: "country = 'IS'", outFields: "*" }).toString();
    const [a, b] = await Promise.all([
      call(`${gpkgLayer("places")}/0/query?${q}`, { ca: engine.ca }),
      call(`${pgLayer("places")}/0/query?${q}`, { ca: engine.ca }),
    ]);
    expect(b.status).toBe(200);
    expect(Buffer.compare(a.body, b.body)).toBe(0);
  });

  it("a bad where is a 400 on both; one whose value the database cannot convert is a 400 too", async () => {
    const bad = { where: "nosuch = 1" };
    const q = new URLSearchParams({ f: "json", token, ...bad }).toString();
    expect(await get(`${pgLayer("places")}/0/query?${q}`)).toMatchObject({ error: { code: 400 } });
    const conversion = new URLSearchParams({ f: "json", token, where: "CAST(name AS INTEGER) = 1" }).toString();
    const answer = await get(`${pgLayer("places")}/0/query?${conversion}`);
    expect(answer).not.toMatchObject({ error: { code: 500 } });
  });
});

describe("clients read a PostGIS layer as they read any feature layer", () => {
  it.skipIf(!existsSync("/usr/bin/ogr2ogr"))(
    "GDAL copies a whole layer through its paging, and counts with -where, equal to the database",
    async () => {
      const out = join(work, "gdal");
      mkdirSync(out, { recursive: true });
      const url = `${pgLayer("countries")}/0/query?where=1%3D1&outFields=*&f=json&resultRecordCount=50&token=${token}`;
      const env = { ...process.env, CURL_CA_BUNDLE: engine.ready.cert, GDAL_HTTP_TIMEOUT: "30" };
      execFileSync("ogr2ogr", ["-f", "GeoJSON", join(out, "countries.geojson"), url], { env, stdio: "pipe" });
      const copied = JSON.parse(readFileSync(join(out, "countries.geojson"), "utf8")) as {
        features: { properties: { fid: number; name: string } }[];
      };
      const rows = (await db.admin.query("SELECT fid, name FROM public.countries ORDER BY fid")).rows;
      expect(copied.features.map((f) => ({ fid: f.properties.fid, name: f.properties.name }))).toEqual(rows);
      const info = spawnSync("ogrinfo", ["-ro", "-al", "-so", "-where", "name LIKE 'F%'", url], {
        env,
        encoding: "utf8",
      });
      const { n } = (await db.admin.query("SELECT count(*)::int AS n FROM public.countries WHERE name LIKE 'F%'"))
        .rows[0] as { n: number };
      expect(info.stdout).toContain(`Feature Count: ${n}`);
    },
  );

  it("ArcGIS REST JS: getLayer, then queryAllFeatures through its pages to the table's whole set", async () => {
    // Shared with everyone and read over the plain-HTTP listener, as a web app would (a token over plain HTTP is
    // refused, and this process does not trust the engine's certificate).
    const { serviceItemId } = await get(`${pgLayer("places")}?f=json&token=${token}`);
    expect(await share(engine, token, String(serviceItemId), { everyone: "true" })).toMatchObject({
      notSharedWith: [],
    });
    const url = `${pgLayer("places")}/0`.replace(engine.ready.https, engine.ready.http);
    const layer = await getLayer({ url });
    expect(layer).toMatchObject({ name: "public.places", objectIdField: "fid", type: "Feature Layer" });
    const all = await queryAllFeatures({ url, where: "country = 'FR'", outFields: ["fid"] });
    const ids = (all as { features: { attributes: { fid: number } }[] }).features.map((f) => f.attributes.fid);
    const rows = (await db.admin.query("SELECT fid FROM public.places WHERE country = 'FR' ORDER BY fid")).rows;
    expect(rows.length).toBeGreaterThan(Number(layer.maxRecordCount));
    expect(ids.sort((a, b) => a - b)).toEqual(rows.map((r: { fid: number }) => r.fid));
  });
});

describe("what only PostgreSQL has", () => {
  it("answers microsecond timestamps in whole epoch milliseconds: json, geojson, pbf, where and statistics", async () => {
    const layer = `${pgLayer("moments")}/0`;
    // Rounded half away from zero, as GeoPackage dates are.
    const at = [Date.UTC(2024, 2, 5, 12, 34, 56, 790), Date.UTC(2001, 8, 9, 1, 46, 40, 1)];
    const local = [Date.UTC(2024, 2, 5, 12, 34, 56, 123), Date.UTC(2001, 8, 9, 1, 46, 40, 2)];
    const day = [Date.UTC(2024, 2, 5), Date.UTC(2001, 8, 9)];
    const expected = [0, 1].map((i) => ({ id: i + 1, at: at[i], local: local[i], day: day[i] }));
    const query = (params: Record<string, string>) =>
      `${layer}/query?${new URLSearchParams({ token, outFields: "*", orderByFields: "id", ...params }).toString()}`;
    const json = await get(query({ f: "json" }));
    expect((json.features as { attributes: unknown }[]).map((f) => f.attributes)).toEqual(expected);
    const geojson = await get(query({ f: "geojson" }));
    expect((geojson.features as { properties: unknown }[]).map((f) => f.properties)).toEqual(expected);
    const pbf = await call(query({ f: "pbf" }), { ca: engine.ca });
    const decoded = decodeArcgisPbf(new Uint8Array(pbf.body)) as unknown as {
      featureCollection: { features: { properties: Record<string, unknown> }[] };
    };
    expect(decoded.featureCollection.features.map((f) => f.properties)).toEqual(expected);
    // A date a client was answered finds its row again.
    const found = await get(
      query({
        f: "json",
        where: "at = timestamp '2024-03-05 12:34:56.790' OR local = timestamp '2001-09-09 01:46:40.002'",
        outFields: "id",
      }),
    );
    expect(found).toMatchObject({ features: [{ attributes: { id: 1 } }, { attributes: { id: 2 } }] });
    const stats = await get(
      query({
        f: "json",
        outFields: "",
        orderByFields: "",
        outStatistics: JSON.stringify([
          { statisticType: "min", onStatisticField: "at", outStatisticFieldName: "first" },
          { statisticType: "max", onStatisticField: "local", outStatisticFieldName: "last" },
        ]),
      }),
    );
    expect((stats.features as { attributes: unknown }[])[0]?.attributes).toEqual({ first: at[1], last: local[0] });
  });

  it("serves a boolean as a SmallInteger, a uuid as a GUID and JSON as text, in answers, where, order and statistics", async () => {
    const layer = `${pgLayer("kinds")}/0`;
    const fields = ((await get(`${layer}?f=json&token=${token}`)).fields as { name: string; type: string }[]).map(
      (f) => [f.name, f.type],
    );
    expect(fields).toEqual([
      ["id", "esriFieldTypeOID"],
      ["flag", "esriFieldTypeSmallInteger"],
      ["tag", "esriFieldTypeGUID"],
      ["meta", "esriFieldTypeString"],
    ]);
    const query = async (params: Record<string, string>) =>
      get(`${layer}/query?${new URLSearchParams({ f: "json", token, outFields: "*", ...params }).toString()}`);
    const rows = (answer: Record<string, unknown>) =>
      (expect(answer.error).toBeUndefined(), answer.features as { attributes: Record<string, unknown> }[]).map(
        (f) => f.attributes,
      );
    expect(rows(await query({ where: "1=1" }))).toEqual([
      { id: 1, flag: 1, tag: "{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}", meta: '{"a": 1}' },
      { id: 2, flag: 0, tag: "{00000000-0000-0000-0000-00000000BEEF}", meta: "[1, 2]" },
      { id: 3, flag: null, tag: null, meta: null },
    ]);
    expect(rows(await query({ where: "flag = 1", outFields: "id" }))).toEqual([{ id: 1 }]);
    expect(rows(await query({ where: "tag = '{00000000-0000-0000-0000-00000000BEEF}'", outFields: "id" }))).toEqual([
      { id: 2 },
    ]);
    expect(rows(await query({ where: "meta LIKE '[%'", outFields: "id" }))).toEqual([{ id: 2 }]);
    expect(rows(await query({ where: "flag IS NOT NULL", outFields: "id", orderByFields: "flag" }))).toEqual([
      { id: 2 },
      { id: 1 },
    ]);
    const stats = await query({
      outStatistics: JSON.stringify([{ statisticType: "sum", onStatisticField: "flag", outStatisticFieldName: "n" }]),
    });
    expect(rows(stats)).toEqual([{ n: 1 }]);
  });

  it("publishes a view that keeps its table's rows one for one, its key the table's, renamed or not", async () => {
    const layer = `${pgLayer("san_places")}/0`;
    const json = await get(`${layer}?f=json&token=${token}`);
    expect(json).toMatchObject({ objectIdField: "place_id", geometryType: "esriGeometryPoint" });
    const expected = await db.admin.query(
      "SELECT fid AS place_id, name FROM public.places WHERE name LIKE 'San %' AND country = 'ES' " +
        "AND ST_Intersects(geom, ST_MakeEnvelope(-10, 35, 5, 44, 4326)) ORDER BY fid",
    );
    const params = { where: "country = 'ES'", outFields: "place_id,name", geometry: "-10,35,5,44" };
    const answer = await get(`${layer}/query?${new URLSearchParams({ f: "json", token, ...params }).toString()}`);
    const got = (answer.features as { attributes: Record<string, unknown> }[]).map((f) => f.attributes);
    expect(got.length).toBeGreaterThan(10);
    expect(got).toEqual(expected.rows);
  });
});

describe("when the database fails", () => {
  const count = async () => get(`${pgLayer("cities")}/0/query?f=json&where=1%3D1&returnCountOnly=true&token=${token}`);

  it("a refused login answers 'unavailable'; the secret read again once the password is rotated", async () => {
    expect(await count()).toEqual({ count: cities.length });
    const next = `rotated-${Math.random().toString(36).slice(2)}`;
    await db.admin.query(`ALTER ROLE mapgate_reader PASSWORD '${next}'`);
    await db.admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'mapgate_reader'");
    // The pooled connections the server ended are replaced at once; the new ones are refused.
    const refused = await count();
    expect(refused).toMatchObject({ error: { code: 500, details: ["The layer's data source is unavailable."] } });
    // The engine's log arrives through a pipe: give it a moment.
    for (let i = 0; i < 40 && !engine.lines.join("\n").includes("refused the login"); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(engine.lines.join("\n")).toContain("refused the login");
    // What refreshing the data store does with a new password (the portal's operation), here by hand.
    writeFileSync(join(engine.dataDir, "datastore-secrets", `${pgStore}.json`), JSON.stringify({ password: next }));
    expect(await count()).toEqual({ count: cities.length });
    expect(engine.lines.join("\n")).not.toContain(next);
  });

  it("a database that is down answers 'unavailable' in seconds while the rest of mapgate answers; then recovers", async () => {
    await db.halt();
    try {
      const started = Date.now();
      expect(await count()).toMatchObject({ error: { code: 500 } });
      expect(Date.now() - started).toBeLessThan(10_000);
      // The warning names the layer (its service, id and table), never the connection.
      const warned = () => engine.lines.find((l) => l.includes('"message":"feature layer unavailable"'));
      for (let i = 0; i < 40 && !warned(); i++) await new Promise((r) => setTimeout(r, 50));
      expect(JSON.parse(warned() ?? "{}")).toMatchObject({
        layer: `${pgLayer("cities").replace(/^.*\/services\//, "")}/0 (public.cities)`,
      });
      expect(warned()).not.toContain(db.reader.password);
      // The layer still describes itself (as it was when last read), so clients list it.
      expect(await get(`${pgLayer("cities")}/0?f=json&token=${token}`)).toMatchObject({
        name: "public.cities",
        objectIdField: "fid",
      });
      expect(await get(`${pgLayer("cities")}?f=json&token=${token}`)).toMatchObject({
        layers: [{ id: 0, name: "public.cities" }],
      });
      expect(await get(`${engine.ready.https}/arcgis/rest/services/Pg?f=json&token=${token}`)).toMatchObject({
        services: expect.arrayContaining([expect.objectContaining({ type: "FeatureServer" })]),
      });
      expect(
        await get(`${gpkgLayer("cities")}/0/query?f=json&where=1%3D1&returnCountOnly=true&token=${token}`),
      ).toEqual({ count: cities.length });
    } finally {
      await db.restart();
    }
    let answer: Record<string, unknown> = {};
    for (let i = 0; i < 20 && answer.count === undefined; i++) {
      answer = await count();
      if (answer.count === undefined) await new Promise((r) => setTimeout(r, 250));
    }
    expect(answer).toEqual({ count: cities.length });
  }, 60_000);
});

describe("the sessions mapgate opens", () => {
  /** A pool of this process, as a warm function holds one, with its secret in a folder of the test's own. */
  async function database(user: string, password: string) {
    process.env.DATASTORE_SECRETS_DIR = join(work, "secrets");
    const { writeDataStorePassword } = await import("#shared/stores/datastore-secrets.ts");
    const { postGisAt } = await import("#shared/features/postgis.ts");
    const id = "0123456789abcdef0123456789abcdef";
    const connection = { host: "127.0.0.1", port: db.port, database: db.database, user, sslmode: "disable" } as const;
    await writeDataStorePassword(id, password, connection);
    return postGisAt(id, connection);
  }

  it("are read-only, even for a login that may write; and every statement ends at its timeout", async () => {
    const { QueryTimeoutError } = await import("#shared/features/errors.ts");
    const session = await database(db.superuser.user, db.superuser.password);
    await expect(session.all("CREATE TABLE public.written (a integer)", [])).rejects.toThrow(/read-only/);
    await expect(session.all("UPDATE public.cities SET pop = 0", [])).rejects.toThrow(/read-only/);
    expect((await db.admin.query("SELECT count(*)::int AS n FROM public.cities WHERE pop = 0")).rows[0]?.n).toBe(1);
    const started = Date.now();
    await expect(session.all("SELECT pg_sleep(30)", [])).rejects.toBeInstanceOf(QueryTimeoutError);
    expect(Date.now() - started).toBeLessThan(13_000);
    await session.close();
  }, 30_000);

  it("a server that stops answering mid-session: node-postgres' own read timeout is a timeout, as the statement's", async () => {
    const { QueryTimeoutError } = await import("#shared/features/errors.ts");
    // A login of its own: a pool of its own (the reader's password was rotated above).
    await db.admin.query("CREATE ROLE mapgate_stalled LOGIN PASSWORD 'stalled-pw'");
    const session = await database("mapgate_stalled", "stalled-pw");
    // The pool's one connection, idle: the next statement runs on it. Its server process is stopped (a real
    // server that no longer answers; its statement_timeout cannot fire), so only the client's timeout ends it.
    const pid = Number((await session.all("SELECT pg_backend_pid()", []))[0]?.[0]);
    process.kill(pid, "SIGSTOP");
    try {
      const started = Date.now();
      await expect(session.all("SELECT 1", [])).rejects.toBeInstanceOf(QueryTimeoutError);
      // query_timeout: the statement's 10 s and 2 s more.
      expect(Date.now() - started).toBeGreaterThanOrEqual(11_000);
    } finally {
      process.kill(pid, "SIGCONT");
      await db.admin.query("SELECT pg_terminate_backend($1)", [pid]);
      await session.close();
    }
  }, 40_000);
});
