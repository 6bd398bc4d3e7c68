// The sign-in page, the HTML directory and its forms in a real headless Chromium over HTTPS (and plain HTTP),
// against the local engine: what a person sees, the sign-in cookie's exact attributes, CSRF on forms, sign-out
// and the Content-Security-Policy. JavaScript is disabled in every page: the forms must work without any script.
import { createHash } from "node:crypto";
import { mkdirSync, statSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Cookie, type Page, type Response } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngineAndBrowser, stopBrowserAndEngine } from "./helpers/browser.ts";
import { PASSWORDS, ROOT, type RunningEngine } from "./helpers/engine.ts";

const DIRECTORY = "/portal/sharing/rest";
const AUTH_COOKIE = "vendor_authcookie";
const TWO_WEEKS = 14 * 24 * 3600;
const ARTIFACTS = join(ROOT, "test-artifacts");

let engine: RunningEngine;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** Every console message and page error seen in any page, for the CSP check at the end. */
const consoleMessages: { type: string; text: string; url: string }[] = [];
/** Every HTML page the browser received (headers, and the body read as it arrived), for the CSP checks. */
const htmlPages: { url: string; headers: Record<string, string>; body: Promise<string> }[] = [];

const https = (path = "") => `${engine.ready.https}${DIRECTORY}${path}`;

async function newPage(): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });
  contexts.push(context);
  const page = await context.newPage();
  page.on("console", (m) => consoleMessages.push({ type: m.type(), text: m.text(), url: page.url() }));
  page.on("pageerror", (e) => consoleMessages.push({ type: "pageerror", text: e.message, url: page.url() }));
  page.on("response", (r) => {
    if (!(r.headers()["content-type"] ?? "").startsWith("text/html")) return;
    // Chromium drops a body once its page navigates on (a 303's target arriving fast): a GET is then read again
    // with the same cookies, so the check below still sees what the page served; anything else stays "unread".
    const body = r.text().catch(async (e: Error) => {
      if (r.request().method() !== "GET") return `unread: ${e.message}`;
      return (await context.request.get(r.url(), { maxRedirects: 0 })).text();
    });
    htmlPages.push({ url: r.url(), headers: r.headers(), body });
  });
  return { context, page };
}

async function authCookies(context: BrowserContext): Promise<Cookie[]> {
  return (await context.cookies()).filter((c) => c.name === AUTH_COOKIE);
}

/** The sign-in page's form, filled and submitted; answers the POST's own response (the 303 or the page). */
async function signIn(
  page: Page,
  username: string,
  password: string,
  persistent = false,
  redirect = DIRECTORY,
): Promise<{ post: Response; shown: Response | null }> {
  const shown = await page.goto(https(`/oauth2/signin?redirect=${encodeURIComponent(redirect)}`));
  expect(shown?.status()).toBe(200);
  await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toMatch(/^Sign in to /);
  // The form: the two fields, the checkbox and the hidden CSRF and redirect fields (the page already reduces an
  // absolute URL of this site to its path and replaces an off-site one by the directory).
  expect(await page.locator("form input[type=hidden][name=csrf]").count()).toBe(1);
  const here = `${engine.ready.https}/`;
  const kept = redirect.startsWith("/")
    ? redirect
    : redirect.startsWith(here)
      ? redirect.slice(here.length - 1)
      : DIRECTORY;
  expect(await page.locator("form input[type=hidden][name=redirect]").getAttribute("value")).toBe(kept);
  expect(await page.getByLabel("Keep me signed in").getAttribute("name")).toBe("persistent");
  expect(await page.getByLabel("Keep me signed in").isChecked()).toBe(false);
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  if (persistent) await page.getByLabel("Keep me signed in").check();
  return { post: await submit(page, "Sign in"), shown };
}

/** Clicks a form's button; answers the form's POST response (a 303 or a page) once the next page has loaded. */
async function submit(page: Page, button: string): Promise<Response> {
  const posted = page.waitForResponse((r) => r.request().method() === "POST" && r.request().isNavigationRequest());
  const loaded = page.waitForEvent("load");
  await page.getByRole("button", { name: button, exact: true }).click();
  const [post] = await Promise.all([posted, loaded]);
  return post;
}

/** Follows a link on the page and waits for the next page to load. */
async function follow(page: Page, link: string): Promise<void> {
  const loaded = page.waitForEvent("load");
  await page.getByRole("link", { name: link, exact: true }).click();
  await loaded;
}

function authSetCookie(setCookies: readonly string[]): string {
  const ours = setCookies.filter((c) => c.startsWith(`${AUTH_COOKIE}=`));
  expect(ours).toHaveLength(1);
  return ours[0] as string;
}

interface CookieValue {
  token: string;
  expires: number;
  allSSL: boolean;
  persistent: boolean;
  username: string;
  role: string;
}

function decodeCookieValue(value: string): CookieValue {
  return JSON.parse(decodeURIComponent(value)) as CookieValue;
}

/** `community/self` as JSON for an explicit token, fetched by the browser in a fresh, cookie-less context. */
async function communitySelf(token: string): Promise<unknown> {
  const { page } = await newPage();
  const res = await page.goto(https(`/community/self?f=json&token=${encodeURIComponent(token)}`));
  expect(res?.headers()["content-type"]).toMatch(/^application\/json/);
  return res?.json();
}

/** The text of the result table's cell for `key` (results render as `<tr><th>key</th><td>value</td></tr>`). */
function cell(page: Page, key: string) {
  return page
    .locator("tr")
    .filter({ has: page.locator("th", { hasText: new RegExp(`^${key}$`) }) })
    .locator("td");
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ engine, browser } = await startEngineAndBrowser());
});

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

