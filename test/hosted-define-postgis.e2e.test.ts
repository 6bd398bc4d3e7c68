// Hosted feature services defined by their clients, kept in PostgreSQL + PostGIS (MAPGATE_HOSTED_DATABASE) reached
// through a stand-in for RDS Proxy in front of a paused Aurora cluster (test/helpers/pg-proxy.ts): the shared
// definition suite (test/helpers/hosted-define-cases.ts) runs through it unchanged, GDAL reading each service's
// schema from the database; then what the tables are made of, and what the proxy saw, are checked: no startup
// options, nothing that would pin a session.
import { describe, expect, it } from "vitest";
import { hostedDefineSuite } from "./helpers/hosted-define-cases.ts";
import { jsonCalls, signIn } from "./helpers/http.ts";
import { PASSWORDS } from "./helpers/engine.ts";
import { hostGdalSource, hostThroughProxy, type PgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

/** A resuming cluster's wait for the first connection (the full one, past 5 s, is proven by the publishing suite). */
const FIRST_CONNECTION_DELAY_MS = 1_500;

let db: Postgres;
let proxy: PgProxy;

const schemaOf = (serviceItemId: string) => `h_${serviceItemId}`;

const suite = hostedDefineSuite({
  start: async () => {
    db = await startPostgres();
    const hosted = await hostThroughProxy(db, FIRST_CONNECTION_DELAY_MS);
    proxy = hosted.proxy;
    return hosted.env;
  },
  stop: async () => {
    await proxy?.close();
    await db?.stop();
  },
  // One schema, whose tables GDAL names without it; tables without geometry listed too.
  gdalSource: (_dataDir, serviceItemId) => [
    "-oo",
    "LIST_ALL_TABLES=YES",
    hostGdalSource(db, ` schemas=${schemaOf(serviceItemId)}`),
  ],
  exists: async (_dataDir, serviceItemId) =>
    (await db.admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schemaOf(serviceItemId)])).rowCount === 1,
  dataBytes: async (_dataDir, serviceItemId) =>
    Number(
      (
        await db.admin.query(
          `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::float8 AS n FROM pg_class c
            JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
          [schemaOf(serviceItemId)],
        )
      ).rows[0]?.n,
    ),
  // Aliases are the columns' comments.
  aliases: async (_dataDir, serviceItemId, table) => {
    const { rows } = await db.admin.query<{ attname: string; comment: string }>(
      `SELECT a.attname, col_description(c.oid, a.attnum) AS comment FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped
          AND col_description(c.oid, a.attnum) IS NOT NULL ORDER BY a.attnum`,
      [schemaOf(serviceItemId), table],
    );
    return Object.fromEntries(rows.map((r) => [r.attname, r.comment]));
  },
  // Single-column btree indexes of the table, its key's aside.
  indexedColumns: async (_dataDir, serviceItemId, table) => {
    const { rows } = await db.admin.query<{ attname: string }>(
      `SELECT a.attname FROM pg_index x JOIN pg_class c ON c.oid = x.indrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class i ON i.oid = x.indexrelid
        JOIN pg_am am ON am.oid = i.relam JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = x.indkey[0]
        WHERE n.nspname = $1 AND c.relname = $2 AND NOT x.indisprimary AND x.indnatts = 1 AND am.amname = 'btree'
        ORDER BY a.attname`,
      [schemaOf(serviceItemId), table],
    );
    return rows.map((r) => r.attname);
  },
});

describe("in the hosting database", () => {
  const rest = () => `${suite.engine().ready.https}/portal/sharing/rest`;
  const admin = () => `${suite.engine().ready.https}/arcgis/rest/admin/services`;
  const { getJson, postJson } = jsonCalls(() => suite.engine().ca);

  it("makes each field's column as wide as its type, with an identity key and geometry in EPSG:4326 with a GiST index", async () => {
    const token = await signIn(rest(), suite.engine().ca, "publisher", PASSWORDS.publisher);
    const created = await postJson(`${rest()}/content/users/publisher/createService`, token, {
      outputType: "featureService",
      createParameters: JSON.stringify({ name: "Typed" }),
    });
    expect(created).toMatchObject({ success: true });
    const schema = schemaOf(String(created.itemId));
    // An empty service is an empty schema, ready for layers.
    expect((await db.admin.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema])).rowCount).toBe(1);
    const added = await postJson(`${admin()}/Hosted/Typed/FeatureServer/addToDefinition`, token, {
      addToDefinition: JSON.stringify({
        layers: [
          {
            name: "Lines",
            geometryType: "esriGeometryPolyline",
            objectIdField: "OBJECTID",
            fields: [
              { name: "OBJECTID", type: "esriFieldTypeOID" },
              { name: "Small", type: "esriFieldTypeSmallInteger" },
              { name: "Whole", type: "esriFieldTypeInteger" },
              { name: "Single", type: "esriFieldTypeSingle" },
              { name: "Wide", type: "esriFieldTypeDouble" },
              { name: "Label", type: "esriFieldTypeString", length: 40, alias: "It's a \\label; ok" },
              { name: "Seen", type: "esriFieldTypeDate" },
            ],
          },
        ],
      }),
    });
    expect(added).toEqual({ success: true, layers: [{ name: "Lines", id: 0 }], tables: [] });
    const columns = await db.admin.query(
      `SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type, a.attidentity,
          col_description(a.attrelid, a.attnum) AS comment FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relname = 'Lines' AND a.attnum > 0 ORDER BY a.attnum`,
      [schema],
    );
    expect(columns.rows).toEqual([
      { attname: "OBJECTID", type: "integer", attidentity: "a", comment: null },
      { attname: "Small", type: "smallint", attidentity: "", comment: null },
      { attname: "Whole", type: "integer", attidentity: "", comment: null },
      { attname: "Single", type: "real", attidentity: "", comment: null },
      { attname: "Wide", type: "double precision", attidentity: "", comment: null },
      // The alias kept as it was given, whatever its quotes, backslashes and semicolons.
      { attname: "Label", type: "character varying(40)", attidentity: "", comment: "It's a \\label; ok" },
      { attname: "Seen", type: "timestamp with time zone", attidentity: "", comment: null },
      // The global id and editor tracking every new layer has.
      { attname: "GlobalID", type: "character varying(38)", attidentity: "", comment: null },
      { attname: "CreationDate", type: "timestamp with time zone", attidentity: "", comment: null },
      { attname: "Creator", type: "character varying(128)", attidentity: "", comment: null },
      { attname: "EditDate", type: "timestamp with time zone", attidentity: "", comment: null },
      { attname: "Editor", type: "character varying(128)", attidentity: "", comment: null },
      { attname: "geom", type: "geometry(MultiLineString,4326)", attidentity: "", comment: null },
    ]);
    const indexes = await db.admin.query("SELECT indexdef FROM pg_indexes WHERE schemaname = $1 ORDER BY 1", [schema]);
    expect(indexes.rows.map((r) => String(r.indexdef))).toEqual([
      // The global id's btree: edits by global id find their feature through it.
      expect.stringMatching(/^CREATE INDEX .* USING btree \("GlobalID"\)$/),
      expect.stringMatching(/^CREATE INDEX .* USING gist \(geom\)$/),
      expect.stringMatching(/^CREATE UNIQUE INDEX .* USING btree \("OBJECTID"\)$/),
      // The edit log's keys and the layers' editing record's key (mapgate's own tables, beside the layers).
      expect.stringMatching(
        /^CREATE UNIQUE INDEX mapgate_edit_log_moment_edit_id_key .* USING btree \(moment, edit_id\)$/,
      ),
      expect.stringMatching(/^CREATE UNIQUE INDEX mapgate_edit_log_pkey .* USING btree \(edit_id\)$/),
      expect.stringMatching(/^CREATE UNIQUE INDEX mapgate_editing_pkey .* USING btree \(table_name\)$/),
    ]);
    // Each field served as the type it was defined with.
    const layer = await getJson(
      `${suite.engine().ready.https}/arcgis/rest/services/Hosted/Typed/FeatureServer/0`,
      token,
    );
    expect(
      (layer.fields as { name: string; type: string; alias: string }[]).map((f) => [f.name, f.type, f.alias]),
    ).toEqual([
      ["OBJECTID", "esriFieldTypeOID", "OBJECTID"],
      ["Small", "esriFieldTypeSmallInteger", "Small"],
      ["Whole", "esriFieldTypeInteger", "Whole"],
      ["Single", "esriFieldTypeSingle", "Single"],
      ["Wide", "esriFieldTypeDouble", "Wide"],
      ["Label", "esriFieldTypeString", "It's a \\label; ok"],
      ["Seen", "esriFieldTypeDate", "Seen"],
      ["GlobalID", "esriFieldTypeGlobalID", "GlobalID"],
      ["CreationDate", "esriFieldTypeDate", "CreationDate"],
      ["Creator", "esriFieldTypeString", "Creator"],
      ["EditDate", "esriFieldTypeDate", "EditDate"],
      ["Editor", "esriFieldTypeString", "Editor"],
    ]);
    // The schema records the definition's revision, which readers elsewhere wait for, beside when it was made.
    const comment = await db.admin.query(
      "SELECT obj_description(oid, 'pg_namespace') AS c FROM pg_namespace WHERE nspname = $1",
      [schema],
    );
    expect(comment.rows).toEqual([{ c: expect.stringMatching(/^mapgate: made \d+ revision 1$/) }]);
  });

  it("names a table past PostgreSQL's 63 bytes by its start, cut between characters, and a digest; the layer keeps its name", async () => {
    const token = await signIn(rest(), suite.engine().ca, "publisher", PASSWORDS.publisher);
    const name = "Relevés de la station météorologique principale du réseau régional (été)";
    expect(Buffer.byteLength(name)).toBeGreaterThan(63);
    const added = await postJson(`${admin()}/Hosted/Typed/FeatureServer/addToDefinition`, token, {
      addToDefinition: JSON.stringify({ tables: [{ name, fields: [{ name: "Value", type: "esriFieldTypeDouble" }] }] }),
    });
    expect(added).toEqual({ success: true, layers: [], tables: [{ name, id: 1 }] });
    const url = `${suite.engine().ready.https}/arcgis/rest/services/Hosted/Typed/FeatureServer/1`;
    expect(await getJson(url, token)).toMatchObject({ id: 1, name, type: "Table" });
    expect(await getJson(`${url}/query?where=Value%20IS%20NULL&returnCountOnly=true`, token)).toEqual({ count: 0 });
    const tables = await db.admin.query<{ relname: string }>(
      "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname LIKE 'h\\_%' AND c.relname LIKE 'Relev%' AND c.relkind = 'r'",
    );
    expect(tables.rows).toEqual([{ relname: expect.stringMatching(/^Relevés de la station .*_[0-9a-f]{8}$/) }]);
    expect(Buffer.byteLength(tables.rows[0]?.relname ?? "")).toBeLessThanOrEqual(63);
  });

  it("saw the hosting pool send no startup options, and pin no session", () => {
    expect(proxy.startups.length).toBeGreaterThan(0);
    for (const params of proxy.startups) {
      expect(params).not.toHaveProperty("options");
      expect(params).not.toHaveProperty("statement_timeout");
    }
    expect(proxy.refused).toEqual([]);
    expect(proxy.pins).toEqual([]);
  });
});
