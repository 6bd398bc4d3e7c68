// The first hour, walked as a person would in a real headless Chromium against the local engine with the demo
// data: one address typed (the home page), then only links followed and forms submitted. Sign in as the
// publisher, describe the demo folder store level by level from the describe jobs' own links down to a tile
// cache, publish it from its "Publish as …" link, open the new service and its map, share it with everyone, then
// in a fresh anonymous browser view it on the map and a demo feature layer with a clicked feature's attributes.
// Every page on the way must offer the way forward (the link or button used next is there and visible); each
// step is screenshotted to test-artifacts/first-hour-<n>-<step>.png.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Browser, type BrowserContext, type Locator, type Page } from "playwright-core";
import { PNG } from "pngjs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { clickAFeature, startEngineAndBrowser, stopBrowserAndEngine, viewerSays } from "./helpers/browser.ts";
import { PASSWORDS, ROOT, type RunningEngine } from "./helpers/engine.ts";
import { CHROMIUM_ARGS, countNonBackground } from "./helpers/map-render.ts";

const ARTIFACTS = join(ROOT, "test-artifacts");
/** The viewer's map background (shared/viewer/viewer.js): what an empty map shows. */
const BACKGROUND: [number, number, number] = [0xee, 0xf1, 0xf4];
/** The demo folder store's tile cache reached by describing, one level at a time, and the service it becomes. */
const ROUTE = ["caches", "tiles"] as const;
const CACHE = "Basemap";

let engine: RunningEngine;
let browser: Browser;
const contexts: BrowserContext[] = [];
/** The publisher's page, then the anonymous visitor's: each step goes on from where the last one left off. */
let page: Page;
let visitor: Page;
/** Console errors, page errors (CSP violations among them) and failed requests, in either browser. */
const errors: string[] = [];
let shots = 0;

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 900 } });
  contexts.push(context);
  const p = await context.newPage();
  p.on("console", (m) => {
    // A tile the cache does not hold is a 404 the map expects.
    if (m.type() === "error" && !/^Failed to load resource: .* 404/.test(m.text())) errors.push(m.text());
  });
  p.on("pageerror", (e) => errors.push(e.message));
  p.on("requestfailed", (r) => {
    if (r.failure()?.errorText !== "net::ERR_ABORTED") errors.push(`${r.url()} ${r.failure()?.errorText}`);
  });
  return p;
}

/** The whole page as it is now, kept as the walk's next numbered screenshot. */
async function screenshot(p: Page, step: string): Promise<void> {
  shots += 1;
  await p.screenshot({
    path: join(ARTIFACTS, `first-hour-${String(shots).padStart(2, "0")}-${step}.png`),
    fullPage: true,
  });
}

/** The way forward must be on the page and visible before a person could use it. */
async function offered(what: Locator, description: string): Promise<Locator> {
  expect(await what.count(), `${description}: not on ${what.page().url()}`).toBeGreaterThan(0);
  expect(await what.first().isVisible(), `${description}: not visible on ${what.page().url()}`).toBe(true);
  return what.first();
}

/** Clicks a link or a form's button that is offered, and waits for the page it leads to. */
async function goOn(what: Locator, description: string): Promise<void> {
  const target = await offered(what, description);
  const p = what.page();
  await Promise.all([p.waitForEvent("load"), target.click()]);
}

const link = (p: Page | Locator, name: string | RegExp) =>
  p.getByRole("link", { name, exact: typeof name === "string" });
const button = (p: Page | Locator, name: string) => p.getByRole("button", { name, exact: true });

/** A row of the page's own table whose first cell says `name` (the home page's services, a describe's children). */
const row = (p: Page, name: string) =>
  p.locator("tr", { has: p.locator(":scope > td:first-child", { hasText: new RegExp(`^${name}$`) }) });

