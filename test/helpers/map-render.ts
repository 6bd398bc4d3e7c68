// Renders Mapbox GL styles with maplibre-gl in headless Chromium, as a browser map would show them: a page
// served from its own loopback origin (so every tile, sprite and style request is cross-origin, as from a
// real web map), one page per style, waited on until the map is idle, then screenshotted and measured.
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, type Page } from "playwright-core";
import { PNG } from "pngjs";
import { launchChromium } from "./browser.ts";

export interface RenderedMap {
  readonly name: string;
  /** Pixels of the screenshot that differ from the style's background colour (beyond a small tolerance). */
  readonly nonBackgroundPixels: number;
  /** Console errors, page errors, map errors and failed requests (a missing tile's 404 is not one). */
  readonly errors: string[];
  /** The screenshot's path (PNG). */
  readonly screenshot: string;
}

export interface RenderOptions {
  readonly styles: readonly { readonly name: string; readonly style: object }[];
  readonly artifactsDir: string;
  /** CSS pixels of the page (800 × 600 unless given). */
  readonly width?: number;
  readonly height?: number;
  /** 2 makes maplibre ask for `@2x` sprites, as on a high-density screen. */
  readonly deviceScaleFactor?: number;
  /** How long a map may take to become idle (20 s unless given). */
  readonly idleTimeoutMs?: number;
}

/**
 * Chromium's own flags for a quiet headless run. WebGL comes from SwiftShader (software Vulkan under ANGLE);
 * Chromium is phasing out falling back to it silently, so it is asked for explicitly.
 */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--use-angle=swiftshader",
  "--enable-unsafe-swiftshader",
  // One address family for `localhost` (the local engine answers on both): tokens bound to the caller's
  // address then match whichever process asked for them on 127.0.0.1.
  "--host-resolver-rules=MAP localhost 127.0.0.1",
];

const require = createRequire(import.meta.url);
const MAPLIBRE_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  "/maplibre-gl.js": { file: require.resolve("maplibre-gl/dist/maplibre-gl.js"), type: "text/javascript" },
  "/maplibre-gl.css": { file: require.resolve("maplibre-gl/dist/maplibre-gl.css"), type: "text/css" },
};

