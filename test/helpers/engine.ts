// Starts the real local engine (`node infra/local/main.ts`, what `npm start` runs) in a child process
// on a fresh data folder and free ports, and waits for its ready line.
import { type ChildProcess, spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { signIn } from "./http.ts";

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export const PASSWORDS = { admin: "admin-Pass-1234", publisher: "publisher-Pass-1234", user: "user-Pass-1234" };

/** Tokens of the demo's three members, signed in at `portal` (…/sharing/rest) trusting `ca`. */
export async function signInMembers(
  portal: string,
  ca: Buffer,
): Promise<{ admin: string; publisher: string; user: string }> {
  const [admin, publisher, user] = await Promise.all(
    (["admin", "publisher", "user"] as const).map((name) => signIn(portal, ca, name, PASSWORDS[name])),
  );
  return { admin: admin ?? "", publisher: publisher ?? "", user: user ?? "" };
}

export interface Ready {
  https: string;
  http: string;
  cert: string;
  pid: number;
}

export interface RunningEngine {
  readonly dataDir: string;
  readonly ready: Ready;
  readonly ca: Buffer;
  readonly child: ChildProcess;
  /** Every line the engine has written to stdout or stderr so far (its logs included). */
  readonly lines: string[];
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Data folders this test file made, and the engines running on each. */
const made = new Map<string, Set<ChildProcess>>();

export function newDataDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "mapgate-test-"));
  made.set(dir, new Set());
  return dir;
}

/**
 * Removes the data folders this file made once no engine runs on them (run after the file's own hooks, by the
 * setup module): each holds a store, a demo GeoPackage and caches, tens of MB a start.
 */
export function removeDataDirs(): void {
  for (const [dir, running] of made) {
    if ([...running].some((c) => c.exitCode === null && c.signalCode === null)) continue;
    rmSync(dir, { recursive: true, force: true });
    made.delete(dir);
  }
}

export interface StartOptions {
  /** A folder to start on (an earlier engine's, or an empty one for a first start). */
  dataDir?: string;
  env?: Record<string, string>;
  /**
   * Without `dataDir`: start on an empty folder (the first start writes the demo data), not on a copy of the
   * run's demo folder. For tests of what a first start does.
   */
  fresh?: boolean;
}

/**
 * A data folder holding what a first start writes (the store with the demo organization, the demo GeoPackage and
 * caches, the certificate, keys): made once per test run by the first engine started without a folder, then copied
 * for every later one, so a test file starts in seconds instead of writing 171,000 places again. The run's folder
 * comes from the global setup (test/helpers/engine-template.ts); outside vitest (bench) there is none.
 */
async function demoTemplate(): Promise<string | undefined> {
  if (!process.env.VITEST) return undefined;
  const { inject } = await import("vitest");
  const root = inject("engineTemplate");
  if (!root) return undefined;
  const data = join(root, "data");
  const done = join(root, "ready");
  if (existsSync(done)) return data;
  try {
    mkdirSync(join(root, "lock")); // atomic: one worker of the run makes it, the others wait for it
  } catch {
    for (let waited = 0; !existsSync(done); waited += 200) {
      if (waited > 120_000) throw new Error("the run's demo data folder was not made within 120 s");
      await new Promise((r) => setTimeout(r, 200));
    }
    return data;
  }
  const first = await startEngine({ dataDir: data });
  await first.stop();
  writeFileSync(done, "");
  return data;
}

export function spawnEngine(options: StartOptions = {}) {
  const dataDir = options.dataDir ?? newDataDir();
  const child: ChildProcess = spawn(process.execPath, [join(ROOT, "infra/local/main.ts")], {
    cwd: ROOT,
    env: {
      ...process.env,
      MAPGATE_DATA_DIR: dataDir,
      MAPGATE_HTTPS_PORT: "0",
      MAPGATE_HTTP_PORT: "0",
      MAPGATE_ADMIN_PASSWORD: PASSWORDS.admin,
      MAPGATE_PUBLISHER_PASSWORD: PASSWORDS.publisher,
      MAPGATE_USER_PASSWORD: PASSWORDS.user,
      ...options.env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  made.get(dataDir)?.add(child);
  const lines: string[] = [];
  const errLines: string[] = [];
  const collect = (into: string[]) => {
    let partial = "";
    return (chunk: Buffer) => {
      const parts = (partial + chunk.toString("utf8")).split("\n");
      partial = parts.pop() ?? "";
      into.push(...parts);
    };
  };
  child.stdout?.on("data", collect(lines));
  child.stderr?.on("data", collect(errLines));
  child.stderr?.on("data", collect(lines));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { dataDir, child, lines, errLines, exited };
}

export async function startEngine(options: StartOptions = {}): Promise<RunningEngine> {
  if (!options.dataDir && !options.fresh) {
    const template = await demoTemplate();
    if (template) {
      const dataDir = newDataDir();
      cpSync(template, dataDir, { recursive: true });
      options = { ...options, dataDir };
    }
  }
  const { dataDir, child, lines, errLines, exited } = spawnEngine(options);
  const ready = await new Promise<Ready>((resolve, reject) => {
    // A first start writes the demo data (171,000 places): on a machine busy with other work that takes a while.
    const timer = setTimeout(() => {
      clearInterval(poll);
      // Not left running behind a failed hook.
      child.kill("SIGKILL");
      reject(new Error(`engine not ready in 80 s:\n${lines.join("\n")}\n${errLines.join("\n")}`));
    }, 80_000);
    const poll = setInterval(() => {
      const line = lines.find((l) => l.startsWith("mapgate: ready "));
      if (line) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve(JSON.parse(line.slice("mapgate: ready ".length)) as Ready);
      }
    }, 20);
    exited.then((code) => {
      clearInterval(poll);
      clearTimeout(timer);
      reject(new Error(`engine exited (${code}) before ready:\n${lines.join("\n")}\n${errLines.join("\n")}`));
    });
  });
  return {
    dataDir,
    ready,
    ca: readFileSync(ready.cert),
    child,
    lines,
    stop: async (signal = "SIGTERM") => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill(signal);
      return exited;
    },
  };
}

/** The engine started with `options`, and a token of the demo's `member` (the engine is stopped if sign-in fails). */
export async function startSignedIn(
  member: keyof typeof PASSWORDS,
  options: StartOptions = {},
): Promise<{ engine: RunningEngine; token: string }> {
  const engine = await startEngine(options);
  try {
    return {
      engine,
      token: await signIn(`${engine.ready.https}/portal/sharing/rest`, engine.ca, member, PASSWORDS[member]),
    };
  } catch (err) {
    await engine.stop();
    throw err;
  }
}
