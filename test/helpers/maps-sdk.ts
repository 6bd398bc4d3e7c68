// The ArcGIS Maps SDK for JavaScript (`@arcgis/core`, its npm package, unchanged) in headless Chromium against the
// local engine: the SDK is bundled once per run by esbuild into a temporary folder and served, with its assets,
// from a loopback origin of its own (so every call it makes to mapgate is cross-origin, as from a real web app).
// Nothing a page asks for may leave the machine: requests to any host but loopback are refused and recorded, and
// every request to the engine is logged with its status.
import { mkdtempSync, rmSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { extname, join, normalize, sep } from "node:path";
import { build } from "esbuild";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { ROOT } from "./engine.ts";
import { CHROMIUM_ARGS } from "./map-render.ts";

/** Chromium's flags for the SDK: the renderer's, and WebGL 2 from SwiftShader even where a GPU list would refuse it. */
export const SDK_CHROMIUM_ARGS = [...CHROMIUM_ARGS, "--ignore-gpu-blocklist"];

const ASSETS = join(ROOT, "node_modules", "@arcgis", "core", "assets");

/** What the page's module exposes as `globalThis.sdk`: the SDK's own classes, as an app imports them. */
const ENTRY = `
export { default as esriConfig } from "@arcgis/core/config.js";
export { default as EsriMap } from "@arcgis/core/Map.js";
export { default as WebMap } from "@arcgis/core/WebMap.js";
export { default as MapView } from "@arcgis/core/views/MapView.js";
export { default as SceneView } from "@arcgis/core/views/SceneView.js";
export { default as FeatureLayer } from "@arcgis/core/layers/FeatureLayer.js";
export { default as TileLayer } from "@arcgis/core/layers/TileLayer.js";
export { default as VectorTileLayer } from "@arcgis/core/layers/VectorTileLayer.js";
export { default as SceneLayer } from "@arcgis/core/layers/SceneLayer.js";
export { default as Layer } from "@arcgis/core/layers/Layer.js";
export { default as Portal } from "@arcgis/core/portal/Portal.js";
export { default as PortalItem } from "@arcgis/core/portal/PortalItem.js";
export { default as PortalQueryParams } from "@arcgis/core/portal/PortalQueryParams.js";
export { default as IdentityManager } from "@arcgis/core/identity/IdentityManager.js";
export { default as OAuthInfo } from "@arcgis/core/identity/OAuthInfo.js";
export { default as ServerInfo } from "@arcgis/core/identity/ServerInfo.js";
export { default as Point } from "@arcgis/core/geometry/Point.js";
export { default as Graphic } from "@arcgis/core/Graphic.js";
export { default as TileInfo } from "@arcgis/core/layers/support/TileInfo.js";
export { default as esriRequest } from "@arcgis/core/request.js";
export * as reactiveUtils from "@arcgis/core/core/reactiveUtils.js";
`;

/** The page every test opens: the SDK's light theme, a full-page view container, and the SDK on `globalThis.sdk`. */
const PAGE = `<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>mapgate with the ArcGIS Maps SDK</title>
<link rel="stylesheet" href="assets/esri/themes/light/main.css">
<style>html, body, #view { margin: 0; width: 100%; height: 100%; }</style>
<script type="module">
import * as sdk from "./sdk/entry.js";
sdk.esriConfig.assetsPath = new URL("assets", document.baseURI).href;
globalThis.sdk = sdk;
document.body.dataset.sdk = "loaded";
</script>
</head><body><div id="view"></div></body></html>`;

const TYPES: Readonly<Record<string, string>> = {
  ".js": "text/javascript",
  ".css": "text/css",
  ".json": "application/json",
  ".wasm": "application/wasm",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".html": "text/html; charset=utf-8",
};

let bundled: Promise<string> | undefined;
const folders: string[] = [];

/**
 * Bundles the SDK once per run (ESM, split at the SDK's own dynamic imports: what a view loads lazily stays lazy)
 * into a temporary folder; answers the folder.
 */
export function sdkBundle(): Promise<string> {
  bundled ??= (async () => {
    const out = mkdtempSync(join(tmpdir(), "mapgate-sdk-"));
    folders.push(out);
    await build({
      stdin: { contents: ENTRY, resolveDir: ROOT, loader: "js", sourcefile: "entry.js" },
      bundle: true,
      splitting: true,
      format: "esm",
      target: "es2022",
      outdir: out,
      entryNames: "entry",
      logLevel: "error",
    });
    return out;
  })();
  return bundled;
}

/** Removes the bundle's folder (after the file's tests). */
export function removeSdkBundle(): void {
  for (const f of folders.splice(0)) rmSync(f, { recursive: true, force: true });
  bundled = undefined;
}

/** A file under `root` for a URL path under `prefix`, or undefined when the path leaves the folder. */
function under(root: string, prefix: string, path: string): string | undefined {
  const file = normalize(join(root, decodeURIComponent(path.slice(prefix.length))));
  return file.startsWith(root + sep) ? file : undefined;
}

export interface SdkServer {
  /** `http://127.0.0.1:<port>`: the app's origin, never the engine's. */
  readonly origin: string;
  close(): Promise<void>;
}

/** Serves the page at `/` (and any path ending in `.html`), the bundle at `/sdk/` and the SDK's assets at `/assets/`. */
export async function startSdkServer(bundleDir: string): Promise<SdkServer> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? "/", "http://localhost").pathname;
    const headers = { "cache-control": "no-store" };
    if (path === "/" || path.endsWith(".html")) {
      res.writeHead(200, { ...headers, "content-type": "text/html; charset=utf-8" }).end(PAGE);
      return;
    }
    const file = path.startsWith("/sdk/")
      ? under(bundleDir, "/sdk/", path)
      : path.startsWith("/assets/")
        ? under(ASSETS, "/assets/", path)
        : undefined;
    if (!file) {
      res.writeHead(404, headers).end();
      return;
    }
    readFile(file).then(
      (body) =>
        res
          .writeHead(200, { ...headers, "content-type": TYPES[extname(file)] ?? "application/octet-stream" })
          .end(body),
      () => res.writeHead(404, headers).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export interface EngineRequest {
  readonly method: string;
  readonly url: string;
  /** The HTTP status, or 0 when no answer came (the failure's text is in `failure`). */
  readonly status: number;
  readonly failure?: string;
  /** The request's Origin header (absent on same-origin GETs and GET navigations). */
  readonly origin?: string;
  /**
   * A page load (the browser's, not the SDK's fetch): e.g. the portal's sign-in form posted from its own page,
   * which carries the portal's own origin.
   */
  readonly navigation: boolean;
  /** The answer's Access-Control-Allow-Origin and -Credentials headers. */
  readonly allowOrigin?: string;
  readonly allowCredentials?: string;
}

export interface SdkPage {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every request the page (its workers included) made to the engine, with what answered it. */
  readonly engineRequests: EngineRequest[];
  /** Requests to anything but loopback: refused before they left. */
  readonly blocked: string[];
  /** Console errors and uncaught page errors. */
  readonly errors: string[];
  /** Runs `body` (plain JavaScript, the SDK on `sdk`, the arguments on `args`) in the page; answers its result. */
  run<T>(body: string, args?: unknown): Promise<T>;
}

/** In the page: an SDK error (its class names are minified) rethrown as its name, message and the URL it concerns. */
const SAY_ERROR =
  'throw new Error([e?.name, e?.message, e?.details?.url ?? e?.details?.error?.message].filter(Boolean).join(": "));';

const LOOPBACK = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** Where the page is served from the engine's own origin when asked (`sameOrigin`): a path the engine never serves. */
export const SAME_ORIGIN_BASE = "/__maps-sdk";

export interface OpenOptions {
  /** The page's path on the SDK's server (`/` unless given). */
  readonly path?: string;
  readonly width?: number;
  readonly height?: number;
  /**
   * Serves the page and the SDK from this origin (one of the engine's) under SAME_ORIGIN_BASE instead of the SDK's
   * own origin: the browser is handed the SDK server's answers for those paths, so the SDK's calls to mapgate are
   * same-origin. Only for telling what cross-origin breaks from what breaks anyway.
   */
  readonly sameOrigin?: string;
  /**
   * Script run in the page before any of its own (Playwright's init script): e.g. `globalThis.esriConfig = { has:
   * {…} }`, the SDK's feature flags, which it reads once as it loads.
   */
  readonly init?: string;
}

/**
 * Opens the SDK's page from `origin` in a fresh context and waits until the SDK has loaded; `engineOrigins` are
 * the origins whose requests are logged.
 */
export async function openSdkPage(
  browser: Browser,
  origin: string,
  engineOrigins: readonly string[],
  { path = "/", width = 800, height = 600, sameOrigin, init }: OpenOptions = {},
): Promise<SdkPage> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width, height } });
  if (init) await context.addInitScript(init);
  const page = await context.newPage();
  const engineRequests: EngineRequest[] = [];
  const blocked: string[] = [];
  const errors: string[] = [];
  await context.route(
    (url) => !LOOPBACK.has(url.hostname),
    (route) => {
      blocked.push(route.request().url());
      return route.abort("blockedbyclient");
    },
  );
  if (sameOrigin) {
    await context.route(`${sameOrigin}${SAME_ORIGIN_BASE}/**`, async (route) => {
      const u = new URL(route.request().url());
      const response = await route.fetch({ url: `${origin}${u.pathname.slice(SAME_ORIGIN_BASE.length)}${u.search}` });
      await route.fulfill({ response });
    });
  }
  const ours = (url: string) =>
    URL.canParse(url) &&
    engineOrigins.includes(new URL(url).origin) &&
    !new URL(url).pathname.startsWith(SAME_ORIGIN_BASE);
  context.on("response", (r) => {
    if (!ours(r.url())) return;
    const h = r.headers();
    engineRequests.push({
      method: r.request().method(),
      url: r.url(),
      status: r.status(),
      navigation: r.request().isNavigationRequest(),
      ...(r.request().headers().origin ? { origin: r.request().headers().origin } : {}),
      ...(h["access-control-allow-origin"] ? { allowOrigin: h["access-control-allow-origin"] } : {}),
      ...(h["access-control-allow-credentials"] ? { allowCredentials: h["access-control-allow-credentials"] } : {}),
    });
  });
  context.on("requestfailed", (r) => {
    if (!ours(r.url())) return;
    engineRequests.push({
      method: r.method(),
      url: r.url(),
      status: 0,
      failure: r.failure()?.errorText ?? "failed",
      navigation: r.isNavigationRequest(),
      ...(r.headers().origin ? { origin: r.headers().origin } : {}),
    });
  });
  page.on("console", (m) => {
    if (process.env.MAPGATE_SDK_DEBUG) console.error(`page: ${m.text()}`);
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(sameOrigin ? `${sameOrigin}${SAME_ORIGIN_BASE}${path}` : `${origin}${path}`);
  await page.waitForFunction("document.body && document.body.dataset.sdk === 'loaded'", undefined, {
    timeout: 30_000,
  });
  return {
    context,
    page,
    engineRequests,
    blocked,
    errors,
    run: <T>(body: string, args?: unknown) =>
      page.evaluate(
        `(async (args) => { const sdk = globalThis.sdk; try { ${body} } catch (e) { ${SAY_ERROR} } })(${JSON.stringify(args ?? null)})`,
      ) as Promise<T>,
  };
}

/** Requests that got an answer of 400 or more (or none), as `STATUS METHOD path?query` lines. */
export function failedRequests(requests: readonly EngineRequest[]): string[] {
  return requests
    .filter((r) => r.status === 0 || r.status >= 400)
    .map((r) => {
      const u = new URL(r.url);
      return `${r.status || r.failure} ${r.method} ${u.pathname}${u.search}`;
    });
}
