// The sweep of what no record names, through the real local engine, which sweeps at start: on GeoPackage hosting,
// and on PostgreSQL + PostGIS behind the stand-in for RDS Proxy. Orphans are made as a crash between keeping a
// service's data and the transaction that makes its service leaves them: a GeoPackage file (a copy of a real
// service's) or an `h_<id>` schema with a table (made by mapgate's own hosting login, noted as mapgate notes the
// schemas it makes) that no item names; their age is set by the file's time or the schema's note. Uploads in parts
// are abandoned by setting their parts' times back. After a restart: old orphans, old staging files, uploads idle
// for 8 days and parts whose item is gone are removed, with log lines naming ids and sizes; kept services (old or
// not), young orphans and an upload idle for 2 days are untouched; the quota counts the abandoned parts no more.
import { copyFileSync, existsSync, mkdirSync, readdirSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody, signIn } from "./helpers/http.ts";
import { type PgProxy, startPgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

type Json = Record<string, unknown>;
const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;
const CSV = "name,latitude,longitude\nA,40.1,-105.2\nB,40.2,-105.3\n";
const newId = () => [...Array(32)].map(() => Math.floor(Math.random() * 16).toString(16)).join("");

/** One engine's calls, as the publisher. */
function client(get: () => RunningEngine) {
  const { getJson, postJson } = jsonCalls(() => get().ca);
  const rest = () => `${get().ready.https}/portal/sharing/rest`;
  let token = "";
  return {
    rest,
    getJson,
    postJson,
    token: () => token,
    signIn: async () => {
      token = await signIn(rest(), get().ca, "publisher", PASSWORDS.publisher);
    },
    usage: async () => Number((await getJson(`${rest()}/community/self`, token)).storageUsage),
    /** Publishes a CSV of two points as a hosted layer: its service item id. */
    publish: async (name: string): Promise<string> => {
      const { body, type } = await multipartBody(
        { f: "json", token, type: "CSV", title: name },
        { file: { name: `${name}.csv`, bytes: Buffer.from(CSV) } },
      );
      const added = (
        await call(`${rest()}/content/users/publisher/addItem`, {
          ca: get().ca,
          body,
          headers: { "content-type": type },
        })
      ).json<{ id: string }>();
      const published = (await postJson(`${rest()}/content/users/publisher/publish`, token, {
        itemId: added.id,
        filetype: "csv",
        publishParameters: JSON.stringify({ name, locationType: "coordinates" }),
      })) as { services: { serviceItemId: string; serviceurl: string }[] };
      const service = published.services[0];
      if (!service) throw new Error(`not published: ${JSON.stringify(published)}`);
      return service.serviceItemId;
    },
    /** Starts an upload in parts and adds `parts` parts: its item id. */
    upload: async (parts: number): Promise<string> => {
      const started = (await postJson(`${rest()}/content/users/publisher/addItem`, token, {
        multipart: "true",
        filename: "big.csv",
        type: "CSV",
      })) as { id: string };
      for (let n = 1; n <= parts; n++) {
        const { body, type } = await multipartBody(
          { f: "json", token },
          { file: { name: "blob", bytes: Buffer.from(`${n === 1 ? CSV : "C,40.3,-105.4\n"}`) } },
        );
        const added = (
          await call(`${rest()}/content/users/publisher/items/${started.id}/addPart?partNum=${n}`, {
            ca: get().ca,
            body,
            headers: { "content-type": type },
          })
        ).json<Json>();
        expect(added).toEqual({ success: true, id: started.id });
      }
      return started.id;
    },
    item: (id: string) => getJson(`${rest()}/content/items/${id}`, token),
    count: async (serviceItemId: string) => {
      const item = (await getJson(`${rest()}/content/items/${serviceItemId}`, token)) as { url: string };
      return postJson(`${item.url}/0/query`, token, { where: "1=1", returnCountOnly: "true" });
    },
  };
}

/** Sets a file's (or folder's) times back to `ms` ago. */
const age = (path: string, ms: number) => {
  const when = new Date(Date.now() - ms);
  utimesSync(path, when, when);
};

/** An upload's parts, its mark and their folder, all last touched `ms` ago. */
function ageUpload(dataDir: string, itemId: string, ms: number) {
  const parts = join(dataDir, "item-files", "items", "parts", itemId);
  for (const name of readdirSync(parts)) age(join(parts, name), ms);
  age(parts, ms);
  age(join(dataDir, "item-files", "items", "uploads", itemId), ms);
}

const partsOf = (dataDir: string, itemId: string) => {
  const dir = join(dataDir, "item-files", "items", "parts", itemId);
  return existsSync(dir) ? readdirSync(dir).sort() : [];
};

/** Waits for the engine's start sweep to have logged its summary. */
async function swept(engine: RunningEngine): Promise<Json[]> {
  for (let waited = 0; waited < 60_000; waited += 200) {
    const logs = engine.lines.flatMap((l) => {
      try {
        return [JSON.parse(l) as Json];
      } catch {
        return [];
      }
    });
    if (logs.some((l) => l.message === "sweep done")) return logs;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`no sweep within 60 s:\n${engine.lines.slice(-20).join("\n")}`);
}

/** The uploads part of the suite, the same on both stores. */
async function makeUploads(c: ReturnType<typeof client>, dataDir: string) {
  const before = await c.usage();
  const abandoned = await c.upload(2);
  const idle = await c.upload(1);
  const charged = await c.usage();
  expect(charged).toBeGreaterThan(before);
  ageUpload(dataDir, abandoned, 8 * DAY);
  ageUpload(dataDir, idle, 2 * DAY);
  // Parts whose item is gone (a delete that stopped before removing them).
  const stray = newId();
  const strayDir = join(dataDir, "item-files", "items", "parts", stray);
  mkdirSync(strayDir, { recursive: true });
  writeFileSync(join(strayDir, "00001"), "x");
  age(join(strayDir, "00001"), 2 * HOUR);
  age(strayDir, 2 * HOUR);
  return { before, abandoned, idle, stray, idleBytes: charged - before - partBytes(dataDir, abandoned) };
}

const partBytes = (dataDir: string, itemId: string) =>
  partsOf(dataDir, itemId).reduce(
    (n, name) => n + statSync(join(dataDir, "item-files", "items", "parts", itemId, name)).size,
    0,
  );

async function checkUploads(
  c: ReturnType<typeof client>,
  dataDir: string,
  logs: Json[],
  made: Awaited<ReturnType<typeof makeUploads>>,
) {
  expect(await c.item(made.abandoned)).toMatchObject({ error: { code: 400, messageCode: "CONT_0001" } });
  expect(partsOf(dataDir, made.abandoned)).toEqual([]);
  expect(existsSync(join(dataDir, "item-files", "items", "uploads", made.abandoned))).toBe(false);
  expect(partsOf(dataDir, made.stray)).toEqual([]);
  // Idle for two days: still the owner's, its part kept.
  expect(await c.item(made.idle)).toMatchObject({ id: made.idle });
  expect(partsOf(dataDir, made.idle)).toEqual(["00001"]);
  expect(await c.usage()).toBe(made.before + made.idleBytes);
  expect(logs).toContainEqual(
    expect.objectContaining({ message: "abandoned upload removed", itemId: made.abandoned, idleDays: 8 }),
  );
  expect(logs).toContainEqual(
    expect.objectContaining({ message: "parts no upload needs removed", itemId: made.stray }),
  );
  // Nothing of the user's is in those lines: no file name, no title.
  expect(JSON.stringify(logs.filter((l) => String(l.message).includes("removed")))).not.toContain("big.csv");
}

describe("on GeoPackage hosting", () => {
  let engine: RunningEngine;
  const c = client(() => engine);
  const hosted = (id: string) => join(engine.dataDir, "hosted", `${id}.gpkg`);

  // The redelivery timer (which sweeps when an hour has passed) every second.
  const env = { MAPGATE_REDELIVERY_SECONDS: "1" };

  beforeAll(async () => {
    engine = await startEngine({ env });
    await c.signIn();
  }, 120_000);
  afterAll(async () => {
    await engine?.stop();
  });

  it("drops old data no service names, and abandoned uploads, at start; keeps services and young data", async () => {
    const kept = await c.publish("Kept_sites");
    const oldKept = await c.publish("Old_sites");
    age(hosted(oldKept), 3 * HOUR);
    const orphan = newId();
    const young = newId();
    copyFileSync(hosted(kept), hosted(orphan));
    copyFileSync(hosted(kept), hosted(young));
    age(hosted(orphan), 2 * HOUR);
    const orphanBytes = statSync(hosted(orphan)).size;
    const staging = join(engine.dataDir, "hosted", `.${newId()}.gpkg.0123456789ab.part`);
    writeFileSync(staging, "half a file");
    age(staging, 2 * HOUR);
    const youngStaging = join(engine.dataDir, "hosted", `.${newId()}.gpkg.ba9876543210.part`);
    writeFileSync(youngStaging, "being written");
    const uploads = await makeUploads(c, engine.dataDir);

    await engine.stop();
    engine = await startEngine({ dataDir: engine.dataDir, env });
    await c.signIn();
    const logs = await swept(engine);

    expect(existsSync(hosted(orphan))).toBe(false);
    expect(existsSync(staging)).toBe(false);
    expect(existsSync(hosted(young))).toBe(true);
    expect(existsSync(youngStaging)).toBe(true);
    expect(await c.count(kept)).toEqual({ count: 2 });
    expect(await c.count(oldKept)).toEqual({ count: 2 });
    expect(logs).toContainEqual(
      expect.objectContaining({
        message: "hosted data no service names dropped",
        itemId: orphan,
        bytes: orphanBytes,
        store: "geopackage",
      }),
    );
    expect(logs).toContainEqual(
      expect.objectContaining({ message: "hosted data staging file removed", bytes: "half a file".length }),
    );
    expect(logs).toContainEqual(
      expect.objectContaining({ message: "sweep done", hostedData: 1, staging: 1, uploads: 2, database: false }),
    );
    await checkUploads(c, engine.dataDir, logs, uploads);
  });

  it("sweeps once an hour: the timer's runs within the hour do nothing", async () => {
    const orphan = newId();
    const services = readdirSync(join(engine.dataDir, "hosted")).find((n) => /^[0-9a-f]{32}\.gpkg$/.test(n));
    copyFileSync(join(engine.dataDir, "hosted", services ?? ""), hosted(orphan));
    age(hosted(orphan), 2 * HOUR);
    // The timer (every second here: each run writes its metrics) finds the hour claimed by the start's sweep.
    const runs = () => engine.lines.filter((l) => l.includes("OutboxOldestAgeSeconds")).length;
    const before = runs();
    await new Promise((r) => setTimeout(r, 2500));
    expect(runs()).toBeGreaterThanOrEqual(before + 2);
    expect(existsSync(hosted(orphan))).toBe(true);
    expect(engine.lines.filter((l) => l.includes('"sweep done"'))).toHaveLength(1);
  });
});

describe("on PostgreSQL + PostGIS hosting", () => {
  const HOST = { user: "mapgate_host", password: `host-${Math.random().toString(36).slice(2)}` };
  let db: Postgres;
  let proxy: PgProxy;
  let engine: RunningEngine;
  let env: Record<string, string>;
  const c = client(() => engine);
  /** A connection as mapgate's own hosting login (what owns the schemas it makes). */
  const asHost = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
    const host = new pg.Client({ host: "127.0.0.1", port: db.port, database: db.database, ...HOST });
    await host.connect();
    try {
      return await work(host);
    } finally {
      await host.end();
    }
  };
  const schemas = async () =>
    (
      await db.admin.query<{ nspname: string; note: string | null }>(
        `SELECT nspname, obj_description(oid, 'pg_namespace') AS note FROM pg_namespace WHERE nspname ~ '^h_'`,
      )
    ).rows;
  /** An orphan as a crash leaves one: the schema and a table of rows, noted as made `ms` ago (or not noted). */
  const orphanSchema = (id: string, ms: number | undefined) =>
    asHost(async (host) => {
      await host.query(`CREATE SCHEMA h_${id}`);
      await host.query(
        `CREATE TABLE h_${id}.sites AS SELECT g AS fid, 'site ' || g AS name FROM generate_series(1, 50) g`,
      );
      if (ms !== undefined) await host.query(`COMMENT ON SCHEMA h_${id} IS 'mapgate: made ${Date.now() - ms}'`);
    });

  beforeAll(async () => {
    db = await startPostgres();
    await db.admin.query(`CREATE ROLE ${HOST.user} LOGIN PASSWORD '${HOST.password}'`);
    await db.admin.query(`GRANT CREATE ON DATABASE ${db.database} TO ${HOST.user}`);
    await db.admin.query("CREATE EXTENSION IF NOT EXISTS postgis");
    proxy = await startPgProxy(db.port, 500);
    env = {
      MAPGATE_HOSTED_DATABASE: `postgresql://${HOST.user}:${HOST.password}@127.0.0.1:${proxy.port}/${db.database}?sslmode=disable`,
    };
    engine = await startEngine({ env });
    await c.signIn();
  }, 120_000);
  afterAll(async () => {
    await engine?.stop();
    await proxy?.close();
    await db?.stop();
  });

  it("drops old schemas no service names, notes unnoted ones, keeps services and young schemas", async () => {
    const kept = await c.publish("Kept_pg");
    const oldKept = await c.publish("Old_pg");
    expect((await schemas()).find((s) => s.nspname === `h_${kept}`)?.note).toMatch(/^mapgate: made \d+ revision 0$/);
    await asHost((host) => host.query(`COMMENT ON SCHEMA h_${oldKept} IS 'mapgate: made ${Date.now() - 3 * HOUR}'`));
    const orphan = newId();
    const young = newId();
    const unnoted = newId();
    await orphanSchema(orphan, 2 * HOUR);
    await orphanSchema(young, 0);
    await orphanSchema(unnoted, undefined);
    // Its comment holds a definition revision alone (as before the comment held when it was made too): kept.
    await asHost((host) => host.query(`COMMENT ON SCHEMA h_${unnoted} IS '3'`));
    const uploads = await makeUploads(c, engine.dataDir);

    await engine.stop();
    engine = await startEngine({ dataDir: engine.dataDir, env });
    await c.signIn();
    const logs = await swept(engine);

    const left = await schemas();
    const names = left.map((s) => s.nspname);
    expect(names).not.toContain(`h_${orphan}`);
    expect(names).toEqual(expect.arrayContaining([`h_${kept}`, `h_${oldKept}`, `h_${young}`, `h_${unnoted}`]));
    // A schema made before its making was noted is noted now: swept an hour from now if nothing names it.
    const note = left.find((s) => s.nspname === `h_${unnoted}`)?.note ?? "";
    expect(note).toMatch(/^mapgate: made \d+ revision 3$/);
    const noted = Number(/made (\d+)/.exec(note)?.[1]);
    expect(Date.now() - noted).toBeLessThan(5 * 60 * 1000);
    expect(await c.count(kept)).toEqual({ count: 2 });
    expect(await c.count(oldKept)).toEqual({ count: 2 });
    const dropped = logs.find((l) => l.message === "hosted data no service names dropped");
    expect(dropped).toMatchObject({ itemId: orphan, store: "postgis", ageMinutes: 120 });
    expect(dropped?.bytes).toBeGreaterThan(0);
    expect(logs).toContainEqual(
      expect.objectContaining({ message: "sweep done", database: true, hostedData: 1, uploads: 2 }),
    );
    await checkUploads(c, engine.dataDir, logs, uploads);
    // Nothing the stand-in for RDS Proxy would pin a session for.
    expect(proxy.pins).toEqual([]);
  });
});
