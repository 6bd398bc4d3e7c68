// Every function is granted each table its code can reach. A function's reach is read from its bundle, built from
// its entry as the stack builds it (infra/aws/bundling.ts, so tree-shaken the same way) but unminified: every
// `tableName("<table>")` left in it, and every table named to the two helpers that take a table's name
// (`queryByPortal("<table>", …)`, and the `{table: "<table>", key}` item read with the caller). A table reached but
// not granted answers 500 at run time ("TABLE_X is not set: this function was not granted the x table") on both
// engines, on whichever path first touches it.
import { join } from "node:path";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { splitEsbuildOptions } from "#infra/aws/bundling.ts";
import { type Access, invocationFunction, REDELIVERY, ROUTES, TABLES, WORKFLOW } from "#shared/system.ts";
import { ROOT } from "./helpers/engine.ts";

interface Granted {
  readonly id: string;
  /** The module under functions/ it runs. */
  readonly entry: string;
  readonly tables: Readonly<Record<string, Access>>;
  readonly itemFiles?: Access;
  readonly hostedData?: Access;
}

const functions: Granted[] = [
  ...[...ROUTES, ...WORKFLOW.tasks].map((r) => ({
    id: r.id,
    entry: "handler" in r ? (r.handler ?? r.id) : r.id,
    tables: r.tables,
    ...(r.itemFiles ? { itemFiles: r.itemFiles } : {}),
    ...(r.hostedData ? { hostedData: r.hostedData } : {}),
  })),
  { ...invocationFunction(), entry: invocationFunction().id },
  { ...REDELIVERY, entry: REDELIVERY.id },
];

const TABLE_NAMES = new Set<string>(TABLES.map((t) => t.name));

/** Where code names a table: the lookup itself, and the helpers that pass a table's name on to it. */
const NAMED = [/\btableName\d*\(\s*"(\w+)"/g, /\bqueryByPortal\d*\(\s*"(\w+)"/g, /\btable:\s*"(\w+)"/g];
/**
 * Every lookup whose argument is not a literal must be one of those helpers, whose callers NAMED reads: the
 * definition itself, queryByPortal's `tableName(table)` and the caller read's `tableName(extra.table)`.
 */
const LOOKUP = /\btableName\d*\(([^)]*)\)/g;
const FORWARDED = /^("\w+"|name\d*|table\d*|extra\d*\.table)$/;

/** The tables a function's bundle reaches, and any lookup it cannot tell the table of. */
async function reach(
  entry: string,
): Promise<{ tables: Set<string>; unknown: string[]; itemFiles: boolean; hostedData: boolean }> {
  const options = splitEsbuildOptions(join(ROOT, "functions", `${entry}.ts`), join(ROOT, "unwritten", entry));
  // Unminified, so the names survive; packages stay outside (the AWS SDK names no table of mapgate's).
  const { outputFiles } = await build({ ...options, minify: false, packages: "external", write: false });
  const tables = new Set<string>();
  const unknown: string[] = [];
  let itemFiles = false;
  let hostedData = false;
  for (const { path, text } of outputFiles) {
    if (!path.endsWith(".mjs")) continue;
    // shared/stores/item-files.ts's refusal, left in every bundle that opens the item files.
    if (text.includes("ITEM_FILES_BUCKET or ITEM_FILES_DIR")) itemFiles = true;
    if (text.includes("HOSTED_DATA_BUCKET or HOSTED_DATA_DIR")) hostedData = true;
    for (const pattern of NAMED) {
      for (const m of text.matchAll(pattern)) if (m[1] && TABLE_NAMES.has(m[1])) tables.add(m[1]);
    }
    for (const m of text.matchAll(LOOKUP)) if (!FORWARDED.test(m[1]?.trim() ?? "")) unknown.push(m[0]);
  }
  return { tables, unknown, itemFiles, hostedData };
}

let reached: Promise<Map<string, Awaited<ReturnType<typeof reach>>>> | undefined;
/** Every function's reach, computed once, a few builds at a time (they share the machine). */
function reaches() {
  reached ??= (async () => {
    const entries = [...new Set(functions.map((f) => f.entry))];
    const out = new Map<string, Awaited<ReturnType<typeof reach>>>();
    for (let i = 0; i < entries.length; i += 4) {
      const batch = entries.slice(i, i + 4);
      const done = await Promise.all(batch.map(reach));
      batch.forEach((e, j) => out.set(e, done[j] as Awaited<ReturnType<typeof reach>>));
    }
    return out;
  })();
  return reached;
}

describe("table grants", () => {
  it("grants every function each table its code can reach", async () => {
    const all = await reaches();
    const missing: string[] = [];
    for (const f of functions) {
      const r = all.get(f.entry);
      for (const t of r?.tables ?? []) if (!(t in f.tables)) missing.push(`${f.id}: ${t}`);
    }
    expect(missing).toEqual([]);
  }, 120_000);

  it("grants the item files to every function whose code opens them, and to no other", async () => {
    const all = await reaches();
    const opening = functions.filter((f) => all.get(f.entry)?.itemFiles).map((f) => f.id);
    expect(opening.sort()).toEqual(
      functions
        .filter((f) => f.itemFiles)
        .map((f) => f.id)
        .sort(),
    );
    expect(opening).toEqual(expect.arrayContaining(["item-add", "item-data", "item-delete"]));
    // Publishing, deleting and the hourly sweep (events-redeliver) open the hosted data themselves to write it; serving
    // reads its layers through the service's source like any store's, and opens it itself only to read attachments'
    // bytes (shared/hosted/attachment-files.ts), which its read grant allows.
    const hosting = functions.filter((f) => all.get(f.entry)?.hostedData);
    expect(hosting.filter((f) => f.hostedData !== "write").map((f) => f.id)).toEqual(["service"]);
    expect(hosting.map((f) => f.id).sort()).toEqual([
      "events-redeliver",
      "item-add",
      "item-delete",
      "service",
      "task-fail-job",
      "task-publish-hosted",
    ]);
    expect(functions.find((f) => f.id === "service")?.hostedData).toBe("read");
  }, 120_000);

  it("tells the table of every lookup in every bundle, and sees the tables it should", async () => {
    const all = await reaches();
    for (const [entry, r] of all) expect(r.unknown, entry).toEqual([]);
    // The analysis finds what is there: the pipeline's reads, a store's own lookups, the helpers' callers.
    expect([...(all.get("role-list")?.tables ?? [])].sort()).toEqual(["apps", "portals", "roles", "tokens", "users"]);
    expect(all.get("datastore-manage")?.tables).toContain("groups");
    expect(all.get("app-list")?.tables).toContain("apps");
    expect(all.get("services-directory")?.tables).toContain("services");
    // Only the routes at a hosted server reach the servers table through the pipeline.
    expect(all.get("role-list")?.tables).not.toContain("servers");
    expect(all.get("server-info")?.tables).toContain("servers");
  }, 120_000);
});
