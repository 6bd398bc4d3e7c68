// Imports run one way (test → infra → functions → shared, the description at shared/system.ts the bottom): the lint
// rule that holds them to it, run on probe sources as ESLint runs on the tree, so a commit that imports upward fails
// `npm test`.
import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";
import { ROOT } from "./helpers/engine.ts";

const eslint = new ESLint({ cwd: ROOT });

/** The rules a source breaks, linted as if it stood at `file`. */
async function broken(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(`${code}\nexport {};\n`, { filePath: `${ROOT}/${file}` });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

describe("the layers' import rule", () => {
  it.each([
    ["shared/probe.ts", 'import { ROUTES } from "#infra/system.ts";'],
    ["shared/probe.ts", 'import { handler } from "#functions/health.ts";'],
    ["shared/stores/probe.ts", 'import { start } from "../../infra/local/engine.ts";'],
    ["shared/probe.ts", 'await import("#functions/health.ts");'],
    ["shared/probe.ts", 'await import("#infra/local/engine.ts");'],
    ["functions/probe.ts", 'import { start } from "#infra/local/engine.ts";'],
    ["infra/admin/probe.ts", 'import { handler } from "#functions/health.ts";'],
    ["infra/admin/probe.ts", 'await import("#functions/task-publish-layers.ts");'],
  ])("refuses %s: %s", async (file, code) => {
    const rules = await broken(file, code);
    expect(rules.some((r) => r === "no-restricted-imports" || r === "no-restricted-syntax")).toBe(true);
  });

  it.each([
    ["shared/probe.ts", 'import { ROUTES } from "#shared/system.ts";'],
    ["functions/probe.ts", 'import { ROUTES } from "#shared/system.ts";'],
    ["infra/local/probe.ts", 'import { ROUTES } from "#shared/system.ts";'],
    ["infra/local/probe.ts", 'import { config } from "#shared/config.ts";'],
    ["test/probe.test.ts", 'import { handler } from "#functions/health.ts";'],
    ["bench/probe.ts", 'import { start } from "#infra/local/engine.ts";'],
  ])("allows %s: %s", async (file, code) => {
    expect(await broken(file, code)).not.toContain("no-restricted-imports");
    expect(await broken(file, code)).not.toContain("no-restricted-syntax");
  });
});
