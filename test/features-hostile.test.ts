// A feature layer's `query` under hostile input, through the real engine over HTTP (GET query strings and POST
// form bodies): SQL injection, quotes, unicode, deep nesting, huge numbers and inputs near and past the caps in
// `where`, `geometry` (with geometryType, inSR, spatialRel, distance), `orderByFields`, `outStatistics` (with
// groupByFieldsForStatistics and having), `objectIds` and the output and paging parameters; then a seeded fuzz
// that builds those parameters from their grammar and mutates them (MAPGATE_FUZZ_SEED replays a run; the seed is
// in the test's name). Every answer is a valid one or the 400 envelope naming a parameter that was sent, never a
// 500; none holds SQL, a path of this machine or a stack frame; each comes within a bound; the engine answers
// afterwards and logs no fault; and the source is unchanged (its row counts and checksums before and after).
// Two targets run the same cases: the demo GeoPackage in its folder store, and the same tables copied into a
// throwaway PostgreSQL + PostGIS cluster on loopback, registered with a read-only login (what it holds is
// snapshotted as row counts and digests of every row, and the schema's definition).
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { Agent, request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_GEOPACKAGE_PATH, DEMO_LAYERS_FOLDER } from "#infra/admin/demo.ts";
import { MAX_QUERY_VERTICES } from "#shared/features/geometry/esri-json.ts";
import { MAX_GEOMETRY_LENGTH, MAX_OBJECT_IDS, MAX_OUT_STATISTICS } from "#shared/features/plan.ts";
import { MAX_WHERE_DEPTH, MAX_WHERE_LENGTH } from "#shared/features/where.ts";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization, registerPostgresStore } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form, jsonCalls } from "./helpers/http.ts";
import { copyGeoPackageTable, type Postgres, startPostgres } from "./helpers/postgres.ts";
import { share, waitForJob } from "./helpers/publish.ts";
import { prng } from "./helpers/prng.ts";

/** Requests in flight at once: enough to keep the engine busy, few enough that latency stays its own. */
const CONCURRENCY = 4;
/** Past this an answer counts as a hang: above the query's own deadline, so a slow query is not one. */
const ANSWER_WITHIN_MS = 15_000;
/**
 * Generated cases per target, beside the catalogue: two targets share the suite's time (MAPGATE_FUZZ_CASES runs
 * more, with MAPGATE_FUZZ_SEED another draw).
 */
const GENERATED = Number(process.env.MAPGATE_FUZZ_CASES ?? 500);
/** The body cap the engine is started with (its highest), so that each parameter's own cap is what refuses. */
const MAX_BODY_BYTES = 4_400_000;
/** Past this a GET is sent as a POST: Node's request line and headers are bounded (16 KiB), as API Gateway's are. */
const MAX_GET_CHARS = 8_000;
const SEED = Number(process.env.MAPGATE_FUZZ_SEED ?? 20_260_521);

let engine: RunningEngine;
let db: Postgres | undefined;
// A connection each: the engine closes an idle kept-alive socket while a heavy query holds it, and the next request
// written on that socket would be reset.
const agent = new Agent({ keepAlive: false, maxSockets: CONCURRENCY });

beforeAll(async () => {
  engine = await startEngine({ env: { MAX_BODY_BYTES: String(MAX_BODY_BYTES) } });
});
afterAll(async () => {
  agent.destroy();
  await engine?.stop();
  await db?.stop();
});

// ---------------------------------------------------------------------------------------------------------------
// Targets: a data source, its layers, and what it holds.

/** What a source holds, as counts and checksums that any change to it would move. */
type Snapshot = Readonly<Record<string, string | number>>;

interface FuzzTarget {
  /**
   * The URLs (…/FeatureServer/0) of the demo world's layers as the source serves them: places (many points),
   * countries (polygons) and attribution (a table). The catalogue's texts name their fields (fid, name, country,
   * lat…); the generated cases read the fields from each layer's JSON.
   */
  readonly layers: { readonly points: string; readonly polygons: string; readonly table: string };
  snapshot(): Snapshot | Promise<Snapshot>;
  /** Text no answer may hold: where the source lies. */
  readonly secrets: readonly string[];
}

const sha256 = (data: string | Uint8Array) => createHash("sha256").update(data).digest("hex");

/** The file's bytes, its schema, and every table's row count and ordered contents. */
function geoPackageSnapshot(file: string): Snapshot {
  const out: Record<string, string | number> = { "file sha256": sha256(readFileSync(file)) };
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const master = db.prepare("SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY type, name").all();
    out["schema sha256"] = sha256(JSON.stringify(master));
    for (const { name } of master.filter((m) => m.type === "table") as { name: string }[]) {
      const statement = db.prepare(`SELECT * FROM "${name.replaceAll('"', '""')}" ORDER BY rowid`);
      statement.setReturnArrays(true);
      const hash = createHash("sha256");
      let rows = 0;
      for (const row of statement.iterate() as Iterable<unknown[]>) {
        rows++;
        for (const v of row) {
          hash.update(v instanceof Uint8Array ? `blob:${v.length}:` : `${typeof v}:${String(v)}|`);
          if (v instanceof Uint8Array) hash.update(v);
        }
        hash.update("\n");
      }
      out[`${name} rows`] = rows;
      out[`${name} sha256`] = hash.digest("hex");
    }
  } finally {
    db.close();
  }
  return out;
}

/** The demo GeoPackage in its folder store: countries (polygons), places (171k points), attribution (a table). */
function geoPackageTarget(): FuzzTarget {
  const { worldStore } = demoOrganization(engine.dataDir);
  const file = join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH);
  const layer = (table: string) => {
    const service = `${table}_${stableItemId(worldStore, `/world.gpkg/${table}`).slice(0, 6)}`;
    return `${engine.ready.http}/arcgis/rest/services/${DEMO_LAYERS_FOLDER}/${service}/FeatureServer/0`;
  };
  return {
    layers: { points: layer("places"), polygons: layer("countries"), table: layer("attribution") },
    snapshot: () => geoPackageSnapshot(file),
    secrets: [engine.dataDir, file],
  };
}

const WORLD_TABLES = ["places", "countries", "attribution"] as const;

/** Each table's row count and the digest of its rows in key order, and the digest of the schema's definition. */
async function postgisSnapshot(client: Postgres["admin"]): Promise<Snapshot> {
  const out: Record<string, string | number> = {};
  const schema = await client.query(
    "SELECT c.relname, c.relkind, a.attname, format_type(a.atttypid, a.atttypmod) AS type FROM pg_class c " +
      "JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_attribute a ON a.attrelid = c.oid " +
      "WHERE n.nspname = 'public' AND a.attnum > 0 ORDER BY 1, 3",
  );
  out["schema sha256"] = sha256(JSON.stringify(schema.rows));
  for (const table of WORLD_TABLES) {
    const { rows } = await client.query(
      `SELECT count(*)::int AS n, md5(string_agg(t::text, '|' ORDER BY t.fid)) AS digest FROM public.${table} t`,
    );
    out[`${table} rows`] = Number(rows[0]?.n);
    out[`${table} md5`] = String(rows[0]?.digest);
  }
  return out;
}

/**
 * The same demo world copied into a throwaway PostgreSQL + PostGIS cluster on loopback, registered by the operator
 * command with a read-only login, bulk-published into a folder of its own and shared with everyone (the fuzz
 * calls anonymously, as it does the GeoPackage's public layers).
 */
