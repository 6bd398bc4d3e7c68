// Every function bundle as the stack builds it (infra/aws/bundling.ts): the AWS SDK inside (what runs on
// Lambda is what the tests ran), each at most 1 MB, and each loads on its own in a fresh Node process.
import { execFileSync } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { isBuiltin } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { BUNDLE, esbuildOptions, SPLIT_FUNCTIONS, splitEsbuildOptions } from "#infra/aws/bundling.ts";
import { INVOCATION, ROUTES, WORKFLOW } from "#infra/system.ts";
import { ROOT } from "./helpers/engine.ts";

const modules = [...new Set([...ROUTES.map((r) => r.handler ?? r.id), ...WORKFLOW.tasks.map((t) => t.id)])];

describe("function bundles", () => {
  it("carry the AWS SDK inside, stay under 1 MB each (the service 1.5 MB), and load in a fresh process with no node_modules", async () => {
    const out = mkdtempSync(join(tmpdir(), "mapgate-bundles-"));
    const { outfile: _unused, ...options } = esbuildOptions("", "");
    const { metafile } = await build({
      ...options,
      metafile: true,
      entryPoints: Object.fromEntries(modules.map((id) => [id, join(ROOT, "functions", `${id}.ts`)])),
      outdir: out,
      outExtension: { ".js": ".mjs" },
    });
    for (const id of modules) {
      const file = join(out, `${id}.mjs`);
      // The service function carries the feature query (JTS predicates, projections: ~0.3 MB), evaluated only by
      // the first query; moving `query` to a function of its own would bring it back under 1 MB.
      expect(statSync(file).size, id).toBeLessThan((id === "service" ? 1.5 : 1) * 1024 * 1024);
      // No import left for the runtime to resolve but Node's own modules.
      const outputs = Object.entries(metafile.outputs).filter(([path]) => path.endsWith(`/${id}.mjs`));
      const external = outputs.flatMap(([, o]) => o.imports.filter((i) => i.external).map((i) => i.path));
      expect(
        external.filter((path) => !isBuiltin(path) && !(BUNDLE.external as readonly string[]).includes(path)),
        id,
      ).toEqual([]);
    }
    // Loaded from a folder with no node_modules anywhere above it (the temporary folder), as on Lambda.
    const loaded = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `for (const id of ${JSON.stringify(modules)}) { const m = await import(${JSON.stringify(out)} + "/" + id + ".mjs"); if (typeof m.handler !== "function") throw new Error(id); } console.log("ok");`,
      ],
      {
        cwd: out,
        encoding: "utf8",
        env: {
          PATH: process.env.PATH,
          AWS_REGION: "us-east-1",
          TABLE_PORTALS: "p",
          TABLE_USERS: "u",
          TABLE_TOKENS: "t",
        },
      },
    );
    expect(loaded.trim()).toBe("ok");
  }, 60_000);

  it("load each operation of the operations function on first use: no route handler is in what its entry imports", async () => {
    expect(SPLIT_FUNCTIONS.has(INVOCATION.id)).toBe(true);
    const out = mkdtempSync(join(tmpdir(), "mapgate-split-"));
    const { metafile } = await build({
      ...splitEsbuildOptions(join(ROOT, "functions", `${INVOCATION.id}.ts`), out),
      metafile: true,
    });
    // What a cold start reads and compiles: the entry and every chunk it imports statically, transitively.
    const outputs = new Map(Object.entries(metafile.outputs).map(([path, o]) => [join(process.cwd(), path), o]));
    const entry = join(out, "index.mjs");
    const eager = new Set<string>([entry]);
    for (const file of eager) {
      for (const i of outputs.get(file)?.imports ?? []) {
        if (i.kind === "import-statement" && !i.external) eager.add(join(process.cwd(), i.path));
      }
    }
    const eagerInputs = [...eager].flatMap((file) => Object.keys(outputs.get(file)?.inputs ?? {}));
    const handlers = eagerInputs.filter((input) => /(^|\/)functions\/[\w-]+\.ts$/.test(input));
    expect(handlers).toEqual([`functions/${INVOCATION.id}.ts`]);
    // Each operation's handler is a chunk of its own (dynamic imports), so the entry stays near the size of one
    // route's bundle, not the sum of them.
    const lazy = [...outputs.entries()].filter(([file]) => !eager.has(file) && file.endsWith(".mjs"));
    expect(lazy.length).toBeGreaterThan(0);
    const eagerBytes = [...eager].reduce((n, file) => n + (outputs.get(file)?.bytes ?? 0), 0);
    expect(eagerBytes).toBeLessThan(512 * 1024);
    // Every operation's chunk loads from a folder with no node_modules above it, as on Lambda.
    const loaded = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const m = await import(${JSON.stringify(entry)}); const mods = await Promise.all(Object.values(m.MODULES).map((f) => f())); if (mods.some((x) => typeof x.handler !== "function")) throw new Error("handler"); console.log(mods.length);`,
      ],
      {
        cwd: out,
        encoding: "utf8",
        env: {
          PATH: process.env.PATH,
          AWS_REGION: "us-east-1",
          TABLE_PORTALS: "p",
          TABLE_USERS: "u",
          TABLE_TOKENS: "t",
        },
      },
    );
    expect(Number(loaded.trim())).toBe(Object.keys(INVOCATION.operations).length);
  }, 60_000);
});
