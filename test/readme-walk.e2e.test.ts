// The README's "Ten minutes with mapgate", run as written: every `sh` block of that section, in order, in one bash
// shell against the real local engine (started on the demo data), with only what a reader fills in put in (the
// engine's address and certificate, the publisher's password). A block whose commands fail, or whose output no
// longer shows what the README's comments say, fails here before a reader meets it. The link the walk asks the reader
// to open in a browser is opened in headless Chromium, and the map the walk then saves is saved there and opened by id.
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, viewerSays } from "./helpers/browser.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call } from "./helpers/http.ts";
import { CHROMIUM_ARGS } from "./helpers/map-render.ts";

let engine: RunningEngine;
let work: string;
/** Each block's output, by its place in the section. */
let outputs: string[] = [];
/** The shell's variables the README's prose refers to after its blocks (`$SITES`). */
let sites = "";

/** The section's `sh` blocks, as a reader copies them. */
function walkBlocks(): string[] {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const start = readme.indexOf("## Ten minutes with mapgate");
  const end = readme.indexOf("\n## ", start + 1);
  expect(start).toBeGreaterThan(0);
  const section = readme.slice(start, end);
  return [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] ?? "");
}

/**
 * A job's result comes a moment after it starts, and the README tells the reader to run `job` again while it is
 * processing; the script does what the reader does, after every line that starts one.
 */
const WAIT_FOR_JOB = `for i in $(seq 1 300); do [ "$(job "$J" | jq -r .status)" = processing ] || break; sleep 0.1; done`;

beforeAll(async () => {
  engine = await startEngine();
  work = mkdtempSync(join(tmpdir(), "mapgate-walk-"));
  const blocks = walkBlocks().map((block) =>
    block
      .replaceAll("https://localhost:8443", engine.ready.https)
      .replaceAll("$PWD/.mapgate/tls-cert.pem", engine.ready.cert)
      .replace("'<the publisher password npm start printed>'", `'${PASSWORDS.publisher}'`)
      .replace(/^(J=\$\(curl[^\n]*(?:\\\n[^\n]*)*\))$/gm, `$1\n${WAIT_FOR_JOB}`),
  );
  const script = [
    "set -eo pipefail",
    ...blocks.map((b, i) => `echo "@@block ${i}"\n${b}`),
    'echo "@@sites $SITES"',
  ].join("\n");
  const { stdout } = await promisify(execFile)("bash", ["-c", script], {
    cwd: work,
    env: { ...process.env, HOME: work },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 120_000,
  }).catch((err: { stdout?: string; stderr?: string; message: string }) => {
    throw new Error(`the walk failed: ${err.message}\n${err.stdout ?? ""}\n${err.stderr ?? ""}`);
  });
  const [walk = "", vars = ""] = stdout.split(/^@@sites /m);
  outputs = walk.split(/^@@block \d+\n/m).slice(1);
  sites = vars.trim();
}, 180_000);

