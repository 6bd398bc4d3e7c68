// The engine and a headless Chromium, started and stopped together for the tests that drive pages in a browser.
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core";
import { type RunningEngine, type StartOptions, startEngine } from "./engine.ts";

/** Chromium's flags for pages without WebGL: headless, no sandbox (the tests run as root in a container), quiet. */
export const PAGE_CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"];

/** The system's Chromium (playwright-core brings none of its own) with `args`. */
export const launchChromium = (args: readonly string[] = PAGE_CHROMIUM_ARGS): Promise<Browser> =>
  chromium.launch({ executablePath: "/usr/bin/chromium", args: [...args] });

/**
 * The engine and Chromium, started side by side. If one fails to start, the other is stopped before the failure
 * is thrown, so nothing is left running for an afterAll that never saw it.
 */
export async function startEngineAndBrowser(
  args: readonly string[] = PAGE_CHROMIUM_ARGS,
  options: StartOptions = {},
): Promise<{ engine: RunningEngine; browser: Browser }> {
  const [engine, browser] = await Promise.allSettled([startEngine(options), launchChromium(args)]);
  if (engine.status === "fulfilled" && browser.status === "fulfilled")
    return { engine: engine.value, browser: browser.value };
  if (engine.status === "fulfilled") await engine.value.stop();
  if (browser.status === "fulfilled") await browser.value.close();
  throw engine.status === "rejected" ? engine.reason : (browser as PromiseRejectedResult).reason;
}

/** Closes every context a test opened (one already gone is no matter), then the browser, then the engine. */
export async function stopBrowserAndEngine(
  contexts: readonly BrowserContext[],
  browser: Browser | undefined,
  engine: RunningEngine | undefined,
): Promise<void> {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close();
  await engine?.stop();
}

/**
 * Clicks mapgate's viewer map (#map, showing a layer's whole extent) at a few points of the world in turn until
 * one lands on a feature: the feature the viewer marks on the page's body (`data-feature`), or "" if none did.
 */
export async function clickAFeature(page: Page): Promise<string> {
  const box = await page.locator("#map").boundingBox();
  if (!box) throw new Error("no map on the page");
  for (const [fx, fy] of [
    [0.55, 0.35],
    [0.3, 0.3],
    [0.6, 0.5],
    [0.75, 0.3],
  ] as const) {
    await page.mouse.click(box.x + box.width * fx, box.y + box.height * fy);
    const clicked = (await page.locator("body").getAttribute("data-feature")) ?? "";
    if (clicked) return clicked;
  }
  return "";
}

/**
 * Waits (20 s unless `timeoutMs` says otherwise) until mapgate's viewer says it drew the map or could not
 * (`data-viewer` on its body): what it says.
 */
export async function viewerSays(p: Page, timeoutMs = 20_000): Promise<string> {
  await p.waitForFunction(
    () => {
      const state = (globalThis as unknown as { document: { body: { dataset: Record<string, string> } } }).document.body
        .dataset.viewer;
      return state === "drawn" || state === "failed";
    },
    undefined,
    { timeout: timeoutMs },
  );
  return (await p.locator("body").getAttribute("data-viewer")) ?? "";
}
