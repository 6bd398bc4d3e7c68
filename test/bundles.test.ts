// Every function bundle as the stack builds it (infra/aws/bundling.ts): the AWS SDK inside (what runs on
// Lambda is what the tests ran), each at most 1 MB, and each loads on its own in a fresh Node process.
import { execFileSync } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { isBuiltin } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { BUNDLE, esbuildOptions } from "#infra/aws/bundling.ts";
import { ROUTES, WORKFLOW } from "#infra/system.ts";
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
});
