// The editing settings of a layer published by reference from PostgreSQL, on its item's page, in a real headless
// Chromium (no script) against the local engine and a real cluster: its publisher sees which edits are allowed (none
// at first), is told that who may reach which features needs the table's creator column, and turns edits on with the
// page's form — posted to the service's admin updateDefinition, which the service function answers after asking the
// database whether the data store's login may write. With a login that may only read, the page's post is refused with
// the privilege named and the GRANT to run, and nothing changes.
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization, registerPostgresStore } from "./helpers/admin.ts";
import { launchChromium, PAGE_CHROMIUM_ARGS, stopBrowserAndEngine } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine, signInMembers, startEngine } from "./helpers/engine.ts";
import { jsonCalls } from "./helpers/http.ts";
import { jobEnd } from "./helpers/publish.ts";
import { type Postgres, postgresBin, startPostgres } from "./helpers/postgres.ts";

const REST = "/portal/sharing/rest";
const WRITER = { user: "page_writer", password: `pw-${Math.random().toString(36).slice(2)}` };
let engine: RunningEngine;
let browser: Browser;
let db: Postgres;
const contexts: BrowserContext[] = [];
const tokens = { publisher: "" };
const { getJson, postJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${path}`;
const stores = { read: "", write: "" };

/** The service bulk publishing made of `public.spots` from a store, in the folder named for it. */
const serviceOf = (folder: string, datastoreId: string) =>
  https(
    `/arcgis/rest/services/${folder}/public_spots_${stableItemId(datastoreId, "/public.spots").slice(0, 6)}/FeatureServer`,
  );
const itemOf = async (url: string) => String((await getJson(url, tokens.publisher)).serviceItemId);

async function signInPage(): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(https(`${REST}/oauth2/signin?redirect=${encodeURIComponent(`${REST}?f=html`)}`));
  await page.getByLabel("Username").fill("publisher");
  await page.getByLabel("Password").fill(PASSWORDS.publisher);
  const loaded = page.waitForEvent("load");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await loaded;
  return page;
}

const box = (page: Page, label: string) => page.getByLabel(label, { exact: true });
const save = async (page: Page) => {
  const loaded = page.waitForEvent("load");
  await page.getByRole("button", { name: "Save editing settings", exact: true }).click();
  await loaded;
};

const suite = postgresBin() ? describe.sequential : describe.skip;

suite("the editing settings of a layer published by reference, on its page", () => {
  beforeAll(async () => {
    const [started, cluster, chromium] = await Promise.allSettled([
      startEngine(),
      startPostgres(),
      launchChromium(PAGE_CHROMIUM_ARGS),
    ]);
    if (started.status === "fulfilled") engine = started.value;
    if (cluster.status === "fulfilled") db = cluster.value;
    if (chromium.status === "fulfilled") browser = chromium.value;
    for (const s of [started, cluster, chromium]) if (s.status === "rejected") throw s.reason;
    Object.assign(tokens, await signInMembers(https(REST), engine.ca));
    const org = demoOrganization(engine.dataDir);
    const q = (sql: string) => db.admin.query(sql);
    await q("CREATE TABLE public.spots (id serial PRIMARY KEY, name text, geom geometry(Point, 4326))");
    await q(`CREATE ROLE ${WRITER.user} LOGIN PASSWORD '${WRITER.password}'`);
    await q(`GRANT USAGE ON SCHEMA public TO ${WRITER.user}`);
    await q(`GRANT SELECT, INSERT, UPDATE, DELETE ON public.spots TO ${WRITER.user}`);
    await q(`GRANT USAGE ON SEQUENCE public.spots_id_seq TO ${WRITER.user}`);
    stores.read = registerPostgresStore(engine.dataDir, org, "Page read only", db.uri()).datastoreId;
    stores.write = registerPostgresStore(
      engine.dataDir,
      org,
      "Page writable",
      db.uri(WRITER.user, WRITER.password),
    ).datastoreId;
    for (const [datastoreId, serverFolder] of [
      [stores.read, "PageRo"],
      [stores.write, "PageRw"],
    ] as const) {
      const job = await postJson(`${https(REST)}/portals/self/datastores/allDatasets/publishLayers`, tokens.publisher, {
        datastoreId,
        serverId: org.serverId,
        serverFolder,
      });
      expect(await jobEnd(engine, tokens.publisher, job)).toMatchObject({ status: "completed" });
    }
  }, 180_000);

  afterAll(async () => {
    await stopBrowserAndEngine(contexts, browser, engine);
    await db?.stop();
  });

  it("offers its publisher the edits, none allowed yet, and says what ownership rules need", async () => {
    const page = await signInPage();
    await page.goto(https(`${REST}/content/items/${await itemOf(serviceOf("PageRw", stores.write))}?f=html`));
    expect(await page.getByRole("heading", { level: 2, name: "Editing" }).count()).toBe(1);
    for (const label of ["Allow create", "Allow update", "Allow delete"])
      expect(await box(page, label).isChecked(), label).toBe(false);
    // Neither ownership rules (no creator column named) nor public data collection are offered.
    expect(await page.getByLabel("Editors see features others made").count()).toBe(0);
    expect(await page.getByLabel("Anyone, signed in or not, may edit (public data collection)").count()).toBe(0);
    expect(await page.locator("main, body").first().textContent()).toContain("needs the table's creator column");
  });

  it("turns edits on through the service's updateDefinition once the database says the login may write", async () => {
    const page = await signInPage();
    const url = serviceOf("PageRw", stores.write);
    await page.goto(https(`${REST}/content/items/${await itemOf(url)}?f=html`));
    await box(page, "Allow create").check();
    await box(page, "Allow update").check();
    await save(page);
    expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe("Editing settings saved");
    expect((await getJson(url, tokens.publisher)).capabilities).toBe("Create,Query,Update,Editing");
    // The page shows the settings as saved.
    await page.getByRole("link", { name: "Back to the item" }).click();
    expect(await box(page, "Allow update").isChecked()).toBe(true);
    expect(await box(page, "Allow delete").isChecked()).toBe(false);
  });

  it("refuses a form that offered ownership rules the layer cannot take now (its creator column not named)", async () => {
    const url = serviceOf("PageRw", stores.write);
    const answer = await postJson(
      `${url.replace("/rest/services/", "/rest/admin/services/")}/updateDefinition`,
      tokens.publisher,
      {
        editingForm: "true",
        editingSettings: "true",
        "capability:Update": "true",
        ownershipAccessControl: "true",
      },
    );
    expect(answer).toEqual({
      error: {
        code: 400,
        message: "Unable to update feature service definition.",
        details: [
          "The page offered who may reach which features, but the layer's creator column is no longer named: reload the page.",
        ],
      },
    });
    expect((await getJson(url, tokens.publisher)).capabilities).toBe("Create,Query,Update,Editing");
  });

  it("refuses, naming the privilege, when the data store's login may only read; nothing changes", async () => {
    const page = await signInPage();
    const url = serviceOf("PageRo", stores.read);
    await page.goto(https(`${REST}/content/items/${await itemOf(url)}?f=html`));
    await box(page, "Allow update").check();
    await save(page);
    const text = (await page.locator("body").textContent()) ?? "";
    expect(text).toContain("lacks the UPDATE privilege on public.spots (Update)");
    expect(text).toContain("GRANT UPDATE ON public.spots TO");
    expect((await getJson(url, tokens.publisher)).capabilities).toBe("Query");
  });
});
