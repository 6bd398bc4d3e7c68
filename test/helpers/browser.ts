// The engine and a headless Chromium, started and stopped together for the tests that drive pages in a browser.
import { type Browser, type BrowserContext, chromium } from "playwright-core";
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
