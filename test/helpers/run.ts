import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { ROOT } from "./engine.ts";

/** Runs a client program and parses the one JSON line it prints; its stderr comes along on failure. */
export async function runJson(
  command: string,
  args: string[],
  env: Record<string, string> = {},
): Promise<Record<string, unknown>> {
  try {
    const { stdout } = await promisify(execFile)(command, args, {
      cwd: ROOT,
      env: { ...process.env, ...env },
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    return JSON.parse(stdout.trim().split("\n").pop() ?? "") as Record<string, unknown>;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`${command} ${args.join(" ")} failed: ${e.message}\n${e.stderr ?? ""}`);
  }
}
