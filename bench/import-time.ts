// A module's cold import: the median time a fresh Node process takes to import it, with the environment a
// function's configuration needs to load.
import { execFileSync } from "node:child_process";
import { ROOT } from "../test/helpers/engine.ts";
import { median } from "./stats.ts";

const ENV = { AWS_REGION: "us-east-1", TABLE_PORTALS: "p", TABLE_USERS: "u", TABLE_TOKENS: "t" };

/**
 * Median wall and CPU time (user + system, which moves less on a machine shared with other work) of the import
 * in ms, and the builtin modules the import left loaded (from the last run).
 */
export function importRuns(file: string, runs = 5): { ms: number; cpu: number; builtins: string[] } {
  const times: number[] = [];
  const cpus: number[] = [];
  let builtins: string[] = [];
  for (let i = 0; i < runs; i++) {
    const out = execFileSync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `const t=performance.now(), c=process.cpuUsage(); await import(${JSON.stringify(file)}); const ms=performance.now()-t; const u=process.cpuUsage(c);` +
          "console.log(JSON.stringify({ms, cpu: (u.user + u.system) / 1000, builtins: process.moduleLoadList.filter((m) => m.startsWith('NativeModule '))}))",
      ],
      { cwd: ROOT, encoding: "utf8", env: { ...process.env, ...ENV } },
    );
    const got = JSON.parse(out.trim().split("\n").pop() ?? "{}") as { ms: number; cpu: number; builtins: string[] };
    times.push(got.ms);
    cpus.push(got.cpu);
    builtins = got.builtins.map((m) => m.slice("NativeModule ".length));
  }
  return { ms: median(times), cpu: median(cpus), builtins };
}

export const importMs = (file: string, runs = 5): { wall: number; cpu: number } => {
  const { ms, cpu } = importRuns(file, runs);
  return { wall: ms, cpu };
};
