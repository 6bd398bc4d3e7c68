// The group pages in a real headless Chromium over HTTPS, scripts disabled: an administrator creates a group from
// the directory and shares an item with it from the item's page (a group checkbox); a member finds the group,
// joins it, sees the item in the group's content and in the services directory, and loses it on leaving; asks to
// join an invitation-only group from its page, and the owner accepts the request on the group's page.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngineAndBrowser, stopBrowserAndEngine } from "./helpers/browser.ts";
import { PASSWORDS, ROOT, type RunningEngine } from "./helpers/engine.ts";

const DIRECTORY = "/portal/sharing/rest";
const ARTIFACTS = join(ROOT, "test-artifacts");

let engine: RunningEngine;
let browser: Browser;
const contexts: BrowserContext[] = [];

const https = (path = "") => `${engine.ready.https}${DIRECTORY}${path}`;

async function signedIn(username: string, password: string): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });
  contexts.push(context);
  const page = await context.newPage();
  await page.goto(https(`/oauth2/signin?redirect=${encodeURIComponent(DIRECTORY)}`));
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await submit(page, "Sign in");
  return page;
}

async function submit(page: Page, button: string): Promise<void> {
  const loaded = page.waitForEvent("load");
  await page.getByRole("button", { name: button, exact: true }).click();
  await loaded;
}

async function follow(page: Page, link: string): Promise<void> {
  const loaded = page.waitForEvent("load");
  await page.getByRole("link", { name: link, exact: true }).first().click();
  await loaded;
}

const cell = (page: Page, key: string) =>
  page
    .locator("tr")
    .filter({ has: page.locator("th", { hasText: new RegExp(`^${key}$`) }) })
    .locator("td")
    .first();

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ engine, browser } = await startEngineAndBrowser());
}, 120_000);

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

// One behaviour a test, in order: each step starts from the state the one before it left (the group, the shared item).
describe.sequential("group pages", () => {
  let admin: Page;
  let member: Page;
  let groupId = "";
  let itemUrl = "";

  it("an administrator creates a group from its form, and its update form starts from the group as it is", async () => {
    admin = await signedIn("admin", PASSWORDS.admin);
    await follow(admin, "Create a group");
    await admin.getByLabel("Title").fill("Browser crew");
    await admin.getByLabel("Summary").fill("Maps for the <crew>");
    await admin.getByLabel("Access").selectOption("org");
    await admin.getByLabel("Anyone who sees it may join").check();
    await submit(admin, "Submit");
    await expect(admin.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Browser crew");
    await expect(cell(admin, "Summary").textContent()).resolves.toBe("Maps for the <crew>");
    await expect(cell(admin, "Your membership").textContent()).resolves.toBe("owner");
    groupId = (await cell(admin, "Id").textContent()) ?? "";
    expect(groupId).toMatch(/^[0-9a-f]{32}$/);
    // The update form starts from the group as it is: renaming it alone keeps its summary and access.
    await admin.goto(https(`/community/groups/${groupId}/update?f=html`));
    await expect(admin.getByLabel("Summary").inputValue()).resolves.toBe("Maps for the <crew>");
    await expect(admin.getByLabel("Access").inputValue()).resolves.toBe("org");
    await admin.getByLabel("Title").fill("Browser crew");
    await submit(admin, "Submit");
    const group = (await (await admin.request.get(https(`/community/groups/${groupId}?f=json`))).json()) as Record<
      string,
      unknown
    >;
    expect(group).toMatchObject({ title: "Browser crew", snippet: "Maps for the <crew>", access: "org" });
  }, 60_000);

  it("the administrator shares the demo basemap with the group only, by its checkbox on the item page", async () => {
    await admin.goto(https());
    await follow(admin, "My content");
    await follow(admin, "World_Basemap");
    itemUrl = admin.url();
    const box = admin.getByLabel("Group: Browser crew");
    expect(await box.isChecked()).toBe(false);
    await box.check();
    await admin.getByLabel("Everyone (public)").uncheck();
    await admin.getByLabel("Organization").uncheck();
    await submit(admin, "Share");
    await admin.goto(itemUrl);
    await expect(cell(admin, "Access").textContent()).resolves.toBe("shared");
    expect(await admin.getByLabel("Group: Browser crew").isChecked()).toBe(true);
  }, 60_000);

  it("a member joins the group, sees its item in its content and the directory, and loses it on leaving", async () => {
    member = await signedIn("user", PASSWORDS.user);
    const directory = async () =>
      (
        (await (await member.request.get(`${engine.ready.https}/arcgis/rest/services?f=json`)).json()) as {
          services: { name: string }[];
        }
      ).services.some((s) => s.name === "World_Basemap");
    expect(await directory()).toBe(false);
    await follow(member, "Groups");
    await follow(member, "Browser crew");
    await expect(cell(member, "Your membership").textContent()).resolves.toBe("none");
    await expect(member.getByText("No items.")).toBeTruthy();
    await submit(member, "Join");
    await expect(cell(member, "Your membership").textContent()).resolves.toBe("member");
    await expect(member.getByRole("link", { name: "World_Basemap" }).count()).resolves.toBe(1);
    await member.screenshot({ path: join(ARTIFACTS, "group.png"), fullPage: true });
    expect(await directory()).toBe(true);
    await follow(member, "World_Basemap");
    await expect(member.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("World_Basemap");
    await member.goBack();
    await submit(member, "Leave");
    await expect(cell(member, "Your membership").textContent()).resolves.toBe("none");
    await expect(member.getByRole("link", { name: "World_Basemap" }).count()).resolves.toBe(0);
    expect(await directory()).toBe(false);
  }, 60_000);

  it("the owner deletes the group from its page after confirming, and the item is no longer shared with it", async () => {
    await admin.goto(https(`/community/groups/${groupId}?f=html`));
    await submit(admin, "Delete group");
    // It asks first, on a page of its own (no script needed); nothing has been done yet.
    await expect(admin.getByRole("status").textContent()).resolves.toMatch(/^Nothing has been done yet\./);
    await admin.getByLabel(/^I understand: the group goes for good/).check();
    await submit(admin, "Delete Group");
    await expect(admin.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Groups");
    await admin.goto(itemUrl);
    await expect(cell(admin, "Access").textContent()).resolves.toBe("private");
  }, 60_000);

  it("an invitation-only group offers no Join, only a request its managers accept on its page", async () => {
    await admin.goto(https("/community/createGroup?f=html"));
    await admin.getByLabel("Title").fill("Invited browser crew");
    await admin.getByLabel("Access").selectOption("org");
    await admin.getByLabel("By invitation only").check();
    await submit(admin, "Submit");
    const invited = admin.url();
    await member.goto(invited);
    await expect(member.getByRole("button", { name: "Join", exact: true }).count()).resolves.toBe(0);
    await submit(member, "Ask to join");
    await expect(member.getByText("Your request to join is pending.").count()).resolves.toBe(1);
    await admin.goto(invited);
    await submit(admin, "Accept user");
    await expect(admin.getByRole("button", { name: "Accept user" }).count()).resolves.toBe(0);
    await member.goto(invited);
    await expect(cell(member, "Your membership").textContent()).resolves.toBe("member");
  }, 60_000);
});
