// Read figures: three read routes through the local engine, each next to a bare node:http server answering the
// same bytes with the same headers (same run, same load), with the goal beside each ratio.
import { spawn } from "node:child_process";
import { join } from "node:path";
import autocannon from "autocannon";
import { bareTwin } from "./bare.ts";
import { PASSWORDS, ROOT, startEngine } from "../test/helpers/engine.ts";
import { type Answer, call, form } from "../test/helpers/http.ts";

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);

interface Route {
  readonly name: string;
  readonly path: string;
  readonly goal: number;
}

async function rps(url: string, seconds: number): Promise<{ rps: number; errors: number }> {
  const r = await autocannon({ url, connections: 10, duration: seconds });
  return { rps: r.requests.average, errors: r.errors + r.non2xx };
}

/**
 * One ratio per route: the engine's throughput over bare node:http serving the engine's own answer. Its own
 * engine, whose demo organization takes plain HTTP (no TLS on either side of the comparison).
 */
export async function readLoad(seconds: number): Promise<void> {
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN", MAPGATE_ALL_SSL: "false" } });
  try {
    // Signing in takes HTTPS whatever the organization says; the token is bound to loopback, where autocannon is.
    const signIn = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: "user", password: PASSWORDS.user, client: "ip", ip: "127.0.0.1" }),
    });
    const token = signIn.json<{ token?: string }>().token;
    if (!token) throw new Error(`generateToken failed: ${signIn.text.slice(0, 200)}`);
    await measure(engine.ready.http.replace("localhost", "127.0.0.1"), token, seconds);
  } finally {
    await engine.stop();
  }
}

async function measure(http: string, token: string, seconds: number): Promise<void> {
  const routes: Route[] = [
    { name: "anonymous read (portals/self)", path: "/portal/sharing/rest/portals/self?f=json", goal: 0.25 },
    {
      name: "authenticated read (community/self)",
      path: `/portal/sharing/rest/community/self?f=json&token=${token}`,
      goal: 0.15,
    },
    { name: "/arcgis/rest/info", path: "/arcgis/rest/info?f=json", goal: 0.25 },
  ];
  console.log(`\nReads: each route vs bare node:http answering the same bytes, 10 connections × ${seconds} s`);
  console.log(
    `${"".padEnd(38)}${"req/s".padStart(9)}${"bare".padStart(9)}${"errors".padStart(9)}${"ratio".padStart(9)}${"goal".padStart(9)}`,
  );
  for (const route of routes) {
    const url = `${http}${route.path}`;
    const sample = await call(url);
    if (sample.status !== 200 || sample.text.includes('"error"'))
      throw new Error(`${route.name} failed: ${sample.status} ${sample.text.slice(0, 200)}`);
    const bare = await bareTwin(sample);
    const bareUrl = bare.url;
    try {
      await rps(url, 1); // warm
      const mine = await rps(url, seconds);
      const base = await rps(bareUrl, seconds);
      console.log(
        `${route.name.padEnd(38)}${fmt(mine.rps, 0)}${fmt(base.rps, 0)}${fmt(mine.errors, 0)}${fmt(mine.rps / base.rps, 3)}${`≥ ${route.goal}`.padStart(9)}`,
      );
      if (route === routes[0]) await floor(sample, base.rps, seconds);
    } finally {
      bare.close();
    }
  }
}

/**
 * Where the anonymous read's ratio is bounded: the gateway alone, and the gateway with the read's one BatchGetItem
 * (the SDK client and in-process store the engine uses), each in its own process like the engine, each set against
 * the same bare figure.
 */
async function floor(sample: Answer, bare: number, seconds: number): Promise<void> {
  for (const [mode, label] of [
    ["gateway", "  floor: gateway, answer at once"],
    ["store-read", "  floor: gateway + its one BatchGetItem"],
  ] as const) {
    const child = spawn(process.execPath, [join(ROOT, "bench/floor-server.ts"), mode, sample.text], {
      cwd: ROOT,
      env: { ...process.env, POWERTOOLS_LOG_LEVEL: "WARN" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const port = await new Promise<string>((resolve, reject) => {
        child.once("exit", (code) => reject(new Error(`floor server exited (${code})`)));
        child.stdout.on("data", (chunk: Buffer) => {
          const m = /floor (\d+)/.exec(chunk.toString("utf8"));
          if (m?.[1]) resolve(m[1]);
        });
      });
      const url = `http://127.0.0.1:${port}/portal/sharing/rest/portals/self?f=json`;
      await rps(url, 1);
      const got = await rps(url, seconds);
      console.log(
        `${label.padEnd(38)}${fmt(got.rps, 0)}${fmt(bare, 0)}${fmt(got.errors, 0)}${fmt(got.rps / bare, 3)}${"".padStart(9)}`,
      );
    } finally {
      child.kill();
    }
  }
}
