// Data stores registered by their users through the portal, on the ArcGIS wire as clients speak it: the real
// @esri/arcgis-rest-portal client adds the `Data Store` item and reads its data back, plain form posts drive the
// `datastores` operations, against the real engine and a throwaway PostgreSQL + PostGIS on loopback. The
// password goes to the store's secret and is never answered, kept in item data or logged.
import { execFileSync } from "node:child_process";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_GEOPACKAGE_PATH } from "#infra/admin/demo.ts";
import { demoOrganization, type DemoOrganization } from "./helpers/admin.ts";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call } from "./helpers/http.ts";
import { jobEnd } from "./helpers/publish.ts";
import { blackHole, copyGeoPackageTable, type Postgres, startPostgres } from "./helpers/postgres.ts";

let engine: RunningEngine;
let db: Postgres;
let org: DemoOrganization;
let token: string;
let adminToken: string;
let userToken: string;
/** A login of its own for the portal's store (ArcGIS's connection string cannot hold the reader's `;`). */
const login = { user: "portal_reader", password: `Portal-pw-${Math.random().toString(36).slice(2)}` };
const newPassword = `Rotated-pw-${Math.random().toString(36).slice(2)}`;
/** The login's password now (rotated by a test below). */
let password = login.password;
let storeId: string;
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const stores = () => `${rest()}/portals/self/datastores`;

const get = async (url: string) => (await call(url, { ca: engine.ca })).json<Record<string, unknown>>();
const post = async (url: string, fields: Record<string, string>) =>
  (await call(url, { ca: engine.ca, body: new URLSearchParams({ f: "json", ...fields }).toString() })).json<
    Record<string, unknown>
  >();
const op = (operation: string, fields: Record<string, string>, as = token) =>
  post(`${stores()}/${operation}`, { token: as, ...fields });

const arcgisString = (password: string, database = db.database, port = db.port) =>
  `SERVER=127.0.0.1;INSTANCE=sde:postgresql:127.0.0.1,${port};DBCLIENT=postgresql;DATABASE=${database};` +
  `USER=${login.user};PASSWORD=${password};AUTHENTICATION_MODE=DBMS`;
const storeJson = (name: string, connectionString: string) =>
  JSON.stringify({
    type: "egdb",
    path: `/enterpriseDatabases/${name}`,
    info: { isManaged: false, dataStoreConnectionType: "shared", connectionString },
  });

/** Starts a data store operation that answers a job, and waits for the job's end. */
async function job(operation: string, fields: Record<string, string>): Promise<Record<string, unknown>> {
  const started = await op(operation, fields);
  return jobEnd(engine, token, started);
}

const secretFiles = () => readdirSync(join(engine.dataDir, "datastore-secrets")).sort();

beforeAll(async () => {
  [engine, db] = await Promise.all([startEngine(), startPostgres()]);
  org = demoOrganization(engine.dataDir);
  const tokenOf = async (username: string, password: string) =>
    (await post(`${rest()}/generateToken`, { username, password })).token as string;
  [token, adminToken, userToken] = await Promise.all([
    tokenOf("publisher", PASSWORDS.publisher),
    tokenOf("admin", PASSWORDS.admin),
    tokenOf("user", PASSWORDS.user),
  ]);
  await copyGeoPackageTable(join(engine.dataDir, "demo-store", DEMO_GEOPACKAGE_PATH), "countries", db.admin);
  await db.admin.query(`CREATE ROLE ${login.user} LOGIN PASSWORD '${login.password}'`);
  await db.admin.query(`GRANT USAGE ON SCHEMA public TO ${login.user}`);
  await db.admin.query(`GRANT SELECT ON ALL TABLES IN SCHEMA public TO ${login.user}`);
}, 120_000);

/** Folders of this file's own (the TLS certificate), removed after it. */
const folders: string[] = [];

afterAll(async () => {
  await engine?.stop();
  await db?.stop();
  for (const f of folders) rmSync(f, { recursive: true, force: true });
});

/** Nothing any answer, page or log line of the engine holds may contain a password. */
function neverShown(...texts: unknown[]): void {
  for (const text of [...texts.map((t) => JSON.stringify(t)), engine.lines.join("\n")]) {
    expect(text).not.toContain(login.password);
    expect(text).not.toContain(newPassword);
  }
}

