// Imports run one way (test → infra → functions → shared, the description at shared/system.ts the bottom), and within
// shared/ its folders too (storage/ → stores/ → auth/ → http/ → …, docs/architecture.md): the lint rule that holds
// them to it, run on probe sources as ESLint runs on the tree, so a commit that imports upward fails `npm test`.
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
    // Within shared/: the stores import nothing above them, not even a type.
    ["shared/stores/probe.ts", 'import { sha256Hex } from "#shared/auth/passwords.ts";'],
    ["shared/stores/probe.ts", 'import type { RestRequest } from "#shared/http/pipeline.ts";'],
    ["shared/stores/probe.ts", 'import { DatasetError } from "#shared/features/errors.ts";'],
    ["shared/stores/probe.ts", 'import type { CacheType } from "../caches/probe.ts";'],
    ["shared/stores/probe.ts", 'await import("#shared/hosted/store.ts");'],
    ["shared/stores/probe.ts", 'import { webMercatorLevels } from "#shared/viewer/page.ts";'],
    ["shared/stores/probe.ts", 'import { visibleGroups } from "#shared/groups/search.ts";'],
    ["shared/stores/probe.ts", 'import { readTile } from "#shared/serving/read.ts";'],
    ["shared/storage/probe.ts", 'import type { DataStore } from "#shared/stores/datastores.ts";'],
    ["shared/storage/probe.ts", 'await import("#shared/stores/item-files.ts");'],
    ["shared/auth/probe.ts", 'import { page } from "#shared/http/html.ts";'],
    ["shared/auth/probe.ts", 'await import("#shared/http/pipeline.ts");'],
    ["shared/features/probe.ts", 'import { HostedStore } from "#shared/hosted/store.ts";'],
    ["shared/features/sql/probe.ts", 'import { x } from "../../hosted/postgis-store.ts";'],
    ["shared/features/probe.ts", 'await import("#shared/hosted/postgis-store.ts");'],
    // Under everything: these import nothing of mapgate.
    ["shared/errors.ts", 'import { ROUTES } from "#shared/system.ts";'],
    ["shared/system.ts", 'import { config } from "./config.ts";'],
    ["shared/ids.ts", 'await import("#shared/log.ts");'],
    ["shared/log.ts", 'import { config } from "#shared/config.ts";'],
    ["shared/digests.ts", 'import { itemId } from "#shared/ids.ts";'],
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
    // Downward within shared/.
    ["shared/stores/probe.ts", 'import type { StoreLocation } from "#shared/storage/storage.ts";'],
    ["shared/stores/probe.ts", 'import { sha256Hex } from "#shared/digests.ts";'],
    ["shared/auth/probe.ts", 'import { getUser } from "#shared/stores/users.ts";'],
    ["shared/http/probe.ts", 'import { callerOf } from "#shared/auth/identity.ts";'],
    ["shared/hosted/probe.ts", 'import { openHostedLayer } from "#shared/features/hosting-database.ts";'],
    ["shared/features/probe.ts", 'await import("#shared/features/hosting-database.ts");'],
    ["shared/features/probe.ts", 'import { page } from "#shared/http/html.ts";'],
    ["shared/errors.ts", 'import { randomUUID } from "node:crypto";'],
  ])("allows %s: %s", async (file, code) => {
    expect(await broken(file, code)).not.toContain("no-restricted-imports");
    expect(await broken(file, code)).not.toContain("no-restricted-syntax");
  });
});
