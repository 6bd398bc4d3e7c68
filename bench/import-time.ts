// A module's cold import: the median time a fresh Node process takes to import it, with the environment a
// function's configuration needs to load.
import { execFileSync } from "node:child_process";
import { ROOT } from "../test/helpers/engine.ts";

const ENV = { AWS_REGION: "us-east-1", TABLE_PORTALS: "p", TABLE_USERS: "u", TABLE_TOKENS: "t" };

/** Median import time in ms, and the builtin modules the import left loaded (from the last run). */
export function importRuns(file: string, runs = 5): { ms: number; builtins: string[] } {
  const times: number[] = [];
  let builtins: string[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const t=performance.now(); await import(${JSON.stringify(file)}); const ms=performance.now()-t;` +
          "console.log(JSON.stringify({ms, builtins: process.moduleLoadList.filter((m) => m.startsWith('NativeModule '))}))",
      ],
      { cwd: ROOT, encoding: "utf8", env: { ...process.env, ...ENV } },
    );
    const got = JSON.parse(out.trim().split("\n").pop() ?? "{}") as { ms: number; builtins: string[] };
    times.push(got.ms);
    builtins = got.builtins.map((m) => m.slice("NativeModule ".length));
  }
  times.sort((a, b) => a - b);
  return { ms: times[Math.floor(times.length / 2)] ?? Number.NaN, builtins };
}

export const importMs = (file: string, runs = 5): number => importRuns(file, runs).ms;