describe("a publisher's database, from registration to removal", () => {
  it("registers with addItem (ArcGIS's connection string): the password moved to the secret, redacted in the data", async () => {
    const [added, data, item] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "createItem",
        options: {
          item: {
            title: "Countries in PostGIS",
            type: "Data Store",
            tags: ["pg", "world"],
            text: storeJson("countries_pg", arcgisString(login.password)),
          },
        },
      },
    ]).then(async ([a]) => {
      const id = String((a as { id?: unknown }).id);
      const [d, i] = await portalCalls(engine, "publisher", PASSWORDS.publisher, [
        { fn: "getItemData", options: { id } },
        { fn: "getItem", options: { id } },
      ]);
      return [a, d, i];
    })) as Record<string, unknown>[];
    expect(added).toMatchObject({ success: true, folder: null });
    storeId = String(added?.id);
    expect(storeId).toMatch(/^[0-9a-f]{32}$/);
    expect(item).toMatchObject({ id: storeId, type: "Data Store", owner: "publisher", access: "private" });
    expect(item?.tags).toEqual(["pg", "world"]);
    expect(data).toEqual({
      type: "egdb",
      path: "/enterpriseDatabases/countries_pg",
      info: {
        isManaged: false,
        dataStoreConnectionType: "shared",
        connectionString: `postgresql://${login.user}:********@127.0.0.1:${db.port}/${db.database}?sslmode=prefer`,
      },
    });
    // One secret, the engine's user's alone, holding the password; nowhere else.
    const file = join(engine.dataDir, "datastore-secrets", `${storeId}.json`);
    expect(JSON.parse(readFileSync(file, "utf8"))).toEqual({
      password: login.password,
      for: { host: "127.0.0.1", port: db.port, database: db.database, user: login.user },
    });
    neverShown(added, data, item);
  });

  it("validate: success, a wrong password, an unreachable host and a database without PostGIS, each within seconds", async () => {
    const validate = (fields: Record<string, string>) => op("validate", { serverId: org.serverId, ...fields });
    expect(await validate({ datastoreId: storeId })).toEqual({ status: "success" });
    const hole = await blackHole();
    try {
      const started = Date.now();
      const [wrong, unreachable, noPostGis] = await Promise.all([
        validate({ datastore: storeJson("x", arcgisString(`${login.password}-wrong`)) }),
        validate({ datastore: storeJson("x", arcgisString(login.password, db.database, hole.port)) }),
        validate({ datastore: storeJson("x", arcgisString(login.password, "postgres")) }),
      ]);
      expect(Date.now() - started).toBeLessThan(9_000);
      expect(wrong.status).toMatch(/refused the login/);
      expect(unreachable.status).toMatch(/cannot be reached/);
      expect(noPostGis.status).toMatch(/PostGIS is not installed/);
      neverShown(wrong, unreachable, noPostGis);
    } finally {
      await hole.close();
    }
  });

  it("addToServer, getServers, then describe, publishLayers and a query of the published layer", async () => {
    expect(await op("getServers", { datastoreId: storeId })).toEqual({ servers: [] });
    expect(await op("addToServer", { datastoreId: storeId, serverId: org.serverId })).toEqual({ success: true });
    const servers = (await op("getServers", { datastoreId: storeId })).servers as { id: string; url: string }[];
    expect(servers.map((s) => s.id)).toEqual([org.serverId]);
    expect(servers[0]?.url).toBe(`${engine.ready.https}/arcgis`);
    const described = await job("describe", { datastoreId: storeId, serverId: org.serverId, path: "/" });
    expect(described).toMatchObject({ status: "completed" });
    const children = (described.result as { children: { name: string }[] }).children.map((c) => c.name);
    expect(children).toContain("public.countries");
    const published = await job("allDatasets/publishLayers", {
      datastoreId: storeId,
      serverId: org.serverId,
      serverFolder: "PortalPg",
    });
    expect(published).toMatchObject({ status: "completed", result: { published: 1 } });
    const count = await countries();
    expect(count).toBe(241);
  });

  it("refreshServer after a password change: the new one (updated in the item) is used without a restart", async () => {
    await db.admin.query(`ALTER ROLE ${login.user} PASSWORD '${newPassword}'`);
    password = newPassword;
    // Sessions opened with the old password survive a change; ended here, as a database restart would.
    await db.admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = $1`, [login.user]);
    const uri = `postgresql://${login.user}:${newPassword}@127.0.0.1:${db.port}/${db.database}`;
    const updated = await post(`${rest()}/content/users/publisher/items/${storeId}/update`, {
      token,
      text: storeJson("countries_pg", uri),
    });
    expect(updated).toEqual({ success: true, id: storeId });
    expect(JSON.parse(readFileSync(join(engine.dataDir, "datastore-secrets", `${storeId}.json`), "utf8"))).toEqual({
      password: newPassword,
      for: { host: "127.0.0.1", port: db.port, database: db.database, user: login.user },
    });
    // The published layer still holds the connection it was published with, and its pool the old password.
    expect(await countries()).toBeUndefined();
    expect(await op("refreshServer", { datastoreId: storeId, serverId: org.serverId })).toEqual({ success: true });
    expect(await countries()).toBe(241);
    // The item's data as read can be sent back unchanged: the redacted password keeps the one in the secret.
    const data = await get(`${rest()}/content/items/${storeId}/data?f=json&token=${token}`);
    expect(
      await post(`${rest()}/content/users/publisher/items/${storeId}/update`, { token, text: JSON.stringify(data) }),
    ).toEqual({ success: true, id: storeId });
    expect(await op("refreshServer", { datastoreId: storeId, serverId: org.serverId })).toEqual({ success: true });
    expect(await countries()).toBe(241);
    neverShown(updated, data);
  });

  it("removeFromServer is refused while its layers exist (naming them); deleteLayers, then it is removed and deleted", async () => {
    const refused = await op("removeFromServer", { datastoreId: storeId, serverId: org.serverId });
    expect(refused).toMatchObject({ error: { code: 400 } });
    expect(String((refused.error as { details: string[] }).details[0])).toMatch(
      /^Services published from this data store exist: PortalPg\/public_countries_[0-9a-f]{6} \(FeatureServer\)\. .*deleteLayers/,
    );
    const deletingItem = await post(`${rest()}/content/users/publisher/items/${storeId}/delete`, { token });
    expect(deletingItem).toMatchObject({ error: { code: 400 } });
    expect(await op("allDatasets/deleteLayers", { datastoreId: storeId })).toEqual({
      success: true,
      deleted: 1,
      more: false,
    });
    expect(await op("getLayers", { datastoreId: storeId })).toEqual({ layerAndDatasets: [] });
    expect(await op("removeFromServer", { datastoreId: storeId, serverId: org.serverId })).toEqual({
      success: true,
    });
    expect(await op("getServers", { datastoreId: storeId })).toEqual({ servers: [] });
    const [removed, gone] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "removeItem", options: { id: storeId } },
      { fn: "getItem", options: { id: storeId } },
    ])) as Record<string, unknown>[];
    expect(removed).toMatchObject({ success: true, itemId: storeId });
    expect(gone).toMatchObject({ error: { name: "ArcGISRequestError" } });
    expect(existsSync(join(engine.dataDir, "datastore-secrets", `${storeId}.json`))).toBe(false);
    expect(await op("getServers", { datastoreId: storeId })).toMatchObject({ error: { code: 400 } });
    // The name is free again.
    const again = await post(`${rest()}/content/users/publisher/addItem`, {
      token,
      type: "Data Store",
      title: "Again",
      text: storeJson("countries_pg", arcgisString(password)),
    });
    expect(again).toMatchObject({ success: true });
    expect(await post(`${rest()}/content/users/publisher/items/${String(again.id)}/delete`, { token })).toMatchObject({
      success: true,
    });
  });
});