describe("signed in through the sign-in page", () => {
  let context: BrowserContext;
  let page: Page;
  /** A form's result page (post/redirect/get), which opens only for whoever sent the form. */
  let resultUrl = "";

  beforeAll(async () => {
    ({ context, page } = await newPage());
  });

  it("lands on the directory as that user, with a Secure HttpOnly SameSite=Lax session cookie", async () => {
    const { post } = await signIn(page, "admin", PASSWORDS.admin);
    expect(post.status()).toBe(303);
    expect(await post.headerValue("location")).toBe(DIRECTORY);
    const raw = authSetCookie(await post.headerValues("set-cookie"));
    const match = raw.match(/^vendor_authcookie=([^;]+); Path=\/; Secure; HttpOnly; SameSite=Lax$/);
    expect(match, raw).not.toBeNull();
    const value = decodeCookieValue(match?.[1] as string);
    expect(value).toEqual({
      token: expect.any(String),
      expires: expect.any(Number),
      allSSL: expect.any(Boolean),
      persistent: false,
      username: "admin",
      role: "org_admin",
    });

    expect(page.url()).toBe(https());
    await expect(page.locator("p", { hasText: "Signed in as" }).innerHTML()).resolves.toBe(
      "Signed in as <strong>admin</strong> (org_admin).",
    );
    for (const link of ["Generate Token", "Roles", "Create a role", "Applications", "My account"]) {
      expect(await page.getByRole("link", { name: link, exact: true }).count(), link).toBe(1);
    }
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(1);
    expect(await page.locator(`form[action="${DIRECTORY}/oauth2/signout"] input[name=csrf]`).count()).toBe(1);
    expect(await page.locator(`form[method=get][action="${DIRECTORY}"] input[name=jobId]`).count()).toBe(1);
    await page.screenshot({ path: join(ARTIFACTS, "directory.png"), fullPage: true });
    expect(statSync(join(ARTIFACTS, "directory.png")).size).toBeGreaterThan(1000);

    const [cookie, ...more] = await authCookies(context);
    expect(more).toHaveLength(0);
    expect(cookie).toMatchObject({
      domain: "localhost",
      path: "/",
      expires: -1,
      httpOnly: true,
      secure: true,
      sameSite: "Lax",
    });
    expect(decodeCookieValue(cookie?.value as string)).toEqual(value);
  });

  it("generates a token from the generateToken form", async () => {
    await page.goto(https());
    await follow(page, "Generate Token");
    expect(page.url()).toBe(https("/generateToken?f=html"));
    expect(await page.getByLabel("Format").inputValue()).toBe("html");
    await page.getByLabel("Username").fill("admin");
    await page.getByLabel("Password").fill(PASSWORDS.admin);
    await page.getByLabel("Client").selectOption("requestip");
    await page.getByLabel("Expiration (minutes)").fill("30");
    expect((await submit(page, "Submit")).status()).toBe(303);
    const token = (await cell(page, "token").textContent()) ?? "";
    expect(token.length).toBeGreaterThan(20);
    // A date, shown as a UTC ISO date (the number it was sent as is kept in the element's title).
    const shown = (await cell(page, "expires").textContent()) ?? "";
    expect(shown).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
    const expires = Date.parse(shown);
    expect(Number(await cell(page, "expires").locator("time").getAttribute("title"))).toBe(expires);
    expect(Math.abs(expires - (Date.now() + 30 * 60_000))).toBeLessThan(60_000);
    expect(["true", "false"]).toContain(await cell(page, "ssl").textContent());
    // The token works for that user. It is bound to the browser's address: asked from the same browser (another
    // context, no cookies), not from Node, which may reach `localhost` over the other address family.
    const self = await communitySelf(token);
    expect(self).toMatchObject({ username: "admin" });
  });

  it("creates a role, renames it through the update form, and refuses that form without its CSRF field", async () => {
    await page.goto(https());
    await follow(page, "Create a role");
    expect(page.url()).toBe(https("/portals/self/createRole?f=html"));
    await page.getByLabel("Name").fill("Browser Crew");
    await page.getByLabel("Description").fill("Made in a browser");
    expect((await submit(page, "Submit")).status()).toBe(303);
    // The result says what happened in words, and leads on.
    await expect(page.getByRole("status").textContent()).resolves.toBe(
      "Created the role “Browser Crew”. It grants no privileges yet: set them next.",
    );
    const id = /\/roles\/([A-Za-z0-9]{16})\?f=html$/.exec(
      (await page.getByRole("link", { name: "The role", exact: true }).getAttribute("href")) ?? "",
    )?.[1] as string;
    expect(id).toBeDefined();
    const roleJson = async () =>
      (await (await page.request.get(https(`/portals/self/roles/${id}?f=json`))).json()) as Record<string, unknown>;
    expect(await roleJson()).toMatchObject({ id, name: "Browser Crew", description: "Made in a browser" });

    // Privileges as checkboxes with ArcGIS's names, the standard ones this server keeps without acting on included.
    await follow(page, "Set its privileges");
    expect(page.url()).toBe(https(`/portals/self/roles/${id}/setPrivileges?f=html`));
    expect(await page.locator("form input[type=checkbox]").count()).toBeGreaterThan(40);
    await page.getByLabel("portal:user:createItem", { exact: true }).check();
    await page.getByLabel("features:user:edit", { exact: true }).check();
    expect((await submit(page, "Submit")).status()).toBe(303);
    await expect(page.getByRole("status").textContent()).resolves.toBe(
      "The role “Browser Crew” now grants 2 privileges: portal:user:createItem, features:user:edit.",
    );
    const privileges = async () =>
      (await (await page.request.get(https(`/portals/self/roles/${id}/privileges?f=json`))).json()) as unknown;
    expect(await privileges()).toEqual({ privileges: ["portal:user:createItem", "features:user:edit"] });
    // The form shows the role's privileges checked; unchecking one takes it away.
    await follow(page, "Set its privileges");
    await expect(page.getByLabel("features:user:edit", { exact: true }).isChecked()).resolves.toBe(true);
    await page.getByLabel("features:user:edit", { exact: true }).uncheck();
    await submit(page, "Submit");
    expect(await privileges()).toEqual({ privileges: ["portal:user:createItem"] });

    // From the roles page to the role's page to its update form, by following links as a person would.
    const updateUrl = https(`/portals/self/roles/${id}/update?f=html`);
    await page.goto(https("/portals/self/roles?f=html"));
    await page.getByRole("link", { name: "Browser Crew", exact: true }).click();
    expect(page.url()).toBe(https(`/portals/self/roles/${id}?f=html`));
    await page.getByRole("link", { name: "Update", exact: true }).click();
    expect(page.url()).toBe(updateUrl);
    await expect(page.getByLabel("Description").inputValue()).resolves.toBe("Made in a browser");
    expect(await page.locator("form input[type=hidden][name=csrf]").count()).toBe(1);
    await page.getByLabel("Name").fill("Browser Crew Renamed");
    expect((await submit(page, "Submit")).status()).toBe(303);
    // Forms post to their path: the query's values never compete with what the user typed. The answer is a GET
    // of the same path showing the result (post/redirect/get).
    expect(new URL(page.url()).pathname).toBe(`${DIRECTORY}/portals/self/roles/${id}/update`);
    expect(new URL(page.url()).searchParams.get("formResult")).toMatch(/^[\w-]+\.[\w-]+$/);
    await expect(page.getByRole("status").textContent()).resolves.toBe(
      "The role “Browser Crew Renamed”: renamed from “Browser Crew”.",
    );
    await follow(page, "All roles");

    expect(page.url()).toBe(https("/portals/self/roles?f=html"));
    const roles = (await page.locator("main").textContent()) ?? "";
    expect(roles).toContain("Browser Crew Renamed");
    expect(roles).toContain(id);

    // The same POST from the browser's session (its cookies, auth and CSRF ones, go along) without the field.
    const forged = await page.request.post(https(`/portals/self/roles/${id}/update`), {
      form: { f: "json", name: "Forged Name" },
    });
    expect(await forged.json()).toEqual({
      error: {
        code: 403,
        messageCode: "GWM_0003",
        message: "You do not have permissions to access this resource or perform this operation.",
        details: ["The form could not be verified (CSRF check failed): reload the page and submit it again."],
      },
    });
    const forgedHtml = await page.request.post(updateUrl, { form: { name: "Forged Name" } });
    expect(forgedHtml.headers()["content-type"]).toMatch(/^text\/html/);
    expect(await forgedHtml.text()).toContain("CSRF check failed");
    expect(await roleJson()).toMatchObject({ id, name: "Browser Crew Renamed" });
    // …and the very same request with the form's hidden field is accepted: the field is what the check needs.
    await page.goto(updateUrl);
    const csrf = (await page.locator("form input[type=hidden][name=csrf]").getAttribute("value")) ?? "";
    const withField = await page.request.post(https(`/portals/self/roles/${id}/update`), {
      form: { f: "json", name: "Browser Crew Final", csrf },
    });
    expect(await withField.json()).toEqual({ success: true });
    expect(await roleJson()).toMatchObject({ id, name: "Browser Crew Final" });
  });

  it("describes a data store from a form of choices, follows its contents and publishes a cache from its link", async () => {
    // The describe form offers the caller's data stores and their servers by name: nothing to type but the path.
    await page.goto(https("/portals/self/datastores/describe?f=html"));
    const store = page.getByLabel("Data store");
    expect(await store.locator("option").allTextContents()).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Demo Data Store \(folder, [0-9a-f]{32}\)$/)]),
    );
    await store.selectOption({
      label: (await store.locator("option", { hasText: "Demo Data Store" }).first().textContent()) ?? "",
    });
    expect(await page.getByLabel("Server").locator("option").allTextContents()).toEqual([
      expect.stringMatching(/^arcgis \([A-Za-z0-9]+\)$/),
    ]);
    await page.getByLabel("Path").fill("/caches/tiles");
    await page.getByLabel("Type").fill("folder");
    // The form's POST is answered with the job's own page (303 See Other): reloading it never starts another job.
    expect((await submit(page, "Submit")).status()).toBe(303);
    const jobUrl = page.url();
    expect(new URL(jobUrl).pathname).toMatch(/\/portals\/self\/jobs\/[0-9a-f]{32}$/);
    for (let i = 0; i < 50 && (await page.getByRole("link", { name: "Publish as MapServer" }).count()) === 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
      await page.goto(jobUrl);
    }
    // Each child describes the next level; a cache offers Publish with its serviceConfiguration filled in.
    const describeNext = new URL(
      (await page
        .getByRole("row", { name: /Basemap/ })
        .getByRole("link", { name: "Describe" })
        .getAttribute("href")) ?? "",
      jobUrl,
    );
    expect(describeNext.searchParams.get("path")).toBe("/caches/tiles/Basemap");
    expect(describeNext.searchParams.get("type")).toBe("tileCache");
    await follow(page, "Publish as MapServer");
    const config = JSON.parse(await page.getByLabel("serviceConfiguration (JSON)").inputValue()) as Record<
      string,
      unknown
    >;
    expect(config).toMatchObject({
      type: "MapServer",
      serviceName: "Basemap",
      properties: { pathInCachedStore: "/caches/tiles/Basemap" },
    });
    // A ready example per service type is shown under the field.
    const hint = (await page.locator("p.hint").first().textContent()) ?? "";
    for (const type of ["SceneServer", "MapServer", "VectorTileServer", "ImageServer"])
      expect(hint).toContain(`${type}:\n{"type":"${type}"`);
    // …each naming the described store, not whichever store comes first.
    const described = (config.properties as { cacheStoreId: string }).cacheStoreId;
    expect(hint.match(/"cacheStoreId":"([^"]+)"/g)).toEqual(Array(4).fill(`"cacheStoreId":"${described}"`));
    expect(hint).toContain("Data store: Demo Data Store (");
    await page.getByLabel("Server folder").fill("Browser");
    expect((await submit(page, "Submit")).status()).toBe(303);
    const published = page.url();
    for (let i = 0; i < 50 && (await page.getByRole("link", { name: "Service" }).count()) === 0; i++) {
      await new Promise((r) => setTimeout(r, 200));
      await page.goto(published);
    }
    await follow(page, "Service");
    expect(page.url()).toBe(`${engine.ready.https}/arcgis/rest/services/Browser/Basemap/MapServer?f=html`);
    expect(await page.locator("main").textContent()).toContain("Map,TilesOnly");
  });

  it("prefills the publish form with the store whose link was followed, from the directory and the store's page", async () => {
    await page.goto(https());
    const rows = page.locator("li").filter({ has: page.getByRole("link", { name: "Publish a service", exact: true }) });
    const titles = (await rows.allTextContents()).map((t) => t.split(" (")[0] ?? "");
    // The demo has several stores: a link of any but the first must not prefill the first.
    expect(titles.length).toBeGreaterThan(1);
    const ids: string[] = [];
    for (const title of titles) {
      await page.goto(https());
      const link = rows
        .filter({ hasText: title })
        .first()
        .getByRole("link", { name: "Publish a service", exact: true });
      const id = new URL((await link.getAttribute("href")) ?? "", https()).searchParams.get("datastoreId") ?? "";
      ids.push(id);
      const loaded = page.waitForEvent("load");
      await link.click();
      await loaded;
      const config = JSON.parse(await page.getByLabel("serviceConfiguration (JSON)").inputValue()) as {
        properties: { cacheStoreId: string };
      };
      expect(config.properties.cacheStoreId, title).toBe(id);
      // The examples under the field name that store, and no other.
      const hint = (await page.locator("p.hint").first().textContent()) ?? "";
      expect(hint, title).toContain(`Data store: ${title} (`);
      expect(hint.match(/"cacheStoreId":"([^"]+)"/g), title).toEqual(Array(4).fill(`"cacheStoreId":"${id}"`));
    }
    expect(new Set(ids).size).toBe(titles.length);
    // The store's own page leads to the same form, for that store.
    const last = ids.at(-1) ?? "";
    await page.goto(https(`/content/items/${last}?f=html`));
    await follow(page, "Publish a service");
    expect(new URL(page.url()).searchParams.get("datastoreId")).toBe(last);
    const fromItem = JSON.parse(await page.getByLabel("serviceConfiguration (JSON)").inputValue()) as {
      properties: { cacheStoreId: string };
    };
    expect(fromItem.properties.cacheStoreId).toBe(last);
  });

  it("fits every form page into a 1,280 px window: no page is wider than the window", async () => {
    const { page: wide } = await newPage();
    await wide.setViewportSize({ width: 1280, height: 800 });
    await wide.context().addCookies(await context.cookies());
    const store = new URL(
      (await (async () => {
        await wide.goto(https());
        return wide.getByRole("link", { name: "Publish a service", exact: true }).first().getAttribute("href");
      })()) ?? "",
      https(),
    ).searchParams.get("datastoreId");
    const forms = [
      "/content/users/admin/addItem?type=Data%20Store&f=html",
      `/portals/self/datastores/publish?datastoreId=${store}&f=html`,
      `/portals/self/datastores/describe?datastoreId=${store}&f=html`,
      `/portals/self/datastores/validate?datastoreId=${store}&f=html`,
      `/portals/self/datastores/allDatasets/publishLayers?datastoreId=${store}&f=html`,
      `/content/items/${store}?f=html`,
      "/portals/self/createRole?f=html",
      "/generateToken?f=html",
      "/portals/self/apps/register?f=html",
      "/community/createGroup?f=html",
      "",
    ];
    for (const path of forms) {
      await wide.goto(https(path));
      expect(await wide.locator("form").count(), path).toBeGreaterThan(0);
      const name = `form-${path.replace(/\?.*$/, "").replace(/[^A-Za-z]+/g, "-") || "directory"}.png`;
      // A full-page screenshot is as wide as the document: wider than the window means a horizontal scroll bar.
      const shot = PNG.sync.read(await wide.screenshot({ path: join(ARTIFACTS, name), fullPage: true }));
      expect(shot.width, path).toBeLessThanOrEqual(1280);
      // Every field and button lies inside the window.
      for (const box of await wide.locator("form :is(input:not([type=hidden]), textarea, select, button)").all()) {
        const b = await box.boundingBox();
        if (b) expect(b.x + b.width, `${path}: ${await box.getAttribute("name")}`).toBeLessThanOrEqual(1280);
      }
    }
  });

  it("shares, makes private and deletes an item from its page, and refuses those forms without their CSRF field", async () => {
    const itemJson = async (id: string) =>
      (await (await page.request.get(https(`/content/items/${id}?f=json`))).json()) as Record<string, unknown>;
    const anonymousSees = async () => {
      const res = await fetch(`${engine.ready.http}/arcgis/rest/services?f=json`);
      return ((await res.json()) as { services: { name: string }[] }).services.some((s) => s.name === "World_Basemap");
    };
    // From the directory to the administrator's content to the item's page, by following links.
    await page.goto(https());
    await follow(page, "My content");
    await follow(page, "World_Basemap");
    const itemUrl = page.url();
    const id = itemUrl.match(/\/content\/items\/([0-9a-f]{32})\?f=html$/)?.[1] ?? "";
    expect(id).not.toBe("");
    await expect(cell(page, "Access").textContent()).resolves.toBe("public");
    await expect(cell(page, "Type").textContent()).resolves.toBe("Map Service");
    await expect(cell(page, "Created").textContent()).resolves.toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z$/);
    expect(await page.getByLabel("Everyone (public)").isChecked()).toBe(true);
    expect(await page.getByLabel("Organization").isChecked()).toBe(true);
    expect(await anonymousSees()).toBe(true);
    await page.screenshot({ path: join(ARTIFACTS, "item.png"), fullPage: true });

    // Share with the organization only: the box for everyone is unchecked (the browser sends nothing for it).
    await page.getByLabel("Everyone (public)").uncheck();
    expect((await submit(page, "Share")).status()).toBe(303);
    // The result says who sees it now, and leads back to the item.
    await expect(page.getByRole("status").textContent()).resolves.toBe(
      "“World_Basemap” is now visible to the organization.",
    );
    expect(await itemJson(id)).toMatchObject({ access: "org" });
    expect(await anonymousSees()).toBe(false);

    await follow(page, "The item");
    expect(page.url()).toBe(itemUrl);
    expect((await submit(page, "Make private")).status()).toBe(303);
    await expect(page.getByRole("status").textContent()).resolves.toBe(
      "“World_Basemap” is now private (its owner and administrators).",
    );
    expect(await itemJson(id)).toMatchObject({ access: "private" });

    // The same POSTs from the browser's session without the form's field are refused.
    for (const op of ["share", "delete"]) {
      const forged = await page.request.post(https(`/content/users/admin/items/${id}/${op}`), {
        form: { f: "json", everyone: "true" },
      });
      expect(await forged.json()).toMatchObject({ error: { code: 403 } });
    }
    expect(await itemJson(id)).toMatchObject({ access: "private" });

    // Deleting the item unpublishes the service.
    // Deleting asks first: the button leads to a page that says what will happen, with a box to check.
    await page.goto(itemUrl);
    expect((await submit(page, "Delete")).status()).toBe(200);
    await expect(page.getByRole("status").textContent()).resolves.toMatch(/^Nothing has been done yet\./);
    expect(await itemJson(id)).toMatchObject({ access: "private" });
    await page.getByLabel(/^I understand: the item goes for good/).check();
    expect((await submit(page, "Delete Item")).status()).toBe(303);
    await expect(cell(page, "success").textContent()).resolves.toBe("true");
    expect(await itemJson(id)).toMatchObject({ error: { messageCode: "CONT_0001" } });
    const service = await page.request.get(`${engine.ready.https}/arcgis/rest/services/World_Basemap/MapServer?f=json`);
    expect(await service.json()).toMatchObject({ error: { code: 404 } });
  });

  it("registers, validates and deletes a data store from forms: results lead on, reloads send nothing, deleting asks first", async () => {
    const posts: string[] = [];
    const count = (r: { method(): string; url(): string }) => {
      if (r.method() === "POST") posts.push(new URL(r.url()).pathname);
    };
    page.on("request", count);
    try {
      // Register: the answer is a 303 to a GET of the result, which names the store and leads to it.
      await page.goto(https("/content/users/admin/addItem?type=Data%20Store&f=html"));
      await page.getByLabel("Title", { exact: true }).fill("Browser Files");
      const folder = join(engine.dataDir, "demo-store");
      await page
        .getByLabel("Data store JSON")
        .fill(JSON.stringify({ type: "folder", path: "/fileShares/browser", info: { path: folder } }));
      const registered = await submit(page, "Submit");
      expect(registered.status()).toBe(303);
      expect(new URL((await registered.headerValue("location")) ?? "", https()).searchParams.has("formResult")).toBe(
        true,
      );
      await expect(page.getByRole("status").textContent()).resolves.toMatch(/^Registered “Browser Files”\./);
      // Reloading shows the result again and sends nothing: one store, one POST.
      const again = await page.reload();
      expect(again?.request().method()).toBe("GET");
      await expect(page.getByRole("status").textContent()).resolves.toMatch(/^Registered “Browser Files”\./);
      expect(posts.filter((p) => p.endsWith("/addItem"))).toHaveLength(1);
      const stores = async () =>
        (
          (await (await page.request.get(https("/content/users/admin?f=json&num=100"))).json()) as {
            items: { title: string }[];
          }
        ).items.filter((i) => i.title === "Browser Files");
      expect(await stores()).toHaveLength(1);
      // The result page of another browser (no CSRF cookie of this one) shows nothing.
      const { page: other } = await newPage();
      await other.goto(page.url());
      await expect(other.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
        "This result is no longer shown.",
      );
      resultUrl = page.url();
      await follow(page, "The data store");
      const itemUrl = page.url();
      const id = /\/content\/items\/([0-9a-f]{32})\?f=html$/.exec(itemUrl)?.[1] ?? "";
      expect(id).not.toBe("");

      // Validate, from the store's page: the result says so in words and leads back to the store.
      await follow(page, "Validate");
      await page.getByLabel("Server").selectOption({ index: 0 });
      expect((await submit(page, "Submit")).status()).toBe(303);
      await expect(page.getByRole("status").textContent()).resolves.toBe("The data store can be read: it is valid.");
      expect(await page.getByRole("link", { name: "Add it to a server" }).count()).toBe(1);
      await follow(page, "The data store");
      expect(page.url()).toBe(itemUrl);

      // Delete: the button asks first (nothing happens), then the checked box deletes it; its result leads on.
      expect((await submit(page, "Delete")).status()).toBe(200);
      await expect(page.getByRole("status").textContent()).resolves.toMatch(/^Nothing has been done yet\./);
      expect(await stores()).toHaveLength(1);
      // The box is required: the browser itself will not send the form without it.
      await page.getByRole("button", { name: "Delete Item", exact: true }).click();
      expect(page.url()).toBe(https(`/content/users/admin/items/${id}/delete`));
      expect(await stores()).toHaveLength(1);
      await page.getByLabel(/^I understand: /).check();
      expect((await submit(page, "Delete Item")).status()).toBe(303);
      await expect(page.getByRole("status").textContent()).resolves.toBe(`The item ${id} was deleted.`);
      expect(await stores()).toHaveLength(0);
      await page.reload();
      expect(posts.filter((p) => p.endsWith("/delete"))).toHaveLength(2);
      await follow(page, "admin's content");
      expect(page.url()).toBe(https("/content/users/admin?f=html"));
      // The API is unchanged: a client sends no CSRF field, is not asked to confirm, and is answered JSON.
      const direct = await page.request.post(https("/portals/self/datastores/validate"), {
        form: { f: "json", datastoreId: id, serverId: "x" },
      });
      expect(direct.status()).toBe(200);
      expect(await direct.json()).toMatchObject({ error: { code: expect.any(Number) } });
    } finally {
      page.off("request", count);
    }
  });

  // The update form starts from the role's current values, so a field the user leaves alone is kept.
  it("keeps a role's description when only its name is changed through the update form", async () => {
    await page.goto(https("/portals/self/createRole?f=html"));
    await page.getByLabel("Name").fill("Keeps Description");
    await page.getByLabel("Description").fill("Must survive a rename");
    expect((await submit(page, "Submit")).status()).toBe(303);
    await follow(page, "Rename or describe it");
    const id = /\/roles\/([A-Za-z0-9]{16})\/update\?f=html$/.exec(page.url())?.[1] as string;
    await page.getByLabel("Name").fill("Kept Description");
    expect((await submit(page, "Submit")).status()).toBe(303);
    await expect(page.getByRole("status").textContent()).resolves.toBe(
      "The role “Kept Description”: renamed from “Keeps Description”.",
    );
    const role = await (await page.request.get(https(`/portals/self/roles/${id}?f=json`))).json();
    expect(role).toMatchObject({ name: "Kept Description", description: "Must survive a rename" });
  });

  // The Client list's first option is requestip, the operation's own default when no client is given.
  it("runs the generateToken form with only a username and password", async () => {
    await page.goto(https("/generateToken?f=html"));
    await page.getByLabel("Username").fill("admin");
    await page.getByLabel("Password").fill(PASSWORDS.admin);
    expect((await submit(page, "Submit")).status()).toBe(303);
    expect(await page.locator("main").textContent()).not.toContain("'referer' must be specified");
    expect(((await cell(page, "token").textContent({ timeout: 2000 })) ?? "").length).toBeGreaterThan(20);
  });

  it("signs out from the directory's button: cookie cleared, token revoked", async () => {
    const [before] = await authCookies(context);
    const token = decodeCookieValue(before?.value as string).token;
    // The token is good before signing out.
    const good = await communitySelf(token);
    expect(good).toMatchObject({ username: "admin" });

    await page.goto(https());
    const post = await submit(page, "Sign out");
    expect(post.url()).toBe(https("/oauth2/signout"));
    expect(post.status()).toBe(303);
    expect(await post.headerValue("location")).toBe(DIRECTORY);
    expect(authSetCookie(await post.headerValues("set-cookie"))).toBe(
      "vendor_authcookie=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0",
    );
    // A result page sealed for the signed-in user no longer opens in this browser once signed out.
    expect(resultUrl).toContain("formResult=");
    await page.goto(resultUrl);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(
      "This result is no longer shown.",
    );
    await page.goto(https());
    expect(page.url()).toBe(https());
    await expect(page.locator("main").textContent()).resolves.toContain("You are not signed in.");
    expect(await page.getByRole("button", { name: "Sign out" }).count()).toBe(0);
    expect(await authCookies(context)).toEqual([]);

    const refused = await communitySelf(token);
    expect(refused).toMatchObject({ error: { code: 498 } });
  });
});