async function postgisTarget(): Promise<FuzzTarget> {
  const started = await startPostgres();
  db = started;
  const file = join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH);
  for (const table of WORLD_TABLES) await copyGeoPackageTable(file, table, started.admin);
  await started.admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${started.reader.user}`);
  const org = demoOrganization(engine.dataDir);
  const { datastoreId } = registerPostgresStore(engine.dataDir, org, "World in PostGIS", started.uri());
  const rest = `${engine.ready.https}/portal/sharing/rest`;
  const post = (url: string, fields: Record<string, string>) =>
    call(url, { ca: engine.ca, body: form({ f: "json", ...fields }) }).then((r) => r.json<Record<string, unknown>>());
  const token = String(
    (await post(`${rest}/generateToken`, { username: "publisher", password: PASSWORDS.publisher })).token,
  );
  const job = await post(`${rest}/portals/self/datastores/allDatasets/publishLayers`, {
    token,
    datastoreId,
    serverId: org.serverId,
    serverFolder: "PgFuzz",
  });
  await waitForJob(engine, token, String(job.jobId), String(job.key));
  const layer = (table: string) =>
    `${engine.ready.http}/arcgis/rest/services/PgFuzz/public_${table}_${stableItemId(datastoreId, `/public.${table}`).slice(0, 6)}/FeatureServer/0`;
  for (const table of WORLD_TABLES) {
    const server = layer(table).replace(/\/0$/, "");
    const service = (await call(`${server}?f=json&token=${token}`, { ca: engine.ca })).json<{
      serviceItemId: string;
    }>();
    expect(await share(engine, token, service.serviceItemId, { everyone: "true" })).toMatchObject({
      notSharedWith: [],
    });
  }
  return {
    layers: { points: layer("places"), polygons: layer("countries"), table: layer("attribution") },
    snapshot: () => postgisSnapshot(started.admin),
    secrets: [engine.dataDir, started.reader.password, started.superuser.password, started.uri()],
  };
}

const TARGETS: readonly { readonly name: string; readonly open: () => FuzzTarget | Promise<FuzzTarget> }[] = [
  { name: "a GeoPackage in a folder store", open: geoPackageTarget },
  { name: "a PostGIS database", open: postgisTarget },
];

// ---------------------------------------------------------------------------------------------------------------
// HTTP.

interface Answer {
  readonly status: number;
  readonly type: string;
  readonly body: Buffer;
  readonly ms: number;
}

interface Case {
  readonly what: string;
  readonly layer: Layer;
  readonly method: "GET" | "POST";
  readonly params: Readonly<Record<string, string>>;
  /** Form-encoded text sent as it is instead of `params`: encodings no client library would make. */
  readonly raw?: string;
}

/** Form encoding escaping only what the form parser reads specially, so inputs near the caps fit in a body. */
const formBody = (params: Readonly<Record<string, string>>) =>
  Object.entries(params)
    .map(([k, v]) => `${k}=${v.replace(/[%&+=]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`)
    .join("&");

const wireText = (c: Case) =>
  c.raw ?? (c.method === "GET" ? new URLSearchParams(c.params).toString() : formBody(c.params));

/** The parameters as the engine reads them (what an echo of the input in an answer may repeat). */
const sentValues = (c: Case): string[] => {
  const values = [...new URLSearchParams(wireText(c)).entries()].flat();
  return c.raw === undefined ? [...values, ...Object.entries(c.params).flat()] : values;
};

/** An answer, "timeout" past the bound, or the connection's error. */
type Outcome = Answer | "timeout" | Error;

function send(c: Case): Promise<Outcome> {
  const text = wireText(c);
  const url = new URL(`${c.layer.url}/query${c.method === "GET" ? `?${text}` : ""}`);
  const body = c.method === "POST" ? Buffer.from(text, "utf8") : undefined;
  const started = performance.now();
  return new Promise((resolve) => {
    const req = request(
      url,
      {
        method: c.method,
        agent,
        headers: body
          ? { "content-type": "application/x-www-form-urlencoded", "content-length": String(body.length) }
          : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            type: String(res.headers["content-type"] ?? ""),
            body: Buffer.concat(chunks),
            ms: performance.now() - started,
          });
        });
        res.on("error", resolve);
      },
    );
    const timer = setTimeout(() => {
      req.destroy();
      resolve("timeout");
    }, ANSWER_WITHIN_MS);
    req.on("error", (err) => {
      clearTimeout(timer);
      resolve(err);
    });
    req.end(body);
  });
}

// ---------------------------------------------------------------------------------------------------------------
// Layers, as their JSON describes them (so another source's layers are read the same way).

interface Layer {
  readonly url: string;
  readonly name: string;
  readonly oid: string;
  readonly numbers: readonly string[];
  readonly strings: readonly string[];
  readonly geometry: boolean;
  readonly rows: number;
}

// Plain HTTP: no certificate to trust.
const { getJson } = jsonCalls();

async function describeLayer(url: string): Promise<Layer> {
  const json = (await getJson(`${url}?f=json`)) as unknown as {
    name: string;
    objectIdField: string;
    geometryType?: string;
    fields: { name: string; type: string }[];
  };
  const numeric = /OID|Integer|Double|Single/;
  const count = (await getJson(`${url}/query?f=json&where=1%3D1&returnCountOnly=true`)).count;
  return {
    url,
    name: json.name,
    oid: json.objectIdField,
    numbers: json.fields.filter((f) => numeric.test(f.type)).map((f) => f.name),
    strings: json.fields.filter((f) => f.type === "esriFieldTypeString").map((f) => f.name),
    geometry: json.geometryType !== undefined,
    rows: Number(count),
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Judging an answer.

/** What no answer may hold unless the request itself wrote it: SQL, the reader's own names, faults, paths. */
const LEAKS: readonly RegExp[] = [
  /\bselect\b/gi,
  /\bsqlite\w*/gi,
  /\bmapgate_\w+/gi,
  /\brtree_\w*/gi,
  /\bgpkg_\w+/gi,
  /\bjson_each\b/gi,
  /\bno such (table|column|function)\b/gi,
  /\bsyntax error\b/gi,
  /\bERR_[A-Z_]+/g,
  /\b(Syntax|Type|Range|Reference|Internal|Sqlite)Error\b/g,
  /\bat \S+ \(.*:\d+:\d+\)/g,
  /\bat (file:|node:|\/)\S*/g,
  /file:\/\/\S*/g,
  /\S*\.[cm]?[jt]s:\d+/g,
  /Maximum call stack/gi,
  /Cannot (read|convert|destructure) (propert|undefined|null|object)\w*/g,
  /\/tmp\/\S*/g,
  /\S*\.gpkg\b/gi,
  // PostgreSQL's own words: its catalogue, PostGIS's functions, its error texts.
  /\bpg_\w+/gi,
  /\bst_\w+\(/gi,
  /\bpostg(res|is)\w*/gi,
  /\b(relation|column|function|operator) "?\S+"? does not exist\b/gi,
  /\binvalid input syntax\b/gi,
  /\bstatement timeout\b/gi,
];

/** Every string of a JSON text, keys included (the text is read once; answers are a page at most). */
function stringsOf(text: string): string[] {
  const out: string[] = [];
  JSON.parse(text, (key: string, value: unknown) => {
    out.push(key);
    if (typeof value === "string") out.push(value);
    return value;
  });
  return out;
}

function leaks(texts: readonly string[], sent: readonly string[], secrets: readonly string[]): string[] {
  const written = sent.join("\n").toLowerCase();
  const found: string[] = [];
  for (const text of texts) {
    for (const secret of secrets) if (text.includes(secret)) found.push(secret);
    for (const leak of LEAKS) {
      for (const m of text.matchAll(leak)) if (!written.includes(m[0].toLowerCase())) found.push(m[0]);
    }
  }
  return found;
}

interface Verdict {
  /** The histogram's key: the HTTP status and what the answer was. */
  readonly kind: string;
  /** The parameter a 400 named. */
  readonly refused?: string;
  readonly problems: readonly string[];
}

const REFUSED = /^'([^']+)' parameter is invalid$/;

const isCount = (v: unknown) => Number.isSafeInteger(v) && (v as number) >= 0;
/** Corners in order, or none at all (an empty result). */
const isBox = (xmin: unknown, ymin: unknown, xmax: unknown, ymax: unknown) =>
  [xmin, ymin, xmax, ymax].every((v) => v === null || v === undefined) ||
  (Number(xmin) <= Number(xmax) && Number(ymin) <= Number(ymax));

/** What no answer of any kind may say, whatever the data: the invariants of each kind of answer. */
function insane(c: Case, json: Record<string, unknown>): string[] {
  const out: string[] = [];
  if ("count" in json && !isCount(json.count)) out.push("a count that is no count");
  const e = json.extent as Record<string, unknown> | undefined;
  if (e !== undefined && !isBox(e.xmin, e.ymin, e.xmax, e.ymax)) out.push("an extent out of order");
  const bbox = json.bbox as unknown[] | undefined;
  if (bbox !== undefined && !(bbox.length === 4 && isBox(...(bbox as [unknown, unknown, unknown, unknown]))))
    out.push("a bbox out of order");
  if ("objectIds" in json && !(Array.isArray(json.objectIds) && json.objectIds.every(isCount)))
    out.push("object ids that are not ids");
  if ("features" in json) {
    const page = Number(c.params.resultRecordCount);
    const features = json.features as unknown[];
    if (!Array.isArray(features)) out.push("features that are no list");
    else if (Number.isSafeInteger(page) && page > 0 && features.length > page) out.push("a page past its size");
  }
  const kinds = ["features", "count", "objectIds", "extent", "bbox"].filter((k) => k in json);
  const emptyExtent = c.params.f === "geojson" && Object.keys(json).length === 0;
  if (kinds.length === 0 && !emptyExtent) out.push("an answer of no known kind");
  return out;
}

function judge(c: Case, a: Outcome, secrets: readonly string[]): Verdict {
  if (a === "timeout") return { kind: "timeout", problems: [`no answer within ${ANSWER_WITHIN_MS} ms`] };
  if (a instanceof Error) return { kind: "connection error", problems: [`connection error: ${a.message}`] };
  const problems: string[] = [];
  const sent = sentValues(c);
  if (a.status >= 500) problems.push(`HTTP ${a.status}`);
  // pjson is answered as text/plain, as ArcGIS does.
  const isJson = /json|javascript/.test(a.type) || (c.params.f === "pjson" && a.type.startsWith("text/plain"));
  if (!isJson) {
    // A PBF answer: bytes, with no JSON to read; what it may not hold is checked on its text all the same.
    if (a.status === 200 && a.type === "application/x-protobuf") {
      problems.push(...leaks([a.body.toString("latin1")], sent, secrets).map((l) => `leaks ${l}`));
      return { kind: "200 pbf", problems };
    }
    problems.push(`answered ${a.status} ${a.type}`);
    return { kind: `${a.status} ${a.type}`, problems };
  }
  const text = a.body.toString("utf8");
  let json: Record<string, unknown>;
  let strings: string[];
  try {
    json = JSON.parse(text) as Record<string, unknown>;
    strings = stringsOf(text);
  } catch {
    return { kind: `${a.status} not JSON`, problems: [...problems, `not JSON: ${text.slice(0, 120)}`] };
  }
  problems.push(...leaks(strings, sent, secrets).map((l) => `leaks ${JSON.stringify(l.slice(0, 80))}`));
  if (a.status !== 200) problems.push(`HTTP ${a.status}`);
  const error = json.error as { code?: unknown; message?: unknown; details?: unknown } | undefined;
  if (error === undefined) {
    problems.push(...insane(c, json).map((p) => `${p}: ${text.slice(0, 160)}`));
    return { kind: `${a.status} answer`, problems };
  }
  const details = Array.isArray(error.details) ? (error.details as unknown[]) : [];
  if (error.code === 413 && c.method === "POST" && Buffer.byteLength(wireText(c)) > MAX_BODY_BYTES)
    return { kind: `${a.status} error 413`, problems };
  if (error.code !== 400) problems.push(`error code ${String(error.code)}: ${JSON.stringify(error).slice(0, 300)}`);
  if (!details.every((d) => typeof d === "string")) problems.push("details that are not text");
  let refused: string | undefined;
  if (error.message === "Unable to complete operation.") {
    refused = REFUSED.exec(String(details[0]))?.[1];
    if (refused === undefined || !(refused in c.params || sent.includes(refused)))
      problems.push(`a refusal naming no parameter sent: ${JSON.stringify(details).slice(0, 200)}`);
  } else if (!["The answer is too large.", "Conflicting parameters."].includes(String(error.message))) {
    problems.push(`an unexpected refusal: ${JSON.stringify(error).slice(0, 200)}`);
  }
  return { kind: `${a.status} error ${String(error.code)}`, refused, problems };
}

// ---------------------------------------------------------------------------------------------------------------
// Inputs.

type Rng = ReturnType<typeof prng>;

const nest = (n: number, open: string, inner: string, close: string) => open.repeat(n) + inner + close.repeat(n);
const sqlText = (s: string) => `'${s.replaceAll("'", "''")}'`;

const INJECTIONS = [
  "1=1; DROP TABLE places",
  "1=1; DROP TABLE places --",
  "1=1;",
  "name = 'x'; DELETE FROM places; --",
  "' OR '1'='1",
  "name = '' OR '1'='1'",
  "name = 'x' OR 1=1 --",
  "name = 'x' OR 1=1 /* */",
  "name = 'x' /* comment */ OR 1=1",
  "1=1 -- trailing",
  "1=1 #",
  "/**/1=1",
  "1=1 UNION SELECT name, sql FROM sqlite_master",
  "1=1 UNION ALL SELECT * FROM places",
  "fid IN (SELECT fid FROM places)",
  "fid = (SELECT count(*) FROM sqlite_master)",
  "EXISTS (SELECT 1 FROM sqlite_master)",
  "(SELECT 1) = 1",
  "name IN (SELECT name FROM sqlite_master)",
  "1=1; ATTACH DATABASE '/tmp/evil.db' AS evil",
  "ATTACH DATABASE ':memory:' AS m",
  "load_extension('/tmp/evil.so') = 1",
  "load_extension('libc.so.6', 'system') IS NULL",
  "pg_sleep(10) IS NULL",
  "1 = (SELECT 1 FROM pg_sleep(10))",
  "name = 'a'; SELECT pg_sleep(10); --",
  "name = 'a' AND pg_sleep(10) IS NULL",
  "sqlite_version() = '3'",
  "randomblob(1000000000) IS NOT NULL",
  "zeroblob(1000000000) IS NULL",
  "name = 'x' COLLATE nocase",
  "name = 'x' || 'y'",
  "name GLOB '*'",
  "name REGEXP '.*'",
  "name MATCH 'x'",
  "fid = 1 ORDER BY 1",
  "fid = 1 LIMIT 1",
  "fid = 1 GROUP BY name",
  "1=1) OR (1=1",
  "1=1)) --",
  "rowid = 1",
  "_rowid_ = 1",
  "oid = 1",
  "sqlite_master.name = 'places'",
  '"sqlite_master" = 1',
  "t.fid = 1",
  '"t"."fid" = 1',
  '"t.fid" = 1',
  "geom IS NOT NULL",
  "mapgate_deadline() = 1",
  "mapgate_spatial(geom) = 1",
  "mapgate_like(name, '%') = 1",
  "json_each('[1]') = 1",
  "CASE WHEN 1=1 THEN 1 END = 1",
  "CAST(name AS BLOB) = X'00'",
  "name = X'41'",
  "name = $$x$$",
  "name = E'\\x27'",
  "name = ?",
  "name = ?1",
  "name = :a",
  "name = @a",
  "name = $1",
  "name = 'x''; DROP TABLE places; --'",
  "name = 'Robert''); DROP TABLE places;--'",
  'name = "x"',
  '"name"" = 1 OR ""x" = \'a\'',
  "name = '\\'' OR 1=1 --'",
  "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM r) SELECT x FROM r",
  "PRAGMA writable_schema = 1",
  "VACUUM INTO '/tmp/copy.gpkg'",
  "DELETE FROM places",
  "INSERT INTO places DEFAULT VALUES",
  "UPDATE places SET name = 'x'",
  "DROP TABLE places",
  "1=1\u0000; DROP TABLE places",
  "1=1 AND 1=(SELECT COUNT(*) FROM rtree_places_geom)",
  "fid = 1 UNION SELECT * FROM gpkg_contents",
  "name LIKE '%' ESCAPE ''''",
  "name LIKE '%' ESCAPE '\\'",
  "name LIKE 'a' ESCAPE 'ab'",
  "name LIKE 'a' ESCAPE ''",
  "name LIKE 'a' ESCAPE '\u0000'",
  "name LIKE '\u0000%'",
  "name = '\u0000'",
];

const QUOTES = [
  "'",
  "''",
  "'''",
  "name = '",
  "name = 'x",
  "name = 'x''",
  "name = ''''",
  '"',
  '""',
  '"name',
  '"" = 1',
  'name = "x',
  "N'x' = name",
  "n'",
  "name = N'é'",
  "name = n''",
  "`name` = 'x'",
  "[name] = 'x'",
  "name = ‘x’",
  "name = “x”",
  "name = 'x\\'",
  `name = ${sqlText("'".repeat(1000))}`,
  `name = '${"'".repeat(1001)}`,
];

const UNICODE = [
  "\u202ename = 'x'",
  "name = '\u202e\u0645\u0631\u062d\u0628\u0627'",
  "name = '\u0645\u0631\u062d\u0628\u0627' OR name = '\u05e9\u05dc\u05d5\u05dd'",
  "\u0000",
  "na\u0000me = 'x'",
  "name\u0000 = 'x'",
  "\ud800",
  "name = '\ud800'",
  "name = '\udc00\ud800'",
  "name\ud800 = 1",
  "name = '🌊'",
  "🌊 = 1",
  "name LIKE '%🌊%'",
  "name LIKE '_' ESCAPE '🌊'",
  "ｎａｍｅ ＝ 'x'",
  "name ＝ 'x'",
  "name = ＇x＇",
  "fid = １",
  "fid = ١",
  "fid = ۱۲",
  "na\u200bme = 'x'",
  "\ufeffname = 'x'",
  "name\u00a0=\u00a0'x'",
  "name\u2028=\u2029'x'",
  "name = 'e\u0301'",
  "𝐧𝐚𝐦𝐞 = 'x'",
  "İ = 1",
  "UPPER(name) = 'İSTANBUL'",
  "LOWER(name) = 'ß'",
  "\u0085name = 'x'",
  "name = '\u{10ffff}'",
  "\ufffe = 1",
];

const NESTING = [
  nest(MAX_WHERE_DEPTH - 1, "(", "1=1", ")"),
  nest(MAX_WHERE_DEPTH, "(", "1=1", ")"),
  nest(MAX_WHERE_DEPTH + 1, "(", "1=1", ")"),
  nest(1000, "(", "1=1", ")"),
  nest(5000, "(", "1=1", ")"),
  "(".repeat(10_000),
  ")".repeat(10_000),
  `${"NOT ".repeat(MAX_WHERE_DEPTH)}1=1`,
  `${"NOT ".repeat(MAX_WHERE_DEPTH + 1)}1=1`,
  `${"NOT ".repeat(3000)}1=1`,
  `${"- ".repeat(3000)}1 = 1`,
  `fid = ${"-".repeat(5000)}1`,
  nest(2000, "UPPER(", "name", ")") + " = 'X'",
  nest(MAX_WHERE_DEPTH - 1, "LOWER(", "name", ")") + " = 'x'",
  nest(1000, "ABS(", "fid", ")") + " > 0",
  nest(1000, "CONCAT(", "name", ", 'x')") + " = 'x'",
  nest(500, "COALESCE(", "name", ", NULL)") + " = 'x'",
  nest(1500, "CAST(", "fid", " AS INTEGER)") + " = 1",
  `${"1=1 AND ".repeat(2000)}1=1`,
  `${"1=1 OR ".repeat(2000)}1=1`,
  `${"fid + ".repeat(2000)}1 > 0`,
  `fid IN (${Array.from({ length: 3000 }, (_, i) => i).join(",")})`,
  `name IN (${Array.from({ length: 2000 }, (_, i) => `'n${i}'`).join(",")})`,
  `CONCAT(${Array.from({ length: 65 }, () => "name").join(", ")}) = 'x'`,
  `COALESCE(${Array.from({ length: 64 }, () => "NULL").join(", ")}) IS NULL`,
  `${nest(MAX_WHERE_DEPTH - 2, "(", "fid IN (1, 2)", ")")}`,
  `fid IN (${nest(MAX_WHERE_DEPTH, "(", "1", ")")})`,
  nest(3000, "EXTRACT(YEAR FROM ", "CURRENT_DATE", ")") + " > 0",
];

const NUMBERS = [
  "fid = 1e309",
  "fid = -1e309",
  "fid = 1e308",
  "fid = -1e308",
  "fid = 1e-400",
  "fid = -0",
  "fid = 0e0",
  "fid = -0.0",
  "fid = 9223372036854775807",
  "fid = 9223372036854775808",
  "fid = -9223372036854775808",
  "fid = 18446744073709551616",
  "fid = 9007199254740991",
  "fid = 9007199254740993",
  "fid = 9.223372036854775807e18",
  `fid = ${"9".repeat(5000)}`,
  `fid = 0.${"0".repeat(5000)}1`,
  `fid = 1${"0".repeat(308)}`,
  `fid = 1${"0".repeat(309)}`,
  "fid = .5",
  "fid = 5.",
  "fid = 1.e5",
  "fid = 1e",
  "fid = 1e+",
  "fid = 0x10",
  "fid = 0b1",
  "fid = 1_000",
  "fid = NaN",
  "fid = Infinity",
  "fid = -Infinity",
  "fid = 1..2",
  "fid = 1.2.3",
  "fid = 1e5e5",
  "lat * 1e308 * 1e308 > 0",
  "lat / 0 IS NULL",
  "MOD(fid, 0) IS NULL",
  "MOD(fid, 1e-320) IS NULL",
  "POWER(10, 400) > 0",
  "POWER(-1, 0.5) IS NULL",
  "POWER(0, -1) IS NULL",
  "ROUND(lat, 1000000000) > 0",
  "ROUND(lat, -1000000000) = 0",
  "TRUNCATE(lat, 1e300) > 0",
  "ROUND(lat, 1e309) > 0",
  "LOG(0) IS NULL",
  "LOG10(-1) IS NULL",
  "CEILING(1e308 * 10) IS NULL",
  "CAST(1e300 AS INTEGER) > 0",
  "CAST(-1e300 AS INTEGER) < 0",
  "CAST(lat * 1e300 AS INTEGER) <> 0",
  "ABS(CAST(-1e300 AS INTEGER)) > 0",
  "ABS(CAST('-9223372036854775808' AS INTEGER)) > 0",
  "ABS(CAST(lat * -1e300 AS INTEGER)) > 0",
  "-CAST(-1e300 AS INTEGER) > 0",
  "CAST(-1e300 AS INTEGER) - 1 < 0",
  "CAST('1e400' AS FLOAT) > 0",
  "CAST('abc' AS INTEGER) = 0",
  "SUBSTRING(name FROM 1 FOR -1) = 'x'",
  "SUBSTRING(name FROM 1 FOR fid - 100000000) = 'x'",
  "SUBSTRING(name, 1, -5) = ''",
  "SUBSTRING(name FROM -1e300 FOR 1e300) = 'x'",
  "SUBSTRING(name FROM 1e309) = ''",
  "SUBSTRING(name FROM 9007199254740993) = ''",
  "CAST(name AS VARCHAR(1000001)) = 'x'",
  "CAST(name AS VARCHAR(0)) = 'x'",
  "CAST(name AS VARCHAR(-1)) = 'x'",
  "CAST(name AS VARCHAR(1e3)) = 'x'",
  "CHAR_LENGTH(name) > 1e300",
  "POSITION('a' IN name) > 9007199254740993",
  "EXTRACT(YEAR FROM TIMESTAMP '9999-12-31 23:59:59') > 0",
  "EXTRACT(YEAR FROM DATE '0000-01-01') > 0",
  "DATE '2024-02-30' IS NULL",
  "TIMESTAMP '2024-01-01 25:00:00' IS NULL",
  "CURRENT_TIMESTAMP > DATE '1970-01-01'",
  "fid BETWEEN 1e309 AND -1e309",
  "fid BETWEEN -9007199254740991 AND 9007199254740991",
  "fid IN (1e308, -1e308, -0, 0)",
];

/** Characters each of which takes more UTF-8 bytes, or more characters once upper-cased, than it takes in the text. */
const WIDE = ["中", "ΐ", "ﬃ", "ß", "🌊"];

const LONG = [
  `name = ${sqlText("a".repeat(MAX_WHERE_LENGTH - 9))}`,
  `name = ${sqlText("a".repeat(MAX_WHERE_LENGTH - 8))}`,
  `name = ${sqlText("a".repeat(100_000))}`,
  `name = ${sqlText("a".repeat(1_000_000))}`,
  " ".repeat(MAX_WHERE_LENGTH),
  ` ${" ".repeat(MAX_WHERE_LENGTH)}1=1`,
  "a".repeat(MAX_WHERE_LENGTH),
  `${"a".repeat(MAX_WHERE_LENGTH - 4)} = 1`,
  `fid IN (${"1,".repeat(MAX_WHERE_LENGTH / 2 - 6)}1)`,
  `name LIKE '${"%".repeat(MAX_WHERE_LENGTH - 20)}'`,
  `name LIKE '${"%a".repeat(MAX_WHERE_LENGTH / 2 - 20)}'`,
  `name LIKE '${"_".repeat(MAX_WHERE_LENGTH - 20)}'`,
  `name LIKE '${"%_".repeat(MAX_WHERE_LENGTH / 2 - 20)}'`,
  `name NOT LIKE '${"%".repeat(MAX_WHERE_LENGTH - 20)}x'`,
  ...WIDE.map((c) => `name LIKE '${c.repeat((MAX_WHERE_LENGTH - 20) / c.length)}'`),
  // Computed patterns: the widest once upper-cased (three characters of two bytes each), and the widest in bytes.
  `name LIKE UPPER('${"ΐ".repeat(MAX_WHERE_LENGTH - 30)}')`,
  `name LIKE CONCAT('%', UPPER('${"🌊".repeat((MAX_WHERE_LENGTH - 50) / 2)}'), '%')`,
  `UPPER(name) = UPPER('${"ΐ".repeat(MAX_WHERE_LENGTH - 40)}')`,
  `POSITION(UPPER('${"ΐ".repeat(MAX_WHERE_LENGTH - 40)}') IN name) > 0`,
  `TRIM(BOTH '${"ab".repeat(MAX_WHERE_LENGTH / 2 - 30)}' FROM name) = 'x'`,
  `CONCAT(${Array.from({ length: 64 }, () => sqlText("x".repeat(240))).join(",")}) = name`,
];

const WHERE_CASES = [...INJECTIONS, ...QUOTES, ...UNICODE, ...NESTING, ...NUMBERS, ...LONG];

/** A polygon of `n` vertices around the world (a closed ring, clockwise as Esri writes outer rings). */
const ringAround = (n: number, scale = 1) =>
  Array.from({ length: n }, (_, i) => {
    const a = (-2 * Math.PI * i) / (n - 1);
    return `[${(Math.cos(a) * 179 * scale).toFixed(6)},${(Math.sin(a) * 89 * scale).toFixed(6)}]`;
  }).join(",");

const GEOMETRIES = [
  "{",
  '{"x":',
  "null",
  "[]",
  "[1,2]",
  '"x"',
  "{}",
  '{"x":1e309,"y":0}',
  '{"x":"1","y":"2"}',
  '{"x":null,"y":null}',
  '{"x":-0,"y":-0}',
  '{"x":true,"y":[]}',
  '{"x":1,"y":2,"spatialReference":{"wkid":1e309}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":9223372036854775808}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":-1}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":0}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":4326.5}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":"4326"}}',
  '{"x":1,"y":2,"spatialReference":{"wkt":"GEOGCS[\\"x\\"]"}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":999999}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":1000000}}',
  '{"x":2600000,"y":1200000,"spatialReference":{"wkid":2056}}',
  '{"x":1,"y":2,"spatialReference":{"wkid":102100}}',
  '{"x":1,"y":2,"spatialReference":null}',
  '{"x":1,"y":2,"spatialReference":[]}',
  '{"x":1,"y":2,"spatialReference":"4326"}',
  '{"x":1,"y":2,"spatialReference":{"wkid":{"wkid":4326}}}',
  '{"x":1,"y":2,"spatialReference":{"latestWkid":3857,"wkid":"x"}}',
  '{"xmin":10,"ymin":10,"xmax":0,"ymax":0}',
  '{"xmin":-1e308,"ymin":-1e308,"xmax":1e308,"ymax":1e308}',
  '{"xmin":-1.7976931348623157e308,"ymin":-90,"xmax":1.7976931348623157e308,"ymax":90}',
  '{"xmin":-180,"ymin":-90,"xmax":180,"ymax":90}',
  '{"xmin":-180,"ymin":-90,"xmax":180,"ymax":90,"spatialReference":{"wkid":3857}}',
  '{"xmin":-1e9,"ymin":-1e9,"xmax":1e9,"ymax":1e9,"spatialReference":{"wkid":102100}}',
  '{"xmin":0,"ymin":0,"xmax":0,"ymax":0}',
  '{"xmin":"a","ymin":0,"xmax":1,"ymax":1}',
  '{"points":[]}',
  '{"points":[[1]]}',
  '{"points":[[1,2,3,4,5]]}',
  '{"points":[[1,2]],"x":1}',
  '{"points":[[1e309,2]]}',
  '{"points":"x"}',
  '{"paths":[[[0,0]]]}',
  '{"paths":[]}',
  '{"paths":[[]]}',
  '{"paths":[[[0,0],[0,0]]]}',
  '{"paths":[[[-180,-90],[180,90]],[[-180,90],[180,-90]]]}',
  '{"rings":[]}',
  '{"rings":[[]]}',
  '{"rings":"x"}',
  '{"rings":[["x"]]}',
  '{"rings":[[null]]}',
  '{"rings":[[[0,0],[1,1],[0,0]]]}',
  '{"rings":[[[0,0],[0,0],[0,0],[0,0]]]}',
  '{"rings":[[[0,0],[10,10],[10,0],[0,10],[0,0]]]}',
  '{"rings":[[[0,0],[0,1e308],[1e308,1e308],[1e308,0],[0,0]]]}',
  '{"rings":[[[-180,-90],[-180,90],[180,90],[180,-90],[-180,-90]],[[-180,-90],[-180,90],[180,90],[180,-90],[-180,-90]]]}',
  '{"rings":[[[0,0],[0,10],[10,10],[10,0],[0,0]],[[20,20],[30,20],[30,30],[20,30],[20,20]]]}',
  '{"__proto__":{"x":1},"y":2}',
  '{"__proto__":{"rings":[]},"x":1,"y":2}',
  '{"constructor":1,"x":1,"y":1}',
  '{"x":1,"y":2,"z":"a","m":[]}',
  `{"rings":${nest(100_000, "[", "", "]")}}`,
  `{"points":[${nest(50_000, "[", "1", "]")}]}`,
  `{"x":1,"y":2,"spatialReference":${nest(50_000, '{"wkid":', "1", "}")}}`,
  `${nest(100_000, "[", "", "]")}`,
  `{"x":1,"y":2${" ".repeat(MAX_GEOMETRY_LENGTH)}}`,
  `{"x":1,"y":2${" ".repeat(MAX_GEOMETRY_LENGTH - 20)}}`,
  "1,2",
  "1,2,3,4",
  "1,2,3",
  "1,2,3,4,5",
  "4,3,2,1",
  "1e309,0",
  "-0,-0",
  "NaN,1",
  "Infinity,1",
  "0x10,1",
  "1,,2",
  ",,,",
  "1 2",
  "١,٢",
  "１,２",
  "\u0000,1",
  `${"9".repeat(400)},1`,
  `1,${"9".repeat(400)},2,${"9".repeat(400)}`,
  `{"rings":[[${ringAround(MAX_QUERY_VERTICES - 1)}]]}`,
  `{"rings":[[${ringAround(MAX_QUERY_VERTICES + 1)}]]}`,
  `{"rings":[[${ringAround(20_000, 0.2)}]]}`,
  `{"points":[${ringAround(MAX_QUERY_VERTICES)}]}`,
  `{"points":[${ringAround(20_000)}]}`,
  `{"paths":[[${ringAround(MAX_QUERY_VERTICES)}]]}`,
  `{"paths":[${Array.from({ length: MAX_QUERY_VERTICES / 2 + 1 }, () => "[[0,0],[1,1]]").join(",")}]}`,
];

const GEOMETRY_TYPES = [
  "esriGeometryEnvelope",
  "esriGeometryPoint",
  "esriGeometryMultipoint",
  "esriGeometryPolyline",
  "esriGeometryPolygon",
  "ESRIGEOMETRYPOINT",
  "esriGeometryMultiPatch",
  "esriGeometryNull",
  "x",
  "esriGeometryPoint'; DROP TABLE places; --",
  "\u0000",
];
const SPATIAL_RELS = [
  "esriSpatialRelIntersects",
  "esriSpatialRelEnvelopeIntersects",
  "esriSpatialRelContains",
  "esriSpatialRelWithin",
  "esriSpatialRelCrosses",
  "esriSpatialRelTouches",
  "esriSpatialRelOverlaps",
  "esriSpatialRelIndexIntersects",
  "esriSpatialRelRelation",
  "ESRISPATIALRELWITHIN",
  "x",
  "esriSpatialRelIntersects' OR 1=1 --",
];
const SPATIAL_REFERENCES = [
  "4326",
  "3857",
  "102100",
  "102113",
  "900913",
  "2056",
  "0",
  "-1",
  "1e309",
  "4326.5",
  "9007199254740993",
  "999999",
  "1000000",
  "abc",
  "{",
  '{"wkid":3857}',
  '{"latestWkid":3857}',
  '{"wkid":{"wkid":4326}}',
  '{"wkt":"PROJCS[\\"x\\"]"}',
  '{"wkid":"4326"}',
  "4326; DROP TABLE places",
  "\u0000",
];
const DISTANCES = ["0", "-0", "-1", "1e-320", "10", "1000000", "1e308", "1e309", "NaN", "0x10", "abc", "20037508"];
const UNITS = ["esriSRUnit_Meter", "esriSRUnit_Kilometer", "esriSRUnit_NauticalMile", "esriSRUnit_Parsec", "x"];

const ORDERS = [
  "name",
  "name DESC",
  "name desc, fid asc",
  "name ASC DESC",
  "name; DROP TABLE places",
  "name) --",
  '"name"',
  "NAME",
  "rowid",
  "geom",
  "1",
  "name COLLATE nocase",
  "name NULLS FIRST",
  "name,".repeat(40),
  ",,,",
  " ",
  "fid DESC, ".repeat(1000),
  "sqlite_master",
  "ｎａｍｅ",
  "name\u0000",
  "name\tDESC",
  "name\nDESC",
  "name\u00a0DESC",
  "CASE WHEN 1=1 THEN name END",
  "(SELECT 1)",
  "a".repeat(20_000),
  "name DESC".padEnd(100_000, " "),
  "name ASC, fid DESC, lat, lng DESC, country",
];

const STAT = (type: string, field: string, name?: string, extra = "") =>
  `{"statisticType":${JSON.stringify(type)},"onStatisticField":${JSON.stringify(field)}${name === undefined ? "" : `,"outStatisticFieldName":${JSON.stringify(name)}`}${extra}}`;

const STATISTICS = [
  "[]",
  "{}",
  "[",
  "null",
  "[null]",
  "[1]",
  "[{}]",
  `[${STAT("count", "fid", "n")}]`,
  `[${STAT("COUNT", "FID", "n")}]`,
  `[${STAT("median", "fid")}]`,
  `[${STAT("count; DROP TABLE places", "fid")}]`,
  `[${STAT("count", "geom")}]`,
  `[${STAT("count", "*")}]`,
  `[${STAT("count", "1")}]`,
  `[${STAT("count", "fid) FROM places; --")}]`,
  `[${STAT("sum", "name")}]`,
  `[${STAT("count", "fid", "n FROM places; --")}]`,
  `[${STAT("count", "fid", "select")}]`,
  `[${STAT("count", "fid", '"n"')}]`,
  `[${STAT("count", "fid", "n n")}]`,
  `[${STAT("count", "fid", "ñ")}]`,
  `[${STAT("count", "fid", "𝐧")}]`,
  `[${STAT("count", "fid", "")}]`,
  `[${STAT("count", "fid", "x".repeat(64))}]`,
  `[${STAT("count", "fid", "x".repeat(65))}]`,
  `[${STAT("count", "fid", "n")},${STAT("max", "fid", "N")}]`,
  `[${STAT("count", "fid", "\u0000")}]`,
  `[${STAT("percentile_cont", "fid", "p", ',"statisticParameters":{"value":1e309}')}]`,
  `[${STAT("percentile_cont", "fid", "p", ',"statisticParameters":{"value":-0}')}]`,
  `[${STAT("percentile_disc", "fid", "p", ',"statisticParameters":{"value":"0.5"}')}]`,
  `[${STAT("percentile_disc", "fid", "p", ',"statisticParameters":{"value":[]}')}]`,
  `[${STAT("percentile_cont", "fid", "p", ',"statisticParameters":{"value":0.5,"orderBy":"DESC; DROP"}')}]`,
  `[${STAT("percentile_cont", "fid", "p", ',"statisticParameters":null')}]`,
  `[${STAT("count", "fid", "n", ',"statisticParameters":{"value":0.5}')}]`,
  `[${STAT("stddev", "lat", "s")},${STAT("var", "lat", "v")},${STAT("avg", "lat", "a")}]`,
  `[${Array.from({ length: MAX_OUT_STATISTICS }, (_, i) => STAT("max", "fid", `m${i}`)).join(",")}]`,
  `[${Array.from({ length: MAX_OUT_STATISTICS + 1 }, (_, i) => STAT("max", "fid", `m${i}`)).join(",")}]`,
  `[${Array.from({ length: 100_000 }, () => "1").join(",")}]`,
  nest(100_000, "[", "", "]"),
  `[{"statisticType":${nest(50_000, "[", '"count"', "]")},"onStatisticField":"fid"}]`,
  '[{"statisticType":{"toString":"count"},"onStatisticField":"fid"}]',
  '[{"__proto__":{"statisticType":"count"},"onStatisticField":"fid"}]',
  '[{"statisticType":"count","onStatisticField":"fid","__proto__":null}]',
];

const GROUP_BYS = [
  "country",
  "country,admin1",
  "geom",
  "country; DROP TABLE places",
  "nope",
  "country,".repeat(40),
  "n",
];
const HAVINGS = [
  "COUNT(fid) > 5",
  "COUNT(*) > 1",
  "SUM(lat) > 1e309",
  "name = 'x'",
  "COUNT(fid) > 5; DROP TABLE places",
  "COUNT((SELECT 1)) > 1",
  "MAX(name) LIKE 'A%'",
  "AVG(name) > 1",
  "COUNT(fid) > 1 UNION SELECT 1",
  "COUNT(COUNT(fid)) > 1",
  "COUNT(fid) > 1 AND ABS(CAST(-1e300 AS INTEGER)) > 0",
  nest(MAX_WHERE_DEPTH + 1, "(", "COUNT(fid) > 1", ")"),
  `COUNT(fid) > 1 AND country LIKE '${"%".repeat(MAX_WHERE_LENGTH - 40)}'`,
];

const OBJECT_IDS = [
  "1",
  "1,2,3",
  "-1",
  "0",
  "9007199254740993",
  "9223372036854775808",
  "1e3",
  "1.5",
  "0x10",
  "abc",
  "1; DROP TABLE places",
  "1) OR (1=1",
  ",,,,",
  " ",
  "１",
  "١",
  "+1",
  "-0",
  "1 2",
  "1\u00002",
  "1,".repeat(MAX_OBJECT_IDS),
  Array.from({ length: MAX_OBJECT_IDS }, (_, i) => i + 1).join(","),
  Array.from({ length: MAX_OBJECT_IDS + 1 }, (_, i) => i + 1).join(","),
  ",".repeat(1_000_000),
  `1${"0".repeat(100_000)}`,
];

const OUT_FIELDS = [
  "*",
  "",
  "name",
  "NAME",
  "name,*",
  "geom",
  "rowid",
  "sqlite_master",
  '"name"',
  "name desc",
  "name; DROP TABLE places",
  ",".repeat(10_000),
  "name,".repeat(3000),
  "fid,fid",
  "nope",
  "\u0000",
  "ｎａｍｅ",
];
const OFFSETS = [
  "0",
  "-1",
  "1e3",
  "2147483647",
  "2147483648",
  "9007199254740993",
  "1.5",
  "abc",
  "-0",
  "0x10",
  " 5 ",
  "١",
];
const COUNTS = ["0", "1", "2000", "2001", "1e309", "-1", "9007199254740991", "9007199254740992", "abc", "1.5"];

/** Percent-encodings no client library makes: invalid UTF-8, bare `%`, NUL, overlong forms. */
const RAW = [
  "where=%ED%A0%80",
  "where=%",
  "where=%zz",
  "where=1%3D1%00",
  "where=%C0%AF",
  "where=%FF%FE",
  "where=1%3D1%00%3B%20DROP%20TABLE%20places",
  "where=1=1&where=2=2",
  "geometry=%FF&geometryType=esriGeometryPoint",
  "geometry=%7B%22x%22%3A1%2C%22y%22%3A%ED%A0%80%7D",
  "orderByFields=name%00DESC",
  "outStatistics=%5B%7B%22statisticType%22%3A%22count%22%2C%22onStatisticField%22%3A%22fid%ED%A0%80%22%7D%5D",
  "objectIds=1%2C%ED%A0%80",
];

// ---------------------------------------------------------------------------------------------------------------
// The catalogue: each hostile value in its parameter, the others benign, over GET and POST.

/** The answers a query may be asked for, so each input reaches every output path. */
const OUTPUTS: readonly Readonly<Record<string, string>>[] = [
  { resultRecordCount: "3", outFields: "*" },
  { returnCountOnly: "true" },
  { returnExtentOnly: "true" },
  { returnIdsOnly: "true", resultRecordCount: "3" },
  { returnGeometry: "false", outFields: "*", resultRecordCount: "2", orderByFields: "fid DESC" },
];

function catalogue(places: Layer, countries: Layer): Case[] {
  const cases: Case[] = [];
  let i = 0;
  const add = (what: string, layer: Layer, params: Record<string, string>) => {
    const output = OUTPUTS[i++ % OUTPUTS.length] as Record<string, string>;
    // Ids of every place are a 171k-row answer: asked of the smaller layers only.
    const asked = output.returnIdsOnly && layer.rows > 10_000 ? { returnCountOnly: "true" } : output;
    const full = { f: "json", ...asked, ...params };
    // Every other case as a query string, the others as a form body: both reach the same parser.
    const get = i % 2 === 0 && new URLSearchParams(full).toString().length <= MAX_GET_CHARS;
    cases.push({ what, layer, method: get ? "GET" : "POST", params: full });
  };
  // Nesting costs the same on any layer (what it tests is the parser and the SQL's depth); texts near the cap
  // cost the most on the largest, whose rows carry them into functions 171,000 times.
  for (const where of WHERE_CASES) add("where", NESTING.includes(where) ? countries : places, { where });
  for (const where of INJECTIONS.slice(0, 20))
    add("where", countries, { where: where.replaceAll("places", "countries") });
  GEOMETRIES.forEach((geometry, n) => {
    add("geometry", n % 3 === 0 ? countries : places, { geometry });
    add("geometry", places, { geometry, geometryType: GEOMETRY_TYPES[n % GEOMETRY_TYPES.length] as string });
    add("geometry", countries, {
      geometry,
      spatialRel: SPATIAL_RELS[n % SPATIAL_RELS.length] as string,
      inSR: SPATIAL_REFERENCES[n % SPATIAL_REFERENCES.length] as string,
    });
  });
  const envelope = '{"xmin":2,"ymin":48,"xmax":3,"ymax":49}';
  const polygon = '{"rings":[[[2,48],[2,49],[3,49],[3,48],[2,48]]]}';
  for (const spatialRel of SPATIAL_RELS) {
    for (const geometry of [envelope, polygon, "2.35,48.85"]) {
      add("spatialRel", places, { geometry, spatialRel });
      add("spatialRel", countries, { geometry, spatialRel, returnGeometry: "false" });
    }
  }
  DISTANCES.forEach((distance, n) => {
    const units = UNITS[n % UNITS.length] as string;
    add("distance", places, { geometry: "2.35,48.85", distance, units, returnCountOnly: "true" });
    add("distance", countries, { geometry: polygon, distance, spatialRel: "esriSpatialRelContains" });
    add("distance", countries, { geometry: `{"rings":[[${ringAround(20_000, 0.2)}]]}`, distance });
    add("distance", places, { distance });
  });
  for (const inSR of SPATIAL_REFERENCES) add("inSR", places, { geometry: envelope, inSR });
  for (const outSR of SPATIAL_REFERENCES) {
    add("outSR", places, { where: "country = 'IS'", outSR });
    add("outSR", countries, { where: "name = 'France'", outSR });
  }
  for (const orderByFields of ORDERS) {
    add("orderByFields", places, { where: "country = 'IS'", orderByFields });
    add("orderByFields", places, {
      where: "country = 'IS'",
      orderByFields,
      returnDistinctValues: "true",
      outFields: "name",
    });
  }
  STATISTICS.forEach((outStatistics, n) => {
    add("outStatistics", places, { outStatistics });
    add("outStatistics", places, {
      where: "country = 'IS'",
      outStatistics,
      groupByFieldsForStatistics: GROUP_BYS[n % GROUP_BYS.length] as string,
    });
  });
  for (const groupByFieldsForStatistics of GROUP_BYS) {
    add("groupByFieldsForStatistics", places, {
      outStatistics: `[${STAT("count", "fid", "n")}]`,
      groupByFieldsForStatistics,
    });
  }
  for (const having of HAVINGS) {
    add("having", places, {
      outStatistics: `[${STAT("count", "fid", "n")}]`,
      groupByFieldsForStatistics: "country",
      having,
      orderByFields: "n DESC",
    });
  }
  add("having", places, { having: "COUNT(fid) > 1" });
  add("groupByFieldsForStatistics", places, { groupByFieldsForStatistics: "country" });
  for (const objectIds of OBJECT_IDS) add("objectIds", places, { objectIds });
  for (const outFields of OUT_FIELDS) {
    add("outFields", places, { where: "country = 'IS'", outFields });
    add("outFields", countries, { where: "1=1", outFields, returnDistinctValues: "true" });
  }
  for (const resultOffset of OFFSETS) add("resultOffset", places, { where: "country = 'IS'", resultOffset });
  for (const resultRecordCount of COUNTS)
    add("resultRecordCount", countries, { where: "1=1", resultRecordCount, returnGeometry: "false" });
  for (const f of ["geojson", "pbf", "pjson"]) {
    for (const where of [
      "name = '\u0000'",
      "1=1; DROP TABLE places",
      "ABS(CAST(-1e300 AS INTEGER)) > 0",
      "country = 'IS'",
    ])
      add("f", places, { f, where, resultRecordCount: "3" });
  }
  for (const raw of RAW) {
    cases.push({ what: "raw", layer: places, method: "GET", params: {}, raw: `f=json&returnCountOnly=true&${raw}` });
    cases.push({ what: "raw", layer: places, method: "POST", params: {}, raw: `f=json&returnCountOnly=true&${raw}` });
  }
  // A body past the engine's cap, refused before it is read.
  cases.push({
    what: "body cap",
    layer: places,
    method: "POST",
    params: { f: "json", where: `name = '${"a".repeat(MAX_BODY_BYTES)}'` },
  });
  return cases;
}

// ---------------------------------------------------------------------------------------------------------------
// The generated cases: each parameter built from its grammar (most of them valid), then mutated.

const FRAGMENTS = [
  "'",
  '"',
  "(",
  ")",
  ";",
  "--",
  "/*",
  "*/",
  ",",
  " OR 1=1",
  " UNION SELECT * FROM sqlite_master",
  "; DROP TABLE places",
  "\u0000",
  "\u202e",
  "🌊",
  "\ud800",
  "ｆｉｄ",
  "%",
  "_",
  "\\",
  "$1",
  "?",
  "1e309",
  "-0",
  "9223372036854775808",
  "NOT ",
  " AND ",
  "[",
  "]",
  "{",
  "}",
  ":",
  "null",
  '"__proto__"',
];

function mutate(r: Rng, text: string): string {
  let out = text;
  for (let n = r.int(4); n > 0; n--) {
    const at = r.int(out.length + 1);
    switch (r.int(6)) {
      case 0:
        out = out.slice(0, at) + r.pick(FRAGMENTS) + out.slice(at);
        break;
      case 1:
        out = out.slice(0, at) + out.slice(at + 1 + r.int(8));
        break;
      case 2: {
        const span = out.slice(at, at + 1 + r.int(20));
        out = out.slice(0, at) + span.repeat(1 + r.int(r.next() < 0.05 ? 2000 : 4)) + out.slice(at);
        break;
      }
      case 3:
        out = out.slice(0, at) + String.fromCharCode(r.int(0x3000)) + out.slice(at + 1);
        break;
      case 4:
        out = r.next() < 0.5 ? out.toUpperCase() : out.toLowerCase();
        break;
      default:
        out = out.slice(0, at);
    }
  }
  return out;
}

function generator(r: Rng, layers: readonly Layer[]) {
  const NUMBER_TEXTS = [
    "0",
    "1",
    "-1",
    "2.5",
    ".5",
    "1e3",
    "1E-3",
    "-0",
    "1e308",
    "1e309",
    "9007199254740993",
    "100000",
    "64",
  ];
  const STRING_TEXTS = [
    "",
    "x",
    "Paris",
    "FR",
    "IS",
    "O'Brien",
    "%",
    "_",
    "%a%",
    "\u202e",
    "🌊",
    "ｘ",
    "é",
    "\\",
    "ß",
    "ΐ",
    "' OR '1'='1",
  ];
  const maybe = (p: number, text: string) => (r.next() < p ? text : "");

  function where(layer: Layer, aggregates = false): string {
    const field = (names: readonly string[], fallback: string) => {
      const name = names.length > 0 ? r.pick(names) : fallback;
      return r.next() < 0.1 ? `"${name}"` : r.next() < 0.1 ? name.toUpperCase() : name;
    };
    const numField = () => field(layer.numbers, layer.oid);
    const strField = () => field(layer.strings, layer.oid);
    const num = (d: number): string => {
      if (d > 3 || r.next() < 0.4) return r.next() < 0.5 ? numField() : r.pick(NUMBER_TEXTS);
      if (aggregates && r.next() < 0.3)
        return `${r.pick(["COUNT", "SUM", "MIN", "MAX", "AVG", "STDDEV", "VAR"])}(${numField()})`;
      switch (r.int(11)) {
        case 0:
          return `${num(d + 1)} ${r.pick(["+", "-", "*", "/"])} ${num(d + 1)}`;
        case 1:
          return `-${num(d + 1)}`;
        case 2:
          return `${r.pick(["ABS", "CEILING", "FLOOR", "LOG", "LOG10"])}(${num(d + 1)})`;
        case 3:
          return `${r.pick(["POWER", "MOD", "ROUND", "TRUNCATE"])}(${num(d + 1)}, ${num(d + 1)})`;
        case 4:
          return `CHAR_LENGTH(${str(d + 1)})`;
        case 5:
          return `POSITION(${str(d + 1)} IN ${str(d + 1)})`;
        case 6:
          return `EXTRACT(${r.pick(["YEAR", "MONTH", "DAY", "HOUR", "MINUTE", "SECOND"])} FROM ${r.pick(["CURRENT_DATE", "CURRENT_TIMESTAMP", "DATE '2024-02-29'", "TIMESTAMP '2024-01-01 10:00:00'"])})`;
        case 7:
          return `CAST(${r.next() < 0.5 ? num(d + 1) : str(d + 1)} AS ${r.pick(["INTEGER", "FLOAT", "SMALLINT", "REAL", "DOUBLE PRECISION"])})`;
        case 8:
          return `${r.pick(["COALESCE", "NULLIF"])}(${num(d + 1)}, ${num(d + 1)})`;
        case 9:
          return `(${num(d + 1)})`;
        default:
          return "NULL";
      }
    };
    const str = (d: number): string => {
      if (d > 3 || r.next() < 0.4) return r.next() < 0.5 ? strField() : sqlText(r.pick(STRING_TEXTS));
      switch (r.int(6)) {
        case 0:
          return `CONCAT(${Array.from({ length: 2 + r.int(3) }, () => str(d + 1)).join(", ")})`;
        case 1:
          return `${r.pick(["UPPER", "LOWER"])}(${str(d + 1)})`;
        case 2:
          return `SUBSTRING(${str(d + 1)} FROM ${num(d + 1)}${maybe(0.5, ` FOR ${num(d + 1)}`)})`;
        case 3:
          return `TRIM(${r.pick(["", "LEADING ", "TRAILING ", "BOTH "])}${maybe(0.5, `${sqlText(r.pick(STRING_TEXTS))} `)}FROM ${str(d + 1)})`;
        case 4:
          return `CAST(${r.next() < 0.5 ? num(d + 1) : str(d + 1)} AS VARCHAR(${r.pick(["1", "10", "1000000", "0"])}))`;
        default:
          return `N${sqlText(r.pick(STRING_TEXTS))}`;
      }
    };
    const cond = (d: number): string => {
      const not = maybe(0.15, "NOT ");
      switch (d > 3 ? r.int(6) : r.int(10)) {
        case 0:
          return `${num(d + 1)} ${r.pick(["=", "<>", "<", "<=", ">", ">=", "!="])} ${num(d + 1)}`;
        case 1:
          return `${str(d + 1)} ${r.pick(["=", "<>", "<", ">="])} ${str(d + 1)}`;
        case 2:
          return `${str(d + 1)} ${not}LIKE ${str(d + 1)}${maybe(0.2, ` ESCAPE ${sqlText(r.pick(["!", "\\", "%", "🌊", "ab", ""]))}`)}`;
        case 3:
          return `${num(d + 1)} ${not}IN (${Array.from({ length: 1 + r.int(5) }, () => num(d + 1)).join(", ")})`;
        case 4:
          return `${num(d + 1)} ${not}BETWEEN ${num(d + 1)} AND ${num(d + 1)}`;
        case 5:
          return `${r.next() < 0.5 ? str(d + 1) : num(d + 1)} IS ${not}NULL`;
        case 6:
          return `NOT ${cond(d + 1)}`;
        case 7:
          return `(${cond(d + 1)})`;
        default:
          return `${cond(d + 1)} ${r.pick(["AND", "OR"])} ${cond(d + 1)}`;
      }
    };
    const text = r.next() < 0.05 ? r.pick(WHERE_CASES.filter((w) => w.length < 2000)) : cond(0);
    return r.next() < 0.4 ? mutate(r, text) : text;
  }

  const coordinate = () =>
    r.next() < 0.9
      ? (r.next() * 360 - 180).toFixed(r.int(8))
      : r.pick(["1e309", "-0", "NaN", '"1"', "null", "[]", "1e308", "-1e308"]);
  const pair = () => `[${coordinate()},${coordinate()}]`;
  const list = (n: number, make: () => string) => Array.from({ length: n }, make).join(",");

  function geometry(): Record<string, string> {
    const out: Record<string, string> = {};
    let text: string;
    const x = Number((r.next() * 360 - 180).toFixed(3));
    const y = Number((r.next() * 170 - 85).toFixed(3));
    const w = r.next() * (r.next() < 0.3 ? 100 : 5);
    switch (r.int(7)) {
      case 0:
        text = `${x},${y}`;
        break;
      case 1:
        text = `${x},${y},${x + w},${y + w}`;
        break;
      case 2:
        text = `{"x":${coordinate()},"y":${coordinate()}}`;
        break;
      case 3:
        text = `{"xmin":${x},"ymin":${y},"xmax":${x + w},"ymax":${y + w}}`;
        break;
      case 4:
        text = `{"points":[${list(1 + r.int(20), pair)}]}`;
        break;
      case 5:
        text = `{"paths":[[${list(2 + r.int(20), pair)}]]}`;
        break;
      default:
        text = `{"rings":[[[${x},${y}],[${x},${y + w}],[${x + w},${y + w}],[${x + w},${y}],[${x},${y}]]]}`;
    }
    if (r.next() < 0.2 && text.startsWith("{"))
      text = `${text.slice(0, -1)},"spatialReference":{"wkid":${r.pick(["4326", "3857", "102100", "0", "-1", "1e309", '"x"', "2056"])}}}`;
    out.geometry = r.next() < 0.3 ? mutate(r, text) : text;
    if (r.next() < 0.4) out.geometryType = r.next() < 0.8 ? r.pick(GEOMETRY_TYPES.slice(0, 5)) : r.pick(GEOMETRY_TYPES);
    if (r.next() < 0.5) out.spatialRel = r.pick(SPATIAL_RELS);
    if (r.next() < 0.2) out.inSR = r.pick(SPATIAL_REFERENCES);
    if (r.next() < 0.15) out.distance = r.pick(DISTANCES);
    if (r.next() < 0.1) out.units = r.pick(UNITS);
    return out;
  }

  function orderBy(layer: Layer): string {
    const names = [...layer.numbers, ...layer.strings];
    const term = () =>
      `${r.next() < 0.9 ? r.pick(names) : r.pick(["rowid", "geom", "x", "1", "sqlite_master", "n"])}${r.pick(["", "", " ASC", " DESC", " desc", " ASC DESC", " NULLS FIRST"])}`;
    const text = list(1 + r.int(4), term);
    return r.next() < 0.3 ? mutate(r, text) : text;
  }

  function statistics(layer: Layer): Record<string, string> {
    const names = [...layer.numbers, ...layer.strings];
    const types = ["count", "sum", "min", "max", "avg", "stddev", "var", "percentile_cont", "percentile_disc"];
    const stat = (i: number) => {
      const type = r.next() < 0.9 ? r.pick(types) : r.pick(["median", "COUNT", "", "count;"]);
      const extra = type.startsWith("percentile")
        ? `,"statisticParameters":{"value":${r.pick(["0.5", "0", "1", "1.5", "-0", "1e309", '"0.5"'])}${maybe(0.3, `,"orderBy":"${r.pick(["ASC", "DESC", "x"])}"`)}}`
        : "";
      return STAT(
        type,
        r.next() < 0.9 ? r.pick(names) : r.pick(["geom", "*", "x"]),
        maybe(0.7, `s${i}`) || undefined,
        extra,
      );
    };
    const text = `[${Array.from({ length: 1 + r.int(3) }, (_, i) => stat(i)).join(",")}]`;
    const out: Record<string, string> = { outStatistics: r.next() < 0.25 ? mutate(r, text) : text };
    if (r.next() < 0.5)
      out.groupByFieldsForStatistics = list(1 + r.int(2), () => r.pick(layer.strings.length ? layer.strings : names));
    if (r.next() < 0.3) out.having = where(layer, true);
    if (r.next() < 0.3) out.orderByFields = r.pick(["s0 DESC", "s0", out.groupByFieldsForStatistics ?? "x", "s9"]);
    return out;
  }

  function objectIds(layer: Layer): string {
    const text = list(1 + r.int(30), () =>
      r.next() < 0.9 ? String(1 + r.int(Math.max(layer.rows, 1))) : r.pick(OBJECT_IDS.filter((o) => o.length < 100)),
    );
    return r.next() < 0.3 ? mutate(r, text) : text;
  }

  return (): Case => {
    const layer = r.next() < 0.4 ? (layers[0] as Layer) : r.pick(layers);
    const params: Record<string, string> = { f: r.next() < 0.85 ? "json" : r.pick(["pjson", "geojson", "pbf"]) };
    if (r.next() < 0.7) params.where = where(layer);
    if (r.next() < 0.25 && layer.geometry) Object.assign(params, geometry());
    if (r.next() < 0.15) params.objectIds = objectIds(layer);
    if (r.next() < 0.2) params.outSR = r.pick(SPATIAL_REFERENCES);
    const mode = r.int(10);
    if (mode < 3) Object.assign(params, statistics(layer));
    else if (mode < 5) params.returnCountOnly = "true";
    else if (mode === 5) params.returnExtentOnly = "true";
    else if (mode === 6 && layer.rows < 10_000) params.returnIdsOnly = "true";
    else if (mode === 7) {
      params.returnDistinctValues = "true";
      params.outFields = list(1 + r.int(2), () => r.pick([...layer.strings, ...layer.numbers]));
    } else {
      params.outFields = r.next() < 0.5 ? "*" : list(1 + r.int(3), () => r.pick([...layer.strings, ...layer.numbers]));
      params.returnGeometry = r.pick(["true", "false"]);
      params.resultRecordCount = r.next() < 0.9 ? String(1 + r.int(20)) : r.pick(COUNTS);
      if (r.next() < 0.3) params.resultOffset = r.next() < 0.8 ? String(r.int(500)) : r.pick(OFFSETS);
      if (r.next() < 0.1) params.outFields = r.pick(OUT_FIELDS);
    }
    if (r.next() < 0.3 && !params.orderByFields) params.orderByFields = orderBy(layer);
    const fits = new URLSearchParams(params).toString().length <= MAX_GET_CHARS;
    return { what: "generated", layer, method: fits && r.next() < 0.5 ? "GET" : "POST", params };
  };
}

// ---------------------------------------------------------------------------------------------------------------

/** Runs the cases `CONCURRENCY` at a time, in order of submission. */
async function runAll(cases: readonly Case[], each: (c: Case, a: Outcome) => void): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++] as Case;
      each(c, await send(c));
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
}