/** The value cell of a key in the job's table (`<tr><th>status</th><td>completed</td></tr>`). */
const jobField = (p: Page, key: string) =>
  p.locator("tr", { has: p.locator(":scope > th", { hasText: new RegExp(`^${key}$`) }) }).locator(":scope > td");

/**
 * On a job's page, follows its own "reload this page" link while it says the job is running (what a person
 * waiting on it does); answers its status once it has ended.
 */
async function jobEnded(p: Page): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const status = (await jobField(p, "status").first().textContent())?.trim() ?? "";
    if (status !== "processing") return status;
    await p.waitForTimeout(150);
    await goOn(link(p, "reload this page"), "a running job's page links to itself");
  }
  throw new Error(`the job on ${p.url()} did not end`);
}

/** The map's pixels that are not its empty background. */
async function drawnPixels(p: Page): Promise<number> {
  return countNonBackground(PNG.sync.read(await p.locator("#map").screenshot()), BACKGROUND);
}

/** A describe form (prefilled by the link that led to it) submitted, and its job followed to the children. */
async function describeFromForm(level: string): Promise<void> {
  await screenshot(page, `describe-${level}-form`);
  const form = page.url();
  // The form's answer is the job's own page (post/redirect/get): reloading it follows the job, never starts one.
  await goOn(button(page, "Submit"), `the describe form of ${level} submits and leads to its job`);
  expect(new URL(page.url()).pathname, form).toMatch(/\/jobs\/[0-9a-f]{32}$/);
  expect(await jobEnded(page)).toBe("completed");
  await screenshot(page, `describe-${level}-job`);
}

beforeAll(async () => {
  mkdirSync(ARTIFACTS, { recursive: true });
  ({ engine, browser } = await startEngineAndBrowser(CHROMIUM_ARGS));
  page = await newPage();
}, 120_000);

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

