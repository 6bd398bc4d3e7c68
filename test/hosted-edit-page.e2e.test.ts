// A hosted feature service's editing settings on its item's page, in a real headless Chromium (no script: the page
// has none) against the local engine: its owner sees which edits are allowed, ownership-based access control and
// public data collection with its warning, changes them with the page's form (posted, with the page's CSRF field, to
// the service's admin updateDefinition), and the service answers the new settings; the page shows them again. A
// member who does not manage the service gets no form; a post of the form without its CSRF field is refused.
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { definePointService } from "./helpers/arcgis.ts";
import { startEngineAndBrowser, stopBrowserAndEngine } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine, signInMembers } from "./helpers/engine.ts";
import { jsonCalls } from "./helpers/http.ts";
import { share } from "./helpers/publish.ts";

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
let browser: Browser;
const contexts: BrowserContext[] = [];
const tokens = { admin: "", publisher: "", user: "" };
const { getJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${path}`;
let itemId = "";
const service = () => https("/arcgis/rest/services/Hosted/Paged/FeatureServer");

async function signInPage(username: "publisher" | "user"): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(https(`${REST}/oauth2/signin?redirect=${encodeURIComponent(`${REST}?f=html`)}`));
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(PASSWORDS[username]);
  const loaded = page.waitForEvent("load");
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
  await loaded;
  return page;
}

const itemPage = () => https(`${REST}/content/items/${itemId}?f=html`);
const heading = (page: Page) => page.getByRole("heading", { level: 1 }).textContent();
const box = (page: Page, label: string) => page.getByLabel(label, { exact: true });

beforeAll(async () => {
  ({ engine, browser } = await startEngineAndBrowser());
  Object.assign(tokens, await signInMembers(https(REST), engine.ca));
  itemId = await definePointService(engine, "Paged");
}, 120_000);

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

describe.sequential("the editing settings on a hosted service's page", () => {
  let owner: Page;

  it("show its owner what is allowed, and warn what public data collection means", async () => {
    owner = await signInPage("publisher");
    await owner.goto(itemPage());
    await expect(owner.getByRole("heading", { level: 2, name: "Editing" }).count()).resolves.toBe(1);
    for (const label of ["Allow create", "Allow update", "Allow delete"])
      expect(await box(owner, label).isChecked()).toBe(true);
    expect(
      await box(owner, "Editors can only reach features as set below (ownership-based access control)").isChecked(),
    ).toBe(false);
    expect(await box(owner, "Editors see features others made").isChecked()).toBe(true);
    expect(await box(owner, "Anyone, signed in or not, may edit (public data collection)").isChecked()).toBe(false);
    const warning = (await owner.locator("#public-editing-warning").textContent()) ?? "";
    expect(warning).toContain("anyone on the internet may add, change or delete its data");
    expect(warning).toContain("only while the layer is shared with everyone");
  });

  it("saves what the owner changes, through the service's updateDefinition", async () => {
    await box(owner, "Allow delete").uncheck();
    await box(owner, "Editors can only reach features as set below (ownership-based access control)").check();
    await box(owner, "Editors see features others made").uncheck();
    await box(owner, "Anyone, signed in or not, may edit (public data collection)").check();
    const loaded = owner.waitForEvent("load");
    await owner.getByRole("button", { name: "Save editing settings", exact: true }).click();
    await loaded;
    expect(await heading(owner)).toBe("Editing settings saved");
    // Post/redirect/get: a reload shows the result again and sends nothing.
    await owner.reload();
    expect(await heading(owner)).toBe("Editing settings saved");
    const json = await getJson(service(), tokens.publisher);
    expect(json.capabilities).toBe("Create,Query,Update,Editing");
    expect(json.editorTrackingInfo).toEqual({
      enableEditorTracking: true,
      enableOwnershipAccessControl: true,
      allowOthersToUpdate: true,
      allowOthersToDelete: true,
      allowOthersToQuery: false,
      allowAnonymousToUpdate: true,
      allowAnonymousToDelete: true,
    });
    expect((await getJson(`${service()}/0`, tokens.publisher)).ownershipBasedAccessControlForFeatures).toEqual({
      allowOthersToQuery: false,
      allowOthersToUpdate: true,
      allowOthersToDelete: true,
      allowAnonymousToQuery: true,
      allowAnonymousToUpdate: true,
      allowAnonymousToDelete: true,
    });
  });

  it("shows the settings as saved, and says plainly once anyone on the internet may edit", async () => {
    await owner.getByRole("link", { name: "Back to the item" }).click();
    expect(await box(owner, "Allow delete").isChecked()).toBe(false);
    expect(await box(owner, "Allow update").isChecked()).toBe(true);
    expect(await box(owner, "Editors see features others made").isChecked()).toBe(false);
    expect(await box(owner, "Anyone, signed in or not, may edit (public data collection)").isChecked()).toBe(true);
    expect(await share(engine, tokens.publisher, itemId, { everyone: "true", org: "true" })).toMatchObject({
      notSharedWith: [],
    });
    await owner.reload();
    expect(await owner.locator("#public-editing-warning").textContent()).toContain("This is the case now.");
    // Turning everything off sends no box at all: each setting is read as off, none as "keep".
    for (const label of ["Allow create", "Allow update"]) await box(owner, label).uncheck();
    await box(owner, "Anyone, signed in or not, may edit (public data collection)").uncheck();
    const loaded = owner.waitForEvent("load");
    await owner.getByRole("button", { name: "Save editing settings", exact: true }).click();
    await loaded;
    expect(await heading(owner)).toBe("Editing settings saved");
    const json = await getJson(service(), tokens.publisher);
    expect(json.capabilities).toBe("Query");
    expect(json.editorTrackingInfo).toMatchObject({ enableOwnershipAccessControl: true, allowOthersToQuery: false });
    await owner.goto(itemPage());
    expect(await owner.locator("#public-editing-warning").textContent()).not.toContain("This is the case now.");
  });

  it("is not offered to a member who does not manage the service, and refuses a post without the page's CSRF field", async () => {
    const member = await signInPage("user");
    await member.goto(itemPage());
    expect(await heading(member)).toBe("Paged");
    expect(await member.getByRole("heading", { level: 2, name: "Editing" }).count()).toBe(0);
    // The owner's browser, posting the form's fields without its CSRF field: the cookie does not authorize it.
    const forged = await owner.request.post(
      https("/arcgis/rest/admin/services/Hosted/Paged/FeatureServer/updateDefinition"),
      { form: { editingForm: "true", "capability:Create": "true", f: "json" } },
    );
    expect(await forged.json()).toMatchObject({ error: { code: 403 } });
    expect((await getJson(service(), tokens.publisher)).capabilities).toBe("Query");
  });
});
