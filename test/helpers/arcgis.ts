import { spawn } from "node:child_process";
import { join } from "node:path";
import { ROOT, type RunningEngine } from "./engine.ts";

export interface Step {
  url: string;
  params?: Record<string, unknown>;
  httpMethod?: "GET" | "POST";
  rawText?: boolean;
}

/** Runs steps through the real ArcGIS REST JS client in its own Node process (see test/clients/arcgis-steps.ts). */
export function arcgisSteps(
  engine: RunningEngine,
  username: string,
  password: string,
  steps: Step[],
): Promise<unknown[]> {
  const child = spawn(process.execPath, [join(ROOT, "test/clients/arcgis-steps.ts")], {
    cwd: ROOT,
    env: { ...process.env, NODE_EXTRA_CA_CERTS: engine.ready.cert },
  });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on("data", (c: Buffer) => out.push(c));
  child.stderr.on("data", (c: Buffer) => err.push(c));
  child.stdin.end(JSON.stringify({ portal: `${engine.ready.https}/portal/sharing/rest`, username, password, steps }));
  return new Promise((resolve, reject) => {
    child.once("exit", (code) => {
      if (code !== 0) reject(new Error(`client exited ${code}: ${Buffer.concat(err).toString()}`));
      else resolve(JSON.parse(Buffer.concat(out).toString("utf8")) as unknown[]);
    });
  });
}