describe("keep me signed in", () => {
  it("sets a two-week persistent cookie (Max-Age=1209600)", async () => {
    const { context, page } = await newPage();
    // A same-site redirect other than the directory is followed.
    const account = `${DIRECTORY}/community/self?f=html`;
    const { post } = await signIn(page, "publisher", PASSWORDS.publisher, true, account);
    const now = Date.now();
    expect(post.status()).toBe(303);
    expect(await post.headerValue("location")).toBe(account);
    const raw = authSetCookie(await post.headerValues("set-cookie"));
    const match = raw.match(/^vendor_authcookie=([^;]+); Path=\/; Secure; HttpOnly; SameSite=Lax; Max-Age=(\d+)$/);
    expect(match, raw).not.toBeNull();
    expect(Number(match?.[2])).toBe(TWO_WEEKS);
    expect(decodeCookieValue(match?.[1] as string)).toMatchObject({ persistent: true, username: "publisher" });
    expect(page.url()).toBe(`${engine.ready.https}${account}`);
    await expect(cell(page, "username").textContent()).resolves.toBe("publisher");
    const [cookie] = await authCookies(context);
    expect(cookie).toMatchObject({ path: "/", httpOnly: true, secure: true, sameSite: "Lax" });
    expect(Math.abs((cookie?.expires as number) - (now / 1000 + TWO_WEEKS))).toBeLessThan(60);
  });
});

