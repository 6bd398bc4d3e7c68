// Hosted feature layers kept in PostgreSQL + PostGIS (MAPGATE_HOSTED_DATABASE), reached through a stand-in for RDS
// Proxy in front of a paused Aurora cluster (test/helpers/pg-proxy.ts): it refuses startup `options` and holds the
// first connection longer than the by-reference pool's 5 s connect timeout. The shared hosted-layer suite runs
// through it unchanged (test/helpers/hosted-cases.ts), GDAL reading each layer from the database; then what the
// proxy saw is checked: no startup options, nothing that would pin a session.
import { execFileSync } from "node:child_process";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { describe, expect, it } from "vitest";
import { CONNECT_TIMEOUT_MS } from "#shared/features/postgis.ts";
import { hostedLayerSuite } from "./helpers/hosted-cases.ts";
import { HOST_LOGIN as HOST, hostGdalSource, hostThroughProxy, type PgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

/** Longer than the by-reference pool's connect timeout (CONNECT_TIMEOUT_MS): a resuming cluster's wait. */
const FIRST_CONNECTION_DELAY_MS = 6_000;

let db: Postgres;
let proxy: PgProxy;
let started = 0;

const schemas = async () =>
  Number(
    (await db.admin.query("SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE 'h\\_%'")).rows[0]
      ?.n as number,
  );

const gdalSource = () => hostGdalSource(db);

const suite = hostedLayerSuite({
  start: async () => {
    db = await startPostgres();
    const hosted = await hostThroughProxy(db, FIRST_CONNECTION_DELAY_MS);
    proxy = hosted.proxy;
    started = Date.now();
    return hosted.env;
  },
  stop: async () => {
    await proxy?.close();
    await db?.stop();
  },
  kept: () => schemas(),
  ogrinfo: (_dataDir, serviceItemId, layer) =>
    execFileSync("ogrinfo", ["-ro", "-so", gdalSource(), `h_${serviceItemId}.${layer}`], { encoding: "utf8" }),
  gdalName: (serviceItemId, layer) => `h_${serviceItemId}.${layer}`,
  // What the tables take in the database, which only the database knows (the usage it frees is checked).
  dataBytes: () => undefined,
});

describe("through the stand-in for RDS Proxy", () => {
  it("refuses startup options, as the proxy does (what the by-reference pool sends)", async () => {
    const client = new pg.Client({
      host: "127.0.0.1",
      port: proxy.port,
      user: HOST.user,
      password: HOST.password,
      database: db.database,
      options: "-c default_transaction_read_only=on",
      application_name: "refused-by-design",
    });
    client.on("error", () => undefined);
    await expect(client.connect()).rejects.toThrow(/doesn't support command-line options/);
    await client.end().catch(() => undefined);
  });

  it("saw the hosting pool wait out the first connection, send no startup options, and pin no session", () => {
    // The connection held past the by-reference pool's timeout was the hosting pool's, and it got through.
    expect(FIRST_CONNECTION_DELAY_MS).toBeGreaterThan(CONNECT_TIMEOUT_MS);
    expect(Date.now() - started).toBeGreaterThan(FIRST_CONNECTION_DELAY_MS);
    expect(proxy.startups[0]).toMatchObject({ application_name: "mapgate", user: HOST.user });
    for (const params of proxy.startups) {
      expect(params).not.toHaveProperty("options");
      expect(params).not.toHaveProperty("statement_timeout");
    }
    // Only this file's own client with options was refused, never mapgate's.
    expect(proxy.refused).toEqual(["refused-by-design"]);
    expect(proxy.pins).toEqual([]);
  });

  it("keeps each service in a schema of its own: identity key, typed columns, geometry in EPSG:4326 with a GiST index", async () => {
    const [schema] = (
      await db.admin.query<{ nspname: string }>(
        "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'h\\_%' ORDER BY nspname LIMIT 1",
      )
    ).rows;
    expect(schema?.nspname).toMatch(/^h_[0-9a-f]{32}$/);
    const geometry = await db.admin.query(
      "SELECT f_table_name, srid, type FROM geometry_columns WHERE f_table_schema LIKE 'h\\_%' ORDER BY 1",
    );
    expect(geometry.rows).toContainEqual({ f_table_name: "zones", srid: 4326, type: "MULTIPOLYGON" });
    const indexes = await db.admin.query(
      "SELECT indexdef FROM pg_indexes WHERE schemaname LIKE 'h\\_%' AND tablename = 'zones' ORDER BY 1",
    );
    expect(indexes.rows.map((r) => String(r.indexdef))).toEqual([
      // The global id's btree (edits by global id find their feature through it), the geometry's GiST, the key.
      expect.stringMatching(/^CREATE INDEX .* USING btree \("GlobalID"\)$/),
      expect.stringMatching(/^CREATE INDEX .* USING gist \(geom\)$/),
      expect.stringMatching(/^CREATE UNIQUE INDEX .* USING btree \(fid\)$/),
    ]);
    const identity = await db.admin.query(
      "SELECT attidentity FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname LIKE 'h\\_%' AND c.relname = 'zones' AND a.attname = 'fid'",
    );
    expect(identity.rows).toEqual([{ attidentity: "a" }]);
  });

  it("keeps the hosting password in the data folder alone (0600), never in a log", () => {
    const file = join(suite.engine().dataDir, "hosted-database.json");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({ password: HOST.password });
    const logs = suite.engine().lines.join("\n");
    expect(logs).toContain("mapgate: ready");
    expect(logs).not.toContain(HOST.password);
    expect(logs).not.toContain(encodeURIComponent(HOST.password));
  });

  it("leaves nothing when the database refuses part of a publish: the transaction is rolled back, the name stays free", async () => {
    const itemId = await suite.upload(suite.publisher(), "refused.csv", "name,lat,lon\na,1,2\n");
    const before = await schemas();
    // PostGIS's types live in the public schema: without it the schema is made, then the geometry table refused.
    await db.admin.query("REVOKE USAGE ON SCHEMA public FROM PUBLIC");
    let answer: Record<string, unknown>;
    try {
      answer = await suite.postJson(`${suite.rest()}/content/users/publisher/publish`, suite.publisher(), {
        itemId,
        filetype: "csv",
        publishParameters: JSON.stringify({ name: "Refused" }),
      });
    } finally {
      await db.admin.query("GRANT USAGE ON SCHEMA public TO PUBLIC");
    }
    expect(answer.error).toEqual({
      code: 500,
      message: "Unable to publish item.",
      details: ["The layer's data could not be stored: nothing was published. Try again later."],
    });
    expect(await schemas()).toBe(before);
    const folder = await suite.getJson(`${suite.servicesUrl()}/Hosted`, suite.publisher());
    expect(JSON.stringify(folder.services)).not.toContain("Refused");
    const again = await suite.postJson(`${suite.rest()}/content/users/publisher/publish`, suite.publisher(), {
      itemId,
      filetype: "csv",
      publishParameters: JSON.stringify({ name: "Refused" }),
    });
    expect(JSON.stringify(again)).toMatch(/Hosted\/Refused\/FeatureServer/);
    expect(await schemas()).toBe(before + 1);
  });

  it("keeps a layer's data when the database refuses an append or an overwrite (500), leaving no staged tables", async () => {
    const file = await suite.upload(suite.publisher(), "refused-more.csv", "name,lat,lon\nb,3,4\n");
    const layer = `${suite.servicesUrl()}/Hosted/Refused/FeatureServer/0`;
    const rows = async () =>
      (
        (await suite.getJson(`${layer}/query?where=1%3D1&outFields=name&orderByFields=fid`, suite.publisher()))
          .features as { attributes: Record<string, unknown> }[]
      ).map((f) => f.attributes);
    expect(await rows()).toEqual([{ fid: 1, name: "a" }]);
    const before = await schemas();
    // PostGIS's functions live in the public schema: without it the rows' geometry cannot be made.
    await db.admin.query("REVOKE USAGE ON SCHEMA public FROM PUBLIC");
    let appended: Record<string, unknown>;
    let overwritten: Record<string, unknown>;
    try {
      appended = await suite.postJson(`${layer}/append`, suite.publisher(), { appendItemId: file });
      overwritten = await suite.postJson(`${suite.rest()}/content/users/publisher/publish`, suite.publisher(), {
        itemId: file,
        filetype: "csv",
        overwrite: "true",
        publishParameters: JSON.stringify({ name: "Refused" }),
      });
    } finally {
      await db.admin.query("GRANT USAGE ON SCHEMA public TO PUBLIC");
    }
    expect(appended.error).toEqual({
      code: 500,
      message: "Unable to append data.",
      details: ["The layer's data could not be stored: nothing was appended. Try again later."],
    });
    expect(overwritten.error).toEqual({
      code: 500,
      message: "Unable to publish item.",
      details: ["The layer's data could not be stored: the service keeps its data. Try again later."],
    });
    expect(await schemas()).toBe(before);
    expect(await rows()).toEqual([{ fid: 1, name: "a" }]);
    // The service takes changes again once the database does.
    expect(await suite.postJson(`${layer}/append`, suite.publisher(), { appendItemId: file })).toEqual({
      success: true,
    });
    expect(await rows()).toEqual([
      { fid: 1, name: "a" },
      { fid: 2, name: "b" },
    ]);
  });
});