afterAll(async () => {
  await engine?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the README's walk", () => {
  it("has its blocks in the order this test reads them", () => {
    expect(outputs).toHaveLength(8);
  });

  it("1. signs in as the publisher", () => {
    expect(JSON.parse(outputs[1] ?? "")).toMatchObject({ username: "publisher", role: "org_publisher" });
  });

  it("2. describes the folder store's tile caches", () => {
    expect(outputs[2]).toMatch(/^"completed"\n/);
    expect(outputs[2]).toContain('"path": "/caches/tiles/Basemap"');
  });

  it("3. publishes the cache as a map service", () => {
    expect(JSON.parse(outputs[3] ?? "")).toMatchObject({
      services: [{ type: "Map Service", serviceUrl: expect.stringMatching(/\/Walkthrough\/Basemap\/MapServer$/) }],
    });
  });

  it("4. serves its JSON and a tile", () => {
    expect(outputs[4]).toContain('"Map,TilesOnly"');
    const tile = readFileSync(join(work, "tile.png"));
    expect(tile.subarray(1, 4).toString()).toBe("PNG");
  });

  it("5. answers 499 before sharing and anyone after", () => {
    const [before, shared, after] = (outputs[5] ?? "").trim().split("\n");
    expect(before).toBe("499");
    expect(JSON.parse(shared ?? "")).toMatchObject({ notSharedWith: [] });
    expect(after).toBe('"Map,TilesOnly"');
  });

  it("6. lets GDAL count, copy and curl query the demo's places", () => {
    expect(outputs[6]).toContain("Feature Count: 8941");
    expect(existsSync(join(work, "france.gpkg"))).toBe(true);
    expect(outputs[6]).toMatch(/"name":"Paris","country":"FR"/);
  });

  it("7. publishes a spreadsheet as a hosted layer, shares it and queries it", () => {
    const lines = (outputs[7] ?? "").trim().split("\n");
    expect(JSON.parse(lines[0] ?? "")).toEqual({
      locationType: "coordinates",
      latitudeFieldName: "latitude",
      longitudeFieldName: "longitude",
    });
    expect(JSON.parse(lines[1] ?? "")).toMatchObject({ notSharedWith: [] });
    expect(lines.slice(2)).toEqual([
      '{"fid":1,"site":"Harbour depot","visits":120}',
      '{"fid":3,"site":"East gate","visits":300}',
    ]);
  });

  it("7. draws the hosted layer at the viewer link the README gives, each site's attributes on a click", async () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const link = /Open `(https:\/\/localhost:8443\/viewer\/map\?url=)<the \$SITES URL>(\/0)` in the browser/.exec(
      readme,
    );
    expect(link, "the README's viewer link").not.toBeNull();
    expect(sites).toBe(`${engine.ready.https}/arcgis/rest/services/Hosted/Field_sites/FeatureServer`);
    const href = `${(link?.[1] ?? "").replace("https://localhost:8443", engine.ready.https)}${sites}${link?.[2] ?? ""}`;
    const browser = await launchChromium(CHROMIUM_ARGS);
    try {
      const page = await browser.newPage({ ignoreHTTPSErrors: true, viewport: { width: 800, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (e) => errors.push(e.message));
      page.on("response", (r) => {
        if (r.status() >= 400) errors.push(`${r.status()} ${r.url()}`);
      });
      const drawn = () => viewerSays(page, 30_000);
      await page.goto(href);
      await drawn();
      await expect
        .poll(() => page.locator("#viewer-status").textContent(), { timeout: 20_000 })
        .toBe("Field_sites: 3 features.");
      // East gate at the middle of the map (the viewer follows the address's #zoom/latitude/longitude): a click there.
      await page.goto("about:blank");
      await page.goto(`${href}#14/51.4545/-2.5531`);
      await drawn();
      const box = await page.locator("#map").boundingBox();
      if (!box) throw new Error("no map");
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await expect.poll(() => page.locator("body").getAttribute("data-feature")).toBe("3");
      const cells = await page.locator("#viewer-details td").allTextContents();
      expect(cells).toEqual(["3", "East gate", "gate", "300", "51.4545", "-2.5531"]);
      expect(errors).toEqual([]);
    } finally {
      await browser.close();
    }
  });

  it("8. saves a map as the README says: signed in, a layer added in the viewer, saved, then opened by its id", async () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const step = readme.slice(readme.indexOf("**Save a map.**"), readme.indexOf("## What works"));
    for (const words of ["Sign in", "Add layer", "Save as web map", "Save", "Open it", "/viewer/map?webmap=<its id>"])
      expect(step, words).toContain(words);
    const world = await fetchJson(`${engine.ready.https}/arcgis/rest/services/World?f=json`);
    const countries = (world.services as { name: string }[]).find((s) => s.name.startsWith("World/countries"))?.name;
    const browser = await launchChromium(CHROMIUM_ARGS);
    try {
      const page = await browser.newPage({ ignoreHTTPSErrors: true, viewport: { width: 1000, height: 900 } });
      await page.goto(`${engine.ready.https}/`);
      await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Sign in" }).click()]);
      await page.getByLabel("Username").fill("publisher");
      await page.getByLabel("Password").fill(PASSWORDS.publisher);
      await Promise.all([
        page.waitForURL(`${engine.ready.https}/`),
        page.getByRole("button", { name: "Sign in" }).click(),
      ]);
      await page.goto(`${engine.ready.https}/viewer/map?url=${sites}/0`);
      expect(await viewerSays(page, 30_000)).toBe("drawn");
      await page
        .getByLabel("Add layer (a service or layer URL of this site)")
        .fill(`/arcgis/rest/services/${countries}/FeatureServer/0`);
      await page.getByRole("button", { name: "Add layer" }).click();
      await expect.poll(() => page.locator("body").getAttribute("data-layers"), { timeout: 30_000 }).toBe("2");
      await page.getByLabel("Title").fill("Sites and countries");
      await page.getByRole("button", { name: "Save", exact: true }).click();
      await expect
        .poll(() => page.locator("body").getAttribute("data-saved"), { timeout: 20_000 })
        .toMatch(/^[0-9a-f]{32}$/);
      const id = (await page.locator("body").getAttribute("data-saved")) ?? "";
      await Promise.all([page.waitForEvent("load"), page.getByRole("link", { name: "Open it" }).click()]);
      expect(page.url().split("#")[0]).toBe(`${engine.ready.https}/viewer/map?webmap=${id}`);
      expect(await viewerSays(page, 30_000)).toBe("drawn");
      expect(await page.locator("body").getAttribute("data-layers")).toBe("2");
      expect(await page.locator("h1").textContent()).toBe("Sites and countries");
    } finally {
      await browser.close();
    }
  });
});

/** A JSON answer of the engine, trusting its certificate. */
async function fetchJson(url: string): Promise<Record<string, unknown>> {
  return (await call(url, { ca: engine.ca })).json();
}