describe("refusals", () => {
  it("shows a wrong password on the page and sets no sign-in cookie", async () => {
    const { context, page } = await newPage();
    const { post } = await signIn(page, "user", "not-the-password");
    expect(post.status()).toBe(200);
    expect(post.url()).toBe(https("/oauth2/signin"));
    expect((await post.headerValues("set-cookie")).filter((c) => c.startsWith(`${AUTH_COOKIE}=`))).toEqual([]);
    await expect(page.getByRole("alert").textContent()).resolves.toBe("Invalid username or password.");
    expect(await page.getByLabel("Username").inputValue()).toBe("user");
    expect(await page.getByLabel("Password").inputValue()).toBe("");
    expect(await authCookies(context)).toEqual([]);
    // The re-rendered form keeps where to go, and the right password now signs in from it.
    expect(await page.locator("form input[type=hidden][name=redirect]").getAttribute("value")).toBe(DIRECTORY);
    await page.getByLabel("Password").fill(PASSWORDS.user);
    const retry = await submit(page, "Sign in");
    expect(retry.status()).toBe(303);
    expect(await retry.headerValue("location")).toBe(DIRECTORY);
    expect(page.url()).toBe(https());
    await expect(page.locator("p", { hasText: "Signed in as" }).innerHTML()).resolves.toBe(
      "Signed in as <strong>user</strong> (org_user).",
    );
    expect(await authCookies(context)).toHaveLength(1);
  });

  // The sign-in form posts to its path, with the (validated) redirect as a field: a redirect the page rewrote
  // never competes with the one left in the link's query string.
  it("signs in from a link with an off-site redirect, landing on the directory", async () => {
    const { page } = await newPage();
    const { post } = await signIn(page, "user", PASSWORDS.user, false, "https://evil.example/phish");
    expect(await post.text().catch(() => "")).not.toContain("Conflicting parameters.");
    expect(post.status()).toBe(303);
    expect(await post.headerValue("location")).toBe(DIRECTORY);
  });

  it("signs in from a link whose redirect is an absolute URL of this site", async () => {
    const { page } = await newPage();
    const target = `${engine.ready.https}${DIRECTORY}/community/self?f=html`;
    const { post } = await signIn(page, "user", PASSWORDS.user, false, target);
    expect(await post.text().catch(() => "")).not.toContain("Conflicting parameters.");
    expect(post.status()).toBe(303);
    expect(await post.headerValue("location")).toBe(`${DIRECTORY}/community/self?f=html`);
  });

  it("refuses the sign-in page over plain HTTP and never sets the cookie there", async () => {
    const { context, page } = await newPage();
    const url = `${engine.ready.http}${DIRECTORY}/oauth2/signin?redirect=${encodeURIComponent(DIRECTORY)}`;
    const shown = await page.goto(url);
    expect(shown?.headers()["content-type"]).toMatch(/^text\/html/);
    expect(await shown?.headerValues("set-cookie")).toEqual([]);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("SSL Required");
    expect(await page.getByLabel("Password").count()).toBe(0);
    // It says why, and links to the same page over HTTPS, where the form is.
    expect(await page.locator("main").textContent()).toContain(
      "Sign In answers over HTTPS only, so that passwords and tokens never travel in clear.",
    );
    const https = `${engine.ready.https}${DIRECTORY}/oauth2/signin`;
    const link = page.getByRole("link", { name: https });
    expect(await link.getAttribute("href")).toBe(https);
    // Posting credentials there anyway (as a script or a stale form would) is refused too.
    const posted = await page.request.post(url, {
      form: { username: "admin", password: PASSWORDS.admin, persistent: "true", redirect: DIRECTORY },
    });
    expect(await posted.text()).toContain("SSL Required");
    expect(posted.headersArray().filter((h) => h.name.toLowerCase() === "set-cookie")).toEqual([]);
    // No cookie at all: neither the sign-in cookie nor a CSRF one (forms are only offered over HTTPS).
    expect(await context.cookies()).toEqual([]);
  });
});

