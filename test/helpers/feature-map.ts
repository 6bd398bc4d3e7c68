// Draws feature layers in an OpenLayers web map in headless Chromium: the page and its script (bundled here with
// esbuild from test/clients/ol-feature-map.ts) come from their own loopback origin, so every `query` is a
// cross-origin request, as from a real web map. One page per map, waited on until loaded and drawn, then
// screenshotted and measured.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { build } from "esbuild";
import { type Browser } from "playwright-core";
import { PNG } from "pngjs";
import type { FeatureMapOptions, FeatureMapOutcome } from "../clients/ol-feature-map.ts";
import { launchChromium } from "./browser.ts";
import { ROOT } from "./engine.ts";
import { CHROMIUM_ARGS, countNonBackground, watch } from "./map-render.ts";

export interface FeatureMap extends Omit<FeatureMapOptions, "timeoutMs"> {
  readonly name: string;
}

export interface DrawnFeatureMap extends FeatureMapOutcome {
  readonly name: string;
  /** Pixels of the screenshot that are not the page's white. */
  readonly nonBackgroundPixels: number;
  readonly totalPixels: number;
  /** Console errors, page errors, failed requests and error statuses seen while the map loaded. */
  readonly errors: string[];
  /** The screenshot's path (PNG). */
  readonly screenshot: string;
}

const PAGE = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>features</title>
<style>html, body, #map { margin: 0; width: 100%; height: 100%; background: #ffffff; }</style>
<script src="/map.js"></script>
</head><body><div id="map"></div></body></html>`;

async function bundle(): Promise<string> {
  const out = await build({
    entryPoints: [join(ROOT, "test/clients/ol-feature-map.ts")],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    logLevel: "silent",
  });
  const file = out.outputFiles[0];
  if (!file) throw new Error("esbuild wrote no bundle");
  return file.text;
}

async function startPageServer(script: string): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const headers = { "cache-control": "no-store" };
    if (path === "/") res.writeHead(200, { ...headers, "content-type": "text/html; charset=utf-8" }).end(PAGE);
    else if (path === "/map.js") res.writeHead(200, { ...headers, "content-type": "text/javascript" }).end(script);
    else res.writeHead(404, headers).end();
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const WHITE: [number, number, number] = [255, 255, 255];

/** Draws each map in its own page; everything started here is stopped before answering. */
export async function drawFeatureMaps(
  maps: readonly FeatureMap[],
  options: { artifactsDir: string; width?: number; height?: number; timeoutMs?: number },
): Promise<DrawnFeatureMap[]> {
  const width = options.width ?? 800;
  const height = options.height ?? 600;
  const timeoutMs = options.timeoutMs ?? 20_000;
  const { server, origin } = await startPageServer(await bundle());
  let browser: Browser | undefined;
  try {
    browser = await launchChromium(CHROMIUM_ARGS);
    const drawn: DrawnFeatureMap[] = [];
    for (const { name, ...map } of maps) {
      const context = await browser.newContext({ viewport: { width, height } });
      try {
        const page = await context.newPage();
        const watcher = watch(page);
        await page.goto(`${origin}/`);
        const args: FeatureMapOptions = { ...map, timeoutMs };
        const outcome = await page.evaluate(
          (a) =>
            (
              globalThis as unknown as { drawFeatureLayer: (o: FeatureMapOptions) => Promise<FeatureMapOutcome> }
            ).drawFeatureLayer(a),
          args,
        );
        const screenshot = join(options.artifactsDir, `${name.replace(/[^\w.-]+/g, "_")}.png`);
        const shot = PNG.sync.read(await page.screenshot({ path: screenshot }));
        watcher.stop();
        const errors = [...watcher.errors];
        if (!outcome.complete) errors.push(`the map was not loaded and drawn within ${timeoutMs} ms`);
        drawn.push({
          name,
          ...outcome,
          nonBackgroundPixels: countNonBackground(shot, WHITE),
          totalPixels: shot.width * shot.height,
          errors,
          screenshot,
        });
      } finally {
        await context.close();
      }
    }
    return drawn;
  } finally {
    await browser?.close();
    await new Promise((resolve) => server.close(resolve));
  }
}
