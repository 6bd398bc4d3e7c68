// The README is the front door and docs/ the rooms behind it: every relative link and anchor between them
// resolves, every page is reachable from the index, and the README stays short and keeps its two commands.
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/engine.ts";

const DOCS = join(ROOT, "docs");
const pages = [
  join(ROOT, "README.md"),
  ...readdirSync(DOCS)
    .filter((f) => f.endsWith(".md"))
    .map((f) => join(DOCS, f)),
];

/** The text outside fenced code blocks, HTML comments and inline code: where links and headings live. */
function prose(markdown: string): string[] {
  const lines: string[] = [];
  let fenced = false;
  for (const line of markdown.replace(/<!--[\s\S]*?-->/g, "").split("\n")) {
    if (/^\s*```/.test(line)) {
      fenced = !fenced;
      continue;
    }
    if (!fenced) lines.push(line.replace(/`[^`]*`/g, (code) => (code.includes("](") ? "" : code)));
  }
  return lines;
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens, repeats numbered. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const line of prose(markdown)) {
    const m = /^#{1,6}\s+(.+?)\s*#*\s*$/.exec(line);
    if (!m?.[1]) continue;
    const text = m[1].replace(/\[([^\]]*)\]\([^)]*\)/g, "$1").replace(/`/g, "");
    const base = text
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "")
      .replace(/ /g, "-");
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

interface Link {
  readonly from: string;
  readonly target: string;
}

function links(file: string): Link[] {
  const out: Link[] = [];
  for (const line of prose(readFileSync(file, "utf8"))) {
    for (const m of line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
      const target = m[1] ?? "";
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: …: not ours to check
      out.push({ from: relative(ROOT, file), target });
    }
  }
  return out;
}

describe("README and docs", () => {
  const all = pages.flatMap(links);

  it("finds the pages and their links", () => {
    expect(pages.length).toBeGreaterThan(10);
    expect(all.length).toBeGreaterThan(100);
  });

  it("resolves every relative link to a file, and every anchor to a heading of that file", () => {
    const broken: string[] = [];
    for (const { from, target } of all) {
      const [path = "", anchor] = target.split("#", 2);
      const file = path === "" ? join(ROOT, from) : resolve(dirname(join(ROOT, from)), decodeURI(path));
      if (!existsSync(file)) {
        broken.push(`${from}: ${target} (no such file)`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!file.endsWith(".md") || statSync(file).isDirectory()) {
        broken.push(`${from}: ${target} (an anchor into something that is not a page)`);
        continue;
      }
      if (!anchors(readFileSync(file, "utf8")).has(anchor)) broken.push(`${from}: ${target} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });

  it("reaches every docs page from the index, and the index from the README", () => {
    const index = new Set(
      links(join(DOCS, "README.md")).map(({ target }) => resolve(DOCS, target.split("#")[0] ?? "")),
    );
    const unlisted = pages.filter((p) => p.startsWith(DOCS) && !p.endsWith("README.md") && !index.has(p));
    expect(unlisted.map((p) => relative(ROOT, p))).toEqual([]);
    expect(links(join(ROOT, "README.md")).map((l) => l.target)).toContain("docs/README.md");
  });

  it("keeps the README a front door: short, with the two commands and the curl command the engine test runs", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    expect(readme.split("\n").length).toBeLessThanOrEqual(260);
    expect(readme).toContain("npm ci && npm start ");
    // The test command is the one CI runs, and it installs the system packages the suite drives (a fresh machine
    // with Node alone passes it): the README's line and .ci/run's last line are the same command.
    const testLine = readme
      .split("\n")
      .find((l) => l.endsWith("# the whole test suite (lint, type check, unit, integration, infrastructure)"));
    const command = testLine?.split("#")[0]?.trim();
    expect(command).toBe("npm ci && npm run setup && npm test");
    const ci = readFileSync(join(ROOT, ".ci/run"), "utf8").trim().split("\n");
    expect(ci.at(-1)).toBe(command);
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    const setup = readFileSync(join(ROOT, pkg.scripts.setup?.replace(/^bash /, "") ?? "missing"), "utf8");
    // Every system program a test spawns is one the setup installs when missing.
    for (const program of [
      "chromium",
      "postgresql",
      "postgis",
      "php-soap",
      "python3-zeep",
      "python3-suds",
      "libxml2-utils",
      "gdal-bin",
      "curl",
    ]) {
      expect(setup).toContain(program);
    }
    // test/engine.test.ts runs this command against a started engine.
    expect(readme).toContain(
      'curl --cacert .mapgate/tls-cert.pem "https://localhost:8443/portal/sharing/rest/portals/self?f=json"',
    );
    expect(existsSync(join(ROOT, "LICENSE"))).toBe(true);
    const license = (JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { license: string }).license;
    expect(license).toBe("Apache-2.0");
    expect(readFileSync(join(ROOT, "LICENSE"), "utf8")).toContain(
      "Apache License\n                           Version 2.0",
    );
  });
});
