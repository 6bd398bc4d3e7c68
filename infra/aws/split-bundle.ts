// Run by the CDK after it bundles each function (infra/aws/bundling.ts, infra/aws/stack.ts): NodejsFunction
// writes one file and cannot split (esbuild splits only into a folder), so its bundle is replaced by the split
// build of the same entry with the same options. Usage: split-bundle.ts ENTRY OUTPUT_DIR
import { rmSync } from "node:fs";
import { join } from "node:path";
import { build } from "esbuild";
import { splitEsbuildOptions } from "./bundling.ts";

const [entry, outdir] = process.argv.slice(2);
if (!entry || !outdir) throw new Error("usage: split-bundle.ts ENTRY OUTPUT_DIR");
for (const file of ["index.mjs", "index.mjs.map"]) rmSync(join(outdir, file), { force: true });
await build({ ...splitEsbuildOptions(entry, outdir), logLevel: "error" });