/** The published countries layer's feature count, through its query. */
async function countries(): Promise<number> {
  const layers = (await op("getLayers", { datastoreId: storeId })).layerAndDatasets as { layer: { url: string } }[];
  const url = layers[0]?.layer.url ?? "";
  const answer = await get(`${url}/0/query?where=1%3D1&returnCountOnly=true&f=json&token=${token}`);
  return answer.count as number;
}

describe("who may, and hostile registrations", () => {
  it("50 concurrent registrations of one name: one store, one secret, the others told the name is taken", async () => {
    const before = secretFiles();
    // Validations of the same JSON run meanwhile: they read, and change nothing.
    const [answers, validations] = await Promise.all([
      Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          post(`${rest()}/content/users/publisher/addItem`, {
            token,
            type: "Data Store",
            title: `Race ${i}`,
            text: storeJson("race", arcgisString(password)),
          }),
        ),
      ),
      Promise.all(
        Array.from({ length: 10 }, () =>
          op("validate", { serverId: org.serverId, datastore: storeJson("race", arcgisString(password)) }),
        ),
      ),
    ]);
    expect(validations).toEqual(Array.from({ length: 10 }, () => ({ status: "success" })));
    const won = answers.filter((a) => a.success === true);
    expect(won).toHaveLength(1);
    for (const a of answers.filter((x) => x.success !== true)) {
      expect(a).toMatchObject({
        error: { code: 400, details: ["A data store named race is registered in this organization already."] },
      });
    }
    const added = secretFiles().filter((f) => !before.includes(f));
    expect(added).toEqual([`${String(won[0]?.id)}.json`]);
    const list = JSON.parse(
      (await call(`${rest()}/content/users/publisher?f=json&num=100&token=${token}`, { ca: engine.ca })).text,
    ) as { items: { type: string; title: string }[] };
    expect(list.items.filter((i) => i.type === "Data Store" && i.title.startsWith("Race "))).toHaveLength(1);
    await post(`${rest()}/content/users/publisher/items/${String(won[0]?.id)}/delete`, { token });
    expect(secretFiles()).toEqual(before);
    neverShown(answers, validations);
  });

  it("only those who may register data stores add, validate or change them; nobody reads a password", async () => {
    const text = storeJson("users_try", arcgisString(password));
    const byUser = await post(`${rest()}/content/users/user/addItem`, {
      token: userToken,
      type: "Data Store",
      title: "U",
      text,
    });
    expect(byUser).toMatchObject({ error: { code: 403 } });
    const forOther = await post(`${rest()}/content/users/user/addItem`, {
      token,
      type: "Data Store",
      title: "U",
      text,
    });
    expect(forOther).toMatchObject({ error: { code: 403 } });
    const other = await post(`${rest()}/content/users/publisher/addItem`, {
      token,
      type: "Web Map",
      title: "M",
      text: "{}",
    });
    expect(other).toMatchObject({ error: { code: 400 } });
    // In the query string, a password would land in logs and histories: refused.
    const inUrl = await call(
      `${rest()}/content/users/publisher/addItem?f=json&token=${token}&type=Data%20Store&title=Q&text=${encodeURIComponent(text)}`,
      { ca: engine.ca, method: "POST", body: "" },
    );
    expect(inUrl.json()).toMatchObject({ error: { code: 400 } });
    // An administrator registers for a member, and may manage it, but reads no password either.
    const byAdmin = await post(`${rest()}/content/users/publisher/addItem`, {
      token: adminToken,
      type: "Data Store",
      title: "A",
      text,
    });
    expect(byAdmin).toMatchObject({ success: true });
    const id = String(byAdmin.id);
    expect(await op("validate", { datastoreId: id, serverId: org.serverId }, userToken)).toMatchObject({
      error: { code: 403 },
    });
    expect(await op("validate", { datastoreId: id, serverId: org.serverId }, adminToken)).toEqual({
      status: "success",
    });
    const data = await get(`${rest()}/content/items/${id}/data?f=json&token=${adminToken}`);
    expect(JSON.stringify(data)).toContain("********");
    expect(await get(`${rest()}/content/items/${id}/data?f=json&token=${userToken}`)).toMatchObject({
      error: { code: 400 },
    });
    // A data store's item stays private.
    const shared = await post(`${rest()}/content/users/publisher/items/${id}/share`, { token, everyone: "true" });
    expect(shared).toMatchObject({ error: { code: 400 } });
    expect(await post(`${rest()}/content/users/publisher/items/${id}/delete`, { token })).toMatchObject({
      success: true,
    });
    neverShown(byUser, forOther, byAdmin, data);
  });

  it("connection strings that change where or how it connects are refused, naming the part, never the password", async () => {
    const add = (connectionString: string) =>
      post(`${rest()}/content/users/publisher/addItem`, {
        token,
        type: "Data Store",
        title: "Bad",
        text: storeJson("bad", connectionString),
      });
    const secret = "Sekrit-Value-123";
    const answers = await Promise.all([
      add(`postgresql://u:${secret}@127.0.0.1:5432/gis?host=/var/run/postgresql`),
      add(`postgresql://u:${secret}@127.0.0.1:5432/gis?options=-c%20search_path%3Devil`),
      add(`postgresql://u:${secret}@/var/run/postgresql/gis`),
      add(`postgresql://u:${secret}@a.example.com,b.example.com/gis`),
      add(`SERVER=x;INSTANCE=sde:oracle:db;USER=u;PASSWORD=${secret};DATABASE=gis`),
      add(`postgresql://u:${secret}@127.0.0.1:5432/gis?sslmode=bogus`),
    ]);
    for (const a of answers) {
      expect(a).toMatchObject({ error: { code: 400 } });
      expect(JSON.stringify(a)).not.toContain(secret);
    }
    expect(engine.lines.join("\n")).not.toContain(secret);
  });

  it("registers folders (administrators) and buckets too, each validated by reading it", async () => {
    const folder = (path: string, name = "caches") =>
      JSON.stringify({
        type: "folder",
        path: `/fileShares/${name}`,
        info: { path, dataStorePath: `/fileShares/${name}` },
      });
    const add = (text: string, as = adminToken) =>
      post(`${rest()}/content/users/publisher/addItem`, { token: as, type: "Data Store", title: "Files", text });
    const storeFolder = join(engine.dataDir, "demo-store");
    expect(await add(folder(storeFolder), token)).toMatchObject({ error: { code: 403 } });
    const added = await add(folder(storeFolder));
    expect(added).toMatchObject({ success: true });
    const id = String(added.id);
    expect(await get(`${rest()}/content/items/${id}/data?f=json&token=${token}`)).toEqual({
      type: "folder",
      path: "/fileShares/caches",
      info: { isManaged: false, path: storeFolder, dataStorePath: "/fileShares/caches" },
    });
    expect(await op("validate", { datastoreId: id, serverId: org.serverId })).toEqual({ status: "success" });
    expect(await op("addToServer", { datastoreId: id, serverId: org.serverId })).toEqual({ success: true });
    const described = await job("describe", { datastoreId: id, serverId: org.serverId, path: "/" });
    expect((described.result as { children: { name: string }[] }).children.map((c) => c.name)).toContain("caches");
    expect(await op("removeFromServer", { datastoreId: id, serverId: org.serverId })).toEqual({ success: true });
    expect(await post(`${rest()}/content/users/publisher/items/${id}/delete`, { token })).toMatchObject({
      success: true,
    });
    // Not a folder here; the engine's own data folder (its keys, the stores' passwords).
    expect(await add(folder(join(engine.dataDir, "no-such-folder"), "none"))).toMatchObject({
      error: { details: [expect.stringMatching(/is not a folder on this machine/)] },
    });
    expect(await add(folder(engine.dataDir, "keys"))).toMatchObject({
      error: { details: [expect.stringMatching(/mapgate's own data folder/)] },
    });
    expect(await add(folder(join(engine.dataDir, "datastore-secrets"), "keys"))).toMatchObject({
      error: { details: [expect.stringMatching(/mapgate's own data folder/)] },
    });

    const cloud = (objectStore: string, name: string) =>
      JSON.stringify({
        type: "cloudStore",
        path: `/cloudStores/${name}`,
        provider: "amazon",
        info: { isManaged: false, connectionString: JSON.stringify({ credentialType: "IAMRole" }), objectStore },
      });
    const bucket = await add(cloud("mapgate-demo/demo-store", "demo_bucket"), token);
    expect(bucket).toMatchObject({ success: true });
    const bucketId = String(bucket.id);
    expect(await get(`${rest()}/content/items/${bucketId}/data?f=json&token=${token}`)).toMatchObject({
      type: "cloudStore",
      path: "/cloudStores/demo_bucket",
      info: { objectStore: "mapgate-demo/demo-store" },
    });
    expect(await op("validate", { datastoreId: bucketId, serverId: org.serverId })).toEqual({ status: "success" });
    const missing = await op("validate", { serverId: org.serverId, datastore: cloud("no-such-bucket", "x") });
    expect(missing.status).toMatch(/cannot be listed/);
    expect(await post(`${rest()}/content/users/publisher/items/${bucketId}/delete`, { token })).toMatchObject({
      success: true,
    });
  });

  it("every operation has its form (f=html), and the directory links them", async () => {
    const page = async (url: string) => (await call(url, { ca: engine.ca })).text;
    const form = await page(`${rest()}/content/users/publisher/addItem?f=html&token=${token}`);
    expect(form).toContain('name="text"');
    for (const operation of [
      "validate",
      "addToServer",
      "refreshServer",
      "removeFromServer",
      "allDatasets/deleteLayers",
    ]) {
      const html = await page(`${stores()}/${operation}?f=html&token=${token}`);
      expect(html, operation).toContain('name="datastoreId"');
      // The store is chosen by its title, the server (where one is needed) by its name.
      expect(html, operation).toMatch(/<option value="[0-9a-f]{32}">Demo Data Store \(folder, /);
      if (operation !== "allDatasets/deleteLayers" && operation !== "validate")
        expect(html, operation).toMatch(
          /<select id="field-serverId" name="serverId"><option value="[A-Za-z0-9]+"( selected)?>arcgis /,
        );
    }
    const directory = await page(`${rest()}?f=html&token=${token}`);
    expect(directory).toContain("Register a data store");
    expect(directory).toContain("datastores/validate?");
    // A plain user is offered nothing it may not run: no describing, publishing, listing or managing stores.
    const plain = await page(`${rest()}?f=html&token=${userToken}`);
    for (const op of [
      "datastores/describe?",
      "datastores/publish?",
      "publishLayers?",
      "datastores/validate?",
      "addItem",
    ])
      expect(plain, op).not.toContain(op);
    // Nor lists another member's stores: getLayers is for a store's owner and administrators.
    expect(plain).not.toContain("datastores/getLayers?");
    expect(plain).toContain("No data stores.");
    // The publish form offers the servers by name and starts from a ready configuration naming a store.
    const publish = await page(`${stores()}/publish?f=html&token=${token}`);
    // The server the store is registered with is chosen.
    expect(publish).toMatch(
      /<select id="field-serverId" name="serverId"><option value="[A-Za-z0-9]+" selected>arcgis \(/,
    );
    expect(publish).toMatch(
      /<textarea id="field-serviceConfiguration" name="serviceConfiguration" required>\{&#34;type&#34;:&#34;MapServer&#34;,&#34;serviceName&#34;:&#34;My_Map&#34;,&#34;properties&#34;:\{&#34;cacheStoreId&#34;:&#34;[0-9a-f]{32}&#34;/,
    );
    // A data store's item page leads to its operations, and offers no sharing.
    const added = await post(`${rest()}/content/users/publisher/addItem`, {
      token,
      type: "Data Store",
      title: "Paged",
      text: storeJson("paged", arcgisString(password)),
    });
    const id = String(added.id);
    const itemPage = await page(`${rest()}/content/items/${id}?f=html&token=${token}`);
    expect(itemPage).toContain(`datastores/refreshServer?datastoreId=${id}`);
    expect(itemPage).toContain(`/content/items/${id}/data?f=html`);
    expect(itemPage).not.toContain("Make private");
    expect(itemPage).not.toContain(password);
    const dataPage = await page(`${rest()}/content/items/${id}/data?f=html&token=${token}`);
    expect(dataPage).toContain("********");
    expect(dataPage).not.toContain(password);
    expect(await post(`${rest()}/content/users/publisher/items/${id}/delete`, { token })).toMatchObject({
      success: true,
    });
  });
});

/**
 * A stand-in for a database host on loopback, recording every byte it receives: it declines TLS ('N') and asks for
 * the password in clear text (AuthenticationCleartextPassword), as a host harvesting passwords would.
 */
async function passwordCatcher(): Promise<{ port: number; received: () => string; close: () => Promise<void> }> {
  const chunks: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on("error", () => undefined);
    s.on("data", (data) => {
      chunks.push(data);
      // SSLRequest: 8 bytes, code 80877103. Else the startup message: ask for the password in clear text.
      if (data.length === 8 && data.readInt32BE(4) === 80877103) s.write("N");
      else if (data[0] !== 0x70) s.write(Buffer.from([0x52, 0, 0, 0, 8, 0, 0, 0, 3]));
      else s.end();
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    received: () => Buffer.concat(chunks).toString("latin1"),
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describe("where a kept password may go", () => {
  it("an update changing the port (or weakening sslmode) without the password is refused; the new host receives nothing; with the password it works", async () => {
    const added = await post(`${rest()}/content/users/publisher/addItem`, {
      token,
      type: "Data Store",
      title: "Moved",
      text: storeJson("moved_pg", arcgisString(password)),
    });
    expect(added).toMatchObject({ success: true });
    const id = String(added.id);
    const update = (text: string) => post(`${rest()}/content/users/publisher/items/${id}/update`, { token, text });
    const catcher = await passwordCatcher();
    try {
      // The item's data as read, its port changed to the stand-in's (a "new host"): the password kept.
      const data = (await get(`${rest()}/content/items/${id}/data?f=json&token=${token}`)) as {
        info: { connectionString: string };
      };
      const moved = data.info.connectionString.replace(`:${db.port}/`, `:${catcher.port}/`);
      expect(moved).toContain(":********@");
      const refused = await update(JSON.stringify({ ...data, info: { ...data.info, connectionString: moved } }));
      expect(refused).toMatchObject({ error: { code: 400 } });
      expect((refused.error as { details: string[] }).details).toEqual([
        "The connection's port changed: enter the password again in the connection string (the kept password is only ever sent to the database and user it was entered for).",
      ]);
      // Plain text asked for (sslmode=disable from prefer) is a weaker way there: the password again, too.
      const plain = data.info.connectionString.replace("sslmode=prefer", "sslmode=disable");
      const weaker = await update(JSON.stringify({ ...data, info: { ...data.info, connectionString: plain } }));
      expect((weaker.error as { details: string[] }).details[0]).toMatch(
        /^The connection's sslmode \(prefer to disable\) changed: enter the password again/,
      );
      // The store is as it was, and validates against the database it was registered with.
      expect(await op("validate", { datastoreId: id, serverId: org.serverId })).toEqual({ status: "success" });
      expect(catcher.received()).toBe("");
      // The same update with the password given is taken, and that password (and only it) goes there.
      const fresh = `Fresh-pw-${Math.random().toString(36).slice(2)}`;
      const withPassword = moved.replace(":********@", `:${fresh}@`);
      expect(await update(JSON.stringify({ ...data, info: { ...data.info, connectionString: withPassword } }))).toEqual(
        { success: true, id },
      );
      const status = (await op("validate", { datastoreId: id, serverId: org.serverId })).status;
      expect(status).toMatch(/cannot be reached|refused/);
      expect(catcher.received()).toContain(fresh);
      expect(catcher.received()).not.toContain(password);
    } finally {
      await catcher.close();
    }
    expect(await post(`${rest()}/content/users/publisher/items/${id}/delete`, { token })).toMatchObject({
      success: true,
    });
    neverShown(added);
  });
});

describe("validate is no port scanner", () => {
  it("a closed port, one where something else answers and a silent one: byte-identical answers, in the same time; the log says which", async () => {
    const closedPort = await new Promise<number>((resolve) => {
      const s = createServer();
      s.listen(0, "127.0.0.1", () => {
        const a = s.address();
        s.close(() => resolve(typeof a === "object" && a ? a.port : 0));
      });
    });
    const otherSockets = new Set<Socket>();
    const other = createServer((s) => {
      otherSockets.add(s);
      s.on("error", () => undefined);
      s.end("HTTP/1.1 400 Bad Request\r\n\r\n");
    });
    await new Promise<void>((r) => other.listen(0, "127.0.0.1", r));
    const otherAddress = other.address();
    const otherPort = typeof otherAddress === "object" && otherAddress ? otherAddress.port : 0;
    const hole = await blackHole();
    const linesBefore = engine.lines.length;
    try {
      const timed = async (port: number) => {
        const started = Date.now();
        const answer = await call(`${stores()}/validate`, {
          ca: engine.ca,
          body: new URLSearchParams({
            f: "json",
            token,
            serverId: org.serverId,
            datastore: storeJson("probe", arcgisString(password, db.database, port)),
          }).toString(),
        });
        return { text: answer.text, ms: Date.now() - started };
      };
      const [closed, answered, silent] = await Promise.all([timed(closedPort), timed(otherPort), timed(hole.port)]);
      expect(closed.text).toBe(
        JSON.stringify({
          status: "The database cannot be reached: no PostgreSQL server answered at its host and port.",
        }),
      );
      expect(answered.text).toBe(closed.text);
      expect(silent.text).toBe(closed.text);
      // Each answered no sooner than the floor past the 5 s connect timeout (5.5 s), so none is told apart by
      // its time: a refused port is held as long as a silent one.
      const times = [closed.ms, answered.ms, silent.ms];
      for (const ms of times) expect(ms).toBeGreaterThanOrEqual(5_500);
      expect(Math.max(...times) - Math.min(...times)).toBeLessThan(1_500);
      // The finer reason is the log's, never the password.
      for (
        let i = 0;
        i < 40 && engine.lines.slice(linesBefore).join("\n").split("database unreachable").length < 4;
        i++
      )
        await new Promise((r) => setTimeout(r, 50));
      const log = engine.lines.slice(linesBefore).join("\n");
      expect(log).toContain("ECONNREFUSED");
      expect(log).toMatch(/Connection terminated|error establishing an SSL connection/);
      expect(log).toMatch(/"reason":"[^"]*connection timeout|timeout exceeded when trying to connect/);
      expect(log).not.toContain(password);
    } finally {
      await hole.close();
      for (const s of otherSockets) s.destroy();
      await new Promise((r) => other.close(r));
    }
  }, 30_000);
});

describe("a database that fails in other ways is answered clearly", () => {
  it("a login the server ends with SQLSTATE XX000: validate says so; addToServer, describe and refreshServer refuse it, no 500", async () => {
    // A real XX000 at login: the role loads a library at session start that is no PostgreSQL module ("missing
    // magic block", reported with no SQLSTATE of its own, so XX000).
    const library = ["/lib/x86_64-linux-gnu/libz.so.1", "/usr/lib/x86_64-linux-gnu/libz.so.1", "/lib64/libz.so.1"].find(
      (f) => existsSync(f),
    );
    expect(library).toBeDefined();
    const broken = { user: "broken_login", password: `Broken-pw-${Math.random().toString(36).slice(2)}` };
    await db.admin.query(`CREATE ROLE ${broken.user} LOGIN PASSWORD '${broken.password}'`);
    const uri = `postgresql://${broken.user}:${broken.password}@127.0.0.1:${db.port}/${db.database}?sslmode=disable`;
    const added = await post(`${rest()}/content/users/publisher/addItem`, {
      token,
      type: "Data Store",
      title: "Broken",
      text: storeJson("broken_pg", uri),
    });
    const id = String(added.id);
    const breakLogin = () => db.admin.query(`ALTER ROLE ${broken.user} SET session_preload_libraries = '${library}'`);
    const mendLogin = () => db.admin.query(`ALTER ROLE ${broken.user} RESET session_preload_libraries`);
    await breakLogin();
    const said = "The database ended the session (SQLSTATE XX000).";
    expect(await op("validate", { datastoreId: id, serverId: org.serverId })).toEqual({ status: said });
    expect(await op("validate", { serverId: org.serverId, datastore: storeJson("x", uri) })).toEqual({ status: said });
    expect(await op("addToServer", { datastoreId: id, serverId: org.serverId })).toMatchObject({
      error: { code: 400, details: [said] },
    });
    // Registered with the server while its login works; then it breaks again: describe's job and refreshServer.
    await mendLogin();
    expect(await op("addToServer", { datastoreId: id, serverId: org.serverId })).toEqual({ success: true });
    await breakLogin();
    // describe reads the path before it starts its job: a 400 saying why.
    const described = await op("describe", { datastoreId: id, serverId: org.serverId, path: "/" });
    expect(described).toMatchObject({ error: { code: 400, details: [`Path '/' cannot be read: ${said}`] } });
    const refused = await op("refreshServer", { datastoreId: id, serverId: org.serverId });
    expect(refused).toMatchObject({ error: { code: 400, details: [said] } });
    // The server's own words are the log's.
    expect(engine.lines.join("\n")).toContain("missing magic block");
    await mendLogin();
    expect(await op("removeFromServer", { datastoreId: id, serverId: org.serverId })).toEqual({ success: true });
    expect(await post(`${rest()}/content/users/publisher/items/${id}/delete`, { token })).toMatchObject({
      success: true,
    });
    neverShown(described, refused);
    expect(engine.lines.join("\n")).not.toContain(broken.password);
  });

  it("sslmode=verify-full and a server whose certificate is not trusted: validate names it, addToServer refuses it", async () => {
    // The cluster offers TLS with a self-signed certificate (which no authority mapgate trusts signed).
    const dir = mkdtempSync(join(tmpdir(), "mapgate-pg-tls-"));
    folders.push(dir);
    const [key, cert] = [join(dir, "server.key"), join(dir, "server.crt")];
    execFileSync(
      "openssl",
      ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"].concat([
        "-addext",
        "subjectAltName=IP:127.0.0.1",
        "-keyout",
        key,
        "-out",
        cert,
      ]),
      { stdio: "ignore" },
    );
    // PostgreSQL runs as `postgres` when the tests run as root: its key must be its own.
    if (process.getuid?.() === 0) {
      const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
      for (const f of [dir, key, cert]) chownSync(f, uid, uid);
    }
    await db.admin.query(`ALTER SYSTEM SET ssl_cert_file = '${cert}'`);
    await db.admin.query(`ALTER SYSTEM SET ssl_key_file = '${key}'`);
    await db.admin.query("ALTER SYSTEM SET ssl = on");
    await db.admin.query("SELECT pg_reload_conf()");
    for (let i = 0; i < 40 && (await db.admin.query("SHOW ssl")).rows[0]?.ssl !== "on"; i++)
      await new Promise((r) => setTimeout(r, 50));
    const uri = (mode: string) =>
      `postgresql://${login.user}:${encodeURIComponent(password)}@127.0.0.1:${db.port}/${db.database}?sslmode=${mode}`;
    const validate = (mode: string) =>
      op("validate", { serverId: org.serverId, datastore: storeJson("tls", uri(mode)) });
    // Encrypted but unchecked (require) logs in; checked (verify-full), the certificate is not trusted.
    expect(await validate("require")).toEqual({ status: "success" });
    const untrusted = await validate("verify-full");
    expect(untrusted.status).toBe(
      "The database server's certificate is not trusted (DEPTH_ZERO_SELF_SIGNED_CERT): sslmode=verify-full takes a certificate signed by an authority mapgate trusts and naming the host.",
    );
    const added = await post(`${rest()}/content/users/publisher/addItem`, {
      token,
      type: "Data Store",
      title: "Checked",
      text: storeJson("checked_pg", uri("verify-full")),
    });
    const id = String(added.id);
    expect(await op("addToServer", { datastoreId: id, serverId: org.serverId })).toMatchObject({
      error: { code: 400, details: [untrusted.status] },
    });
    expect(await post(`${rest()}/content/users/publisher/items/${id}/delete`, { token })).toMatchObject({
      success: true,
    });
    neverShown(untrusted, added);
  });
});