describe("OAuth authorization in the browser", () => {
  /** An app: a listener on loopback that records what reaches its redirect URI; the URI and what arrived. */
  async function loopbackApp() {
    const arrived: string[] = [];
    const server = createServer((req, res) => {
      // The browser may ask for /favicon.ico too: only the redirect URI's path counts.
      if ((req.url ?? "").startsWith("/cb")) arrived.push(req.url ?? "");
      res.writeHead(200, { "content-type": "text/plain" }).end("signed in");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const redirectUri = `http://127.0.0.1:${(server.address() as AddressInfo).port}/cb`;
    const close = () => new Promise((resolve) => server.close(resolve));
    return { redirectUri, arrived, close };
  }

  async function register(page: Page, name: string, appType: string, redirectUri: string) {
    const tokenRes = await page.request.post(https("/generateToken"), {
      form: { f: "json", username: "admin", password: PASSWORDS.admin, client: "referer", referer: "mapgate-test" },
    });
    const adminToken = ((await tokenRes.json()) as { token: string }).token;
    const registered = await page.request.post(https("/portals/self/apps/register"), {
      form: { f: "json", name, appType, redirect_uris: JSON.stringify([redirectUri]) },
      headers: { referer: "mapgate-test", "x-esri-authorization": `Bearer ${adminToken}` },
    });
    return (await registered.json()) as { client_id: string; client_secret?: string };
  }

  /** Opens the authorization page, signs in on it and answers the parameters the app received. */
  async function signInAndAllow(page: Page, app: string, query: Record<string, string>, redirectUri: string) {
    await page.goto(https(`/oauth2/authorize?${new URLSearchParams(query)}`));
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe(`Sign in to ${app}`);
    await page.getByLabel("Username").fill("admin");
    await page.getByLabel("Password").fill(PASSWORDS.admin);
    const loaded = page.waitForURL(`${redirectUri}?**`);
    await page.getByRole("button", { name: "Sign in and allow", exact: true }).click();
    await loaded;
    await expect(page.locator("body").textContent()).resolves.toBe("signed in");
  }

  it("signs in on the authorization page and delivers the code to a native app's loopback redirect URI", async () => {
    const app = await loopbackApp();
    try {
      const { page } = await newPage();
      const { client_id: clientId } = await register(page, "Field App", "native", app.redirectUri);
      const challenge = createHash("sha256").update("v".repeat(43)).digest("base64url");
      await signInAndAllow(
        page,
        "Field App",
        {
          client_id: clientId,
          response_type: "code",
          redirect_uri: app.redirectUri,
          state: "st",
          code_challenge: challenge,
          code_challenge_method: "S256",
        },
        app.redirectUri,
      );
      // The browser really went there (a form-action policy without the app's origin would have stopped it).
      expect(app.arrived).toHaveLength(1);
      const sent = new URL(app.arrived[0] as string, app.redirectUri).searchParams;
      expect(sent.get("state")).toBe("st");
      expect(sent.get("code")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    } finally {
      await app.close();
    }
  });

  it("completes a server app's code flow without PKCE: the app redeems the code with its secret", async () => {
    const app = await loopbackApp();
    try {
      const { page } = await newPage();
      const registered = await register(page, "Back Office", "server", app.redirectUri);
      const query = { client_id: registered.client_id, response_type: "code", redirect_uri: app.redirectUri };
      await signInAndAllow(page, "Back Office", { ...query, state: "so" }, app.redirectUri);
      expect(app.arrived).toHaveLength(1);
      const sent = Object.fromEntries(new URL(app.arrived[0] as string, app.redirectUri).searchParams);
      expect(sent).toEqual({ code: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), state: "so" });
      const redeemed = await page.request.post(https("/oauth2/token"), {
        form: {
          grant_type: "authorization_code",
          client_id: registered.client_id,
          client_secret: registered.client_secret as string,
          code: sent.code as string,
          redirect_uri: app.redirectUri,
        },
      });
      expect(redeemed.status()).toBe(200);
      const { access_token: token } = (await redeemed.json()) as { access_token: string };
      expect(await communitySelf(token)).toMatchObject({ username: "admin" });
    } finally {
      await app.close();
    }
  });
});

describe("Content-Security-Policy", () => {
  it("every HTML page carried the policy, had no script, and nothing on it broke the policy", async () => {
    // Sign-in, directory, generateToken, createRole, role update, roles, sign-out, error and SSL pages at least.
    expect(htmlPages.length).toBeGreaterThan(15);
    for (const p of htmlPages) {
      const csp = p.headers["content-security-policy"] ?? "";
      expect(csp, p.url).toContain("default-src 'none'");
      expect(csp, p.url).toContain("form-action 'self'");
      const body = await p.body;
      expect(body, p.url).toMatch(/^<!DOCTYPE html>/);
      expect(body, p.url).not.toMatch(/<script|\son[a-z]+=/i);
    }
    // mapgate's pages only: an OAuth test's app page (its loopback redirect URI) is the app's, and its listener may
    // close before the browser asks it for a favicon.
    const ours = consoleMessages.filter((m) => m.url.startsWith(engine.ready.https));
    expect(ours.filter((m) => m.type === "error" || /Content.Security.Policy/i.test(m.text))).toEqual([]);
  });

  it("(control) a violation of that policy does show up as a console error", async () => {
    // Proves the console listener above would have seen one: the engine's own policy, served by the browser's
    // router with a stylesheet it does not allow.
    const csp = htmlPages[0]?.headers["content-security-policy"] ?? "";
    const { page } = await newPage();
    const seen: string[] = [];
    page.on("console", (m) => seen.push(`${m.type()}: ${m.text()}`));
    await page.route(https("/control"), (route) =>
      route.fulfill({
        contentType: "text/html; charset=utf-8",
        headers: { "content-security-policy": csp },
        body: "<!DOCTYPE html><style>body{color:red}</style><p>control</p>",
      }),
    );
    await page.goto(https("/control"));
    await expect.poll(() => seen.some((t) => /^error: .*Content Security Policy/.test(t))).toBe(true);
    consoleMessages.length = 0;
  });
});