describe("the first hour, by links and forms only", () => {
  it("opens the home page and signs in as the publisher", async () => {
    // The only address typed: the one `npm start` prints.
    await page.goto(`${engine.ready.https}/`);
    await screenshot(page, "home");
    await goOn(link(page, "Sign in"), "the home page offers to sign in");
    await screenshot(page, "sign-in");
    await page.getByLabel("Username").fill("publisher");
    await page.getByLabel("Password").fill(PASSWORDS.publisher);
    await goOn(button(page, "Sign in"), "the sign-in page has its button");
    // Back on the home page it came from, signed in.
    expect(new URL(page.url()).pathname).toBe("/");
    await expect(page.locator("main").textContent()).resolves.toContain("Signed in as publisher");
    await screenshot(page, "home-signed-in");
  });

  it("describes the demo folder store from the portal directory, level by level from the jobs' links", async () => {
    await goOn(link(page, "Portal directory"), "the home page links to the portal directory");
    await screenshot(page, "portal-directory");
    const store = page.locator("li", { hasText: "Demo Data Store" });
    await goOn(link(store, "Describe"), "the directory offers to describe the demo folder store");
    // The form already names the store and its root.
    expect(await page.locator("select[name=datastoreId] option:checked").textContent()).toMatch(/^Demo Data Store /);
    expect(await page.locator("input[name=path]").inputValue()).toBe("/");
    await describeFromForm("root");
    let path = "";
    for (const level of ROUTE) {
      path += `/${level}`;
      await goOn(link(row(page, level), "Describe"), `the describe job lists ${path} with a link to describe it`);
      expect(await page.locator("input[name=path]").inputValue()).toBe(path);
      await describeFromForm(level);
    }
    // The cache is a child of the last level, with the service it can become.
    expect(await row(page, CACHE).locator("td").nth(1).textContent()).toBe("tileCache");
  });

  it("publishes the cache from its link, follows the job to the new service and sees it on the map", async () => {
    await goOn(link(row(page, CACHE), "Publish as MapServer"), "the describe job offers to publish the cache");
    // The form is filled in from the link: the cache, its store and a service name.
    const configuration = JSON.parse(await page.locator("textarea[name=serviceConfiguration]").inputValue()) as {
      type: string;
      serviceName: string;
      properties: { pathInCachedStore: string };
    };
    expect(configuration).toMatchObject({
      type: "MapServer",
      serviceName: CACHE,
      properties: { pathInCachedStore: `/${ROUTE.join("/")}/${CACHE}` },
    });
    await screenshot(page, "publish-form");
    await goOn(button(page, "Submit"), "the publish form submits and leads to its job");
    await screenshot(page, "publish-started");
    expect(new URL(page.url()).pathname).toMatch(/\/jobs\/[0-9a-f]{32}$/);
    expect(await jobEnded(page)).toBe("completed");
    await expect(page.locator("main").textContent()).resolves.toContain("Published");
    await screenshot(page, "publish-job");
    await goOn(link(page, "Service"), "the finished job links to the new service");
    expect(new URL(page.url()).pathname).toBe(`/arcgis/rest/services/${CACHE}/MapServer`);
    await screenshot(page, "service");
    await goOn(link(page, "View"), "the service page links to its map");
    expect(await viewerSays(page)).toBe("drawn");
    expect(await drawnPixels(page)).toBeGreaterThan(10_000);
    await screenshot(page, "service-map");
  });

  it("shares the new service's item with everyone from the item page's form", async () => {
    await goOn(link(page, "Item"), "the map links to the service's item");
    expect(
      await page
        .locator("tr", { hasText: /^Access/ })
        .locator("td")
        .textContent(),
    ).toBe("private");
    await screenshot(page, "item");
    const everyone = await offered(page.getByLabel("Everyone (public)"), "the item page offers sharing with everyone");
    await everyone.check();
    await goOn(button(page, "Share"), "the item page's share form has its button");
    await expect(page.locator("main").textContent()).resolves.toContain("is now visible to everyone (public)");
    await screenshot(page, "shared");
    // The answer leads back on: the item now says public.
    await goOn(link(page, "The item"), "the share answer links back to the item");
    expect(
      await page
        .locator("tr", { hasText: /^Access/ })
        .locator("td")
        .textContent(),
    ).toBe("public");
  });

  it("shows the shared service on the map to an anonymous visitor, from the home page", async () => {
    visitor = await newPage();
    // A fresh browser, not signed in: its one typed address is the home page again.
    await visitor.goto(`${engine.ready.https}/`);
    await expect(visitor.locator("main").textContent()).resolves.not.toContain("Signed in");
    await screenshot(visitor, "anonymous-home");
    await goOn(link(row(visitor, CACHE), "View"), "the home page lists the shared service with its map");
    expect(await viewerSays(visitor)).toBe("drawn");
    expect(await drawnPixels(visitor)).toBeGreaterThan(10_000);
    await screenshot(visitor, "anonymous-service-map");
  });

  it("draws a demo feature layer and shows a clicked feature's attributes", async () => {
    await goOn(link(visitor, "Home"), "the map links back home");
    const countries = visitor.locator("tr", {
      has: visitor.locator(":scope > td:first-child", { hasText: /^World\/countries_/ }),
    });
    await goOn(link(countries, "View"), "the home page lists the demo countries with their map");
    expect(await viewerSays(visitor)).toBe("drawn");
    expect(await drawnPixels(visitor)).toBeGreaterThan(10_000);
    await expect(visitor.locator("#viewer-status").textContent()).resolves.toMatch(/countries: \d+ features/);
    // The map shows the layer's whole extent: one of these points lands on a country.
    expect(await clickAFeature(visitor)).toMatch(/^\d+$/);
    const attributes = visitor.locator("#viewer-details th");
    expect(await attributes.count()).toBeGreaterThan(1);
    expect(await visitor.locator("#viewer-details").isVisible()).toBe(true);
    await screenshot(visitor, "feature-attributes");
    expect(errors).toEqual([]);
  });
});