const PAGE = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>map</title>
<link rel="stylesheet" href="/maplibre-gl.css">
<style>html, body, #map { margin: 0; width: 100%; height: 100%; background: #ffffff; }</style>
<script src="/maplibre-gl.js"></script>
</head><body><div id="map"></div></body></html>`;

/** A request for one tile (`…/tile/z/y/x`, with or without `.pbf`): a 404 there is a tile the cache lacks. */
const TILE_REQUEST = /\/tile\/\d+\/\d+\/\d+(?:\.\w+)?(?:\?|$)/;

/** A channel differing by more than this is a different colour, not antialiasing or rounding. */
const TOLERANCE = 8;

async function startPageServer(): Promise<{ server: Server; origin: string }> {
  const server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const headers = { "access-control-allow-origin": "*", "cache-control": "no-store" };
    if (path === "/") {
      res.writeHead(200, { ...headers, "content-type": "text/html; charset=utf-8" }).end(PAGE);
      return;
    }
    const asset = MAPLIBRE_FILES[path];
    if (!asset) {
      res.writeHead(404, headers).end();
      return;
    }
    readFile(asset.file).then(
      (body) => res.writeHead(200, { ...headers, "content-type": asset.type }).end(body),
      () => res.writeHead(500, headers).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return { server, origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** The colour a style's map shows where nothing is drawn: its bottom background layer's, else the page's. */
function backgroundOf(style: object): unknown {
  const layers = (style as { layers?: unknown }).layers;
  if (!Array.isArray(layers)) return "#ffffff";
  const bg = layers.find(
    (l: { type?: unknown; layout?: { visibility?: unknown } }) =>
      l?.type === "background" && l.layout?.visibility !== "none",
  ) as { paint?: Record<string, unknown> } | undefined;
  if (!bg) return "#ffffff";
  // maplibre's own default for a background layer without a colour.
  return bg.paint?.["background-color"] ?? "#000000";
}

interface PageOutcome {
  idle: boolean;
  mapErrors: string[];
  /** The background as RGB over the white page, or null when the style's colour is an expression. */
  background: [number, number, number] | null;
}

/** Runs in the page: builds the map, waits for `idle` (or the timeout), and reports what it saw. */
function mapInPage(args: { style: object; background: unknown; timeoutMs: number }): Promise<PageOutcome> {
  // The project compiles without the DOM's types: what this uses of the page, typed here.
  type MapLike = { on(event: string, listener: (e: { error?: { message?: string } }) => void): void };
  type Context2d = {
    fillStyle: string;
    fillRect(x: number, y: number, w: number, h: number): void;
    getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
  };
  type Canvas = { width: number; height: number; getContext(kind: "2d"): Context2d | null };
  const { maplibregl: lib, document } = globalThis as unknown as {
    maplibregl: { Map: new (o: object) => MapLike };
    document: { createElement(tag: "canvas"): Canvas };
  };
  const mapErrors: string[] = [];
  let background: PageOutcome["background"] = null;
  if (typeof args.background === "string") {
    // The browser's own colour parser, composited over the white page as the screenshot will be.
    const canvas = document.createElement("canvas");
    canvas.width = 1;
    canvas.height = 1;
    const ctx = canvas.getContext("2d");
    if (ctx) {
      ctx.fillStyle = "#ffffff";
      ctx.fillRect(0, 0, 1, 1);
      ctx.fillStyle = args.background;
      ctx.fillRect(0, 0, 1, 1);
      const [r = 0, g = 0, b = 0] = ctx.getImageData(0, 0, 1, 1).data;
      background = [r, g, b];
    }
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve({ idle: false, mapErrors, background }), args.timeoutMs);
    const map = new lib.Map({
      container: "map",
      style: args.style,
      attributionControl: false,
      interactive: false,
      fadeDuration: 0,
    });
    map.on("error", (e) => mapErrors.push(`map error: ${e.error?.message ?? String(e.error)}`));
    map.on("idle", () => {
      clearTimeout(timer);
      resolve({ idle: true, mapErrors, background });
    });
  });
}

export function countNonBackground(png: PNG, background: [number, number, number] | null): number {
  const { data } = png;
  let reference = background;
  if (!reference) {
    // An expression's colour is unknown here: the most common colour stands in for it.
    const counts = new Map<number, number>();
    for (let i = 0; i < data.length; i += 4) {
      const key = ((data[i] ?? 0) << 16) | ((data[i + 1] ?? 0) << 8) | (data[i + 2] ?? 0);
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    const [top = 0] = [...counts].sort((a, b) => b[1] - a[1])[0] ?? [];
    reference = [(top >> 16) & 255, (top >> 8) & 255, top & 255];
  }
  const [r, g, b] = reference;
  let n = 0;
  for (let i = 0; i < data.length; i += 4) {
    const dr = Math.abs((data[i] ?? 0) - r);
    const dg = Math.abs((data[i + 1] ?? 0) - g);
    const db = Math.abs((data[i + 2] ?? 0) - b);
    if (Math.max(dr, dg, db) > TOLERANCE) n++;
  }
  return n;
}

/** Watches a page for what went wrong while it showed a map. */
export function watch(page: Page): { errors: string[]; stop: () => void } {
  const errors: string[] = [];
  let watching = true;
  page.on("console", (m) => {
    if (!watching || m.type() !== "error") return;
    // Chromium logs every failed response here too: those are judged from the responses below.
    if (/^Failed to load resource: the server responded with a status of \d+/.test(m.text())) return;
    errors.push(`console: ${m.text()}`);
  });
  page.on("pageerror", (e) => {
    if (watching) errors.push(`page error: ${e.message}`);
  });
  page.on("requestfailed", (r) => {
    const failure = r.failure()?.errorText ?? "failed";
    // maplibre cancels requests for tiles it no longer needs.
    if (watching && failure !== "net::ERR_ABORTED") errors.push(`request failed: ${r.url()} (${failure})`);
  });
  page.on("response", (r) => {
    if (!watching || r.status() < 400) return;
    // A tile the cache does not hold is an empty 404, which maplibre shows as an empty tile.
    if (r.status() === 404 && TILE_REQUEST.test(r.url())) return;
    errors.push(`HTTP ${r.status()}: ${r.url()}`);
  });
  return {
    errors,
    stop: () => {
      watching = false;
    },
  };
}

/** Renders each style in its own page and measures it; everything started here is stopped before answering. */
export async function renderMaps(options: RenderOptions): Promise<RenderedMap[]> {
  const width = options.width ?? 800;
  const height = options.height ?? 600;
  const timeoutMs = options.idleTimeoutMs ?? 20_000;
  const { server, origin } = await startPageServer();
  let browser: Browser | undefined;
  try {
    browser = await launchChromium(CHROMIUM_ARGS);
    const results: RenderedMap[] = [];
    for (const { name, style } of options.styles) {
      const context = await browser.newContext({
        viewport: { width, height },
        deviceScaleFactor: options.deviceScaleFactor ?? 1,
        ignoreHTTPSErrors: true,
      });
      try {
        const page = await context.newPage();
        const watcher = watch(page);
        await page.goto(`${origin}/`);
        const outcome = await page.evaluate(mapInPage, { style, background: backgroundOf(style), timeoutMs });
        const screenshot = join(options.artifactsDir, `${name.replace(/[^\w.-]+/g, "_")}.png`);
        const shot = await page.screenshot({ path: screenshot });
        watcher.stop();
        const errors = [...watcher.errors, ...outcome.mapErrors];
        if (!outcome.idle) errors.push(`the map did not become idle within ${timeoutMs} ms`);
        const nonBackgroundPixels = countNonBackground(PNG.sync.read(shot), outcome.background);
        results.push({ name, nonBackgroundPixels, errors, screenshot });
      } finally {
        await context.close();
      }
    }
    return results;
  } finally {
    await browser?.close();
    await new Promise((resolve) => server.close(resolve));
  }
}