const show = (c: Case) =>
  `${c.what} ${c.method} ${c.layer.name} ${JSON.stringify(c.raw ?? c.params, (_k, v: unknown) => (typeof v === "string" && v.length > 160 ? `${v.slice(0, 160)}…(${v.length})` : v))}`;

for (const { name, open } of TARGETS) {
  describe(`query on ${name} under hostile input (seed ${SEED})`, () => {
    it("answers every case with a valid answer or a 400 naming a parameter, leaks nothing, changes nothing", async () => {
      const target = await open();
      const secrets = [...target.secrets, ROOT, tmpdir()];
      const before = await target.snapshot();
      const { points, polygons, table } = target.layers;
      const layers = await Promise.all([points, polygons, table].map(describeLayer));
      const r = prng(SEED);
      const generate = generator(r, layers);
      const cases = [...catalogue(...(layers as [Layer, Layer])), ...Array.from({ length: GENERATED }, generate)];
      const logsBefore = engine.lines.length;

      const histogram = new Map<string, number>();
      const refusedBy = new Map<string, number>();
      const failures: string[] = [];
      const slowest: { ms: number; c: Case }[] = [];
      const started = performance.now();
      await runAll(cases, (c, a) => {
        const v = judge(c, a, secrets);
        histogram.set(v.kind, (histogram.get(v.kind) ?? 0) + 1);
        if (v.refused) refusedBy.set(v.refused, (refusedBy.get(v.refused) ?? 0) + 1);
        if (v.problems.length > 0) failures.push(`${v.problems.join("; ")}\n    ${show(c)}`);
        if (a !== "timeout" && !(a instanceof Error)) slowest.push({ ms: a.ms, c });
      });
      const seconds = (performance.now() - started) / 1000;
      slowest.sort((a, b) => b.ms - a.ms);
      console.log(
        [
          `${name}: ${cases.length} cases in ${seconds.toFixed(1)} s (seed ${SEED}, ${CONCURRENCY} at a time)`,
          `  answers: ${[...histogram].map(([k, n]) => `${k}: ${n}`).join(", ")}`,
          `  refused, by parameter: ${[...refusedBy]
            .sort((a, b) => b[1] - a[1])
            .map(([k, n]) => `${k} ${n}`)
            .join(", ")}`,
          `  slowest: ${slowest
            .slice(0, 5)
            .map((s) => `${s.ms.toFixed(0)} ms ${show(s.c).slice(0, 160)}`)
            .join("\n           ")}`,
        ].join("\n"),
      );
      // The engine logs each fault it hides from the client: there must be none.
      const faults = engine.lines.slice(logsBefore).filter((l) => /"level":"(ERROR|CRITICAL)"/.test(l));
      expect(failures.slice(0, 40), `${failures.length} failing cases`).toEqual([]);
      expect(faults.slice(0, 10)).toEqual([]);

      // Still answering, and the data as it was.
      expect(engine.child.exitCode).toBeNull();
      for (const layer of layers) {
        const { count } = await getJson(`${layer.url}/query?f=json&where=1%3D1&returnCountOnly=true`);
        expect(count).toBe(layer.rows);
      }
      expect(await target.snapshot()).toEqual(before);
    }, 180_000);
  });
}
