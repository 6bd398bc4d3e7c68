// `BENCH_ONLY=groups npm run bench`: the REST services directory and the SOAP catalog for a member of 512 groups
// (ArcGIS's limit) over a catalog of 1,000 private services each shared with 100 groups, half of them with one
// of the member's groups, next to the same catalog where those services are shared with the organization instead
// and the member is in no group: the same services shown, the same bytes answered, so the difference is what
// deciding through groups costs. One load generator, the same run, both on the local engine.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { DynamoDBDocumentClient, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import autocannon from "autocannon";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "../test/helpers/engine.ts";
import { call, form } from "../test/helpers/http.ts";
import { putServices, runningStore } from "../test/helpers/store.ts";

const NS = "http://www.esri.com/schemas/ArcGIS/10.8";
const BODY = `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><t:GetServiceDescriptions xmlns:t="${NS}"/></soap:Body></soap:Envelope>`;
const SERVICES = 1_000;
const GROUPS_PER_SERVICE = 100;
const GROUPS_PER_USER = 512;

const id = () => randomBytes(16).toString("hex");
const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string, seconds: number, soap: boolean): Promise<Load> {
  const r = await autocannon({
    url,
    connections: 10,
    duration: seconds,
    ...(soap
      ? { method: "POST", body: BODY, headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' } }
      : {}),
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

function admin(engine: RunningEngine, args: string[]): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
    encoding: "utf8",
  });
}

const store = (engine: RunningEngine) => runningStore(engine.dataDir);

/** A server whose services the member sees half of: through a group (`viaGroups`) or as org services. */
async function seed(
  engine: RunningEngine,
  ddb: DynamoDBDocumentClient,
  portalId: string,
  name: string,
  mine: readonly string[],
  viaGroups: boolean,
): Promise<number> {
  const { serverId } = JSON.parse(admin(engine, ["register-server", "--portal", portalId, "--name", name])) as {
    serverId: string;
  };
  const items = Array.from({ length: SERVICES }, (_, i) => {
    const shown = i % 2 === 0;
    const groups = Array.from({ length: GROUPS_PER_SERVICE }, id);
    // A shown service lists one of the member's groups last: the check runs through all 100.
    if (shown) groups[GROUPS_PER_SERVICE - 1] = mine[i % mine.length] as string;
    const svc = `Service_${String(i).padStart(5, "0")}`;
    return {
      serverId,
      entry: `svc##${svc.toLowerCase()}`,
      portalId,
      folder: "",
      name: svc,
      type: "MapServer",
      capabilities: "Map,Query,Data",
      description: `Benchmark service ${i}`,
      tags: [],
      itemId: id(),
      owner: "admin",
      access: viaGroups ? "private" : shown ? "org" : "private",
      ...(viaGroups ? { groups } : {}),
      extensions: [],
      created: 0,
    };
  });
  await putServices(ddb, serverId, items);
  return Buffer.byteLength(JSON.stringify(items[0]));
}

async function setGroups(ddb: DynamoDBDocumentClient, username: string, groups: readonly string[]) {
  await ddb.send(
    new UpdateCommand({
      TableName: "mapgate-users",
      Key: { username },
      ...(groups.length > 0
        ? { UpdateExpression: "SET #g = :g", ExpressionAttributeValues: { ":g": new Set(groups) } }
        : { UpdateExpression: "REMOVE #g" }),
      ExpressionAttributeNames: { "#g": "groups" },
    }),
  );
}

export async function groupsBench(seconds: number): Promise<void> {
  const engine = await startEngine({ env: { POWERTOOLS_LOG_LEVEL: "WARN" } });
  const ddb = store(engine);
  try {
    const portalId = (JSON.parse(admin(engine, ["list"])) as { portalId: string }[])[0]?.portalId as string;
    const mine = Array.from({ length: GROUPS_PER_USER }, id);
    const serviceBytes = await seed(engine, ddb, portalId, "benchgroups", mine, true);
    await seed(engine, ddb, portalId, "benchorg", mine, false);
    const signIn = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: "user", password: PASSWORDS.user }),
    });
    const token = signIn.json<{ token: string }>().token;
    const base = engine.ready.http.replace("localhost", "127.0.0.1");
    const userBytes = (groups: number) => 300 + groups * 33;
    console.log(
      `\nGroups: a member of ${GROUPS_PER_USER} groups, ${SERVICES.toLocaleString("en")} private services each shared with ${GROUPS_PER_SERVICE} groups (${SERVICES / 2} of them with one of the member's), vs the same ${SERVICES / 2} shown as org services to a member of no group; autocannon 10 connections × ${seconds} s`,
    );
    console.log(
      `${"".padEnd(44)}${"req/s".padStart(9)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}${"errors".padStart(9)}`,
    );
    // Two rounds taken in turns: the first warms every path (JIT, caches), the ratios come from the second, and
    // the rows of both show how much a shared machine moves between runs.
    const scenarios = [
      ["REST directory, org (no groups)", "benchorg", [], false],
      ["REST directory, via 512 groups", "benchgroups", mine, false],
      ["SOAP catalog, org (no groups)", "benchorg", [], true],
      ["SOAP catalog, via 512 groups", "benchgroups", mine, true],
    ] as const;
    const second: Load[] = [];
    for (const round of [1, 2]) {
      for (const [label, server, groups, soap] of scenarios) {
        await setGroups(ddb, "user", groups);
        const url = soap
          ? `${base}/${server}/services?token=${encodeURIComponent(token)}`
          : `${base}/${server}/rest/services?f=json&token=${encodeURIComponent(token)}`;
        const sample = soap
          ? (await call(url, { body: BODY, headers: { "content-type": "text/xml; charset=utf-8" } })).text
          : (await call(url)).text;
        const shown = soap
          ? (sample.match(/<ServiceDescription>/g) ?? []).length
          : ((JSON.parse(sample) as { services?: unknown[] }).services ?? []).length;
        if (shown !== SERVICES / 2) throw new Error(`${label}: ${shown} services shown, expected ${SERVICES / 2}`);
        await load(url, 1, soap);
        const r = await load(url, seconds, soap);
        if (round === 2) second.push(r);
        console.log(
          `${`  ${label} (round ${round})`.padEnd(44)}${fmt(r.rps)}${fmt(r.p50)}${fmt(r.p99)}${fmt(r.errors, 0)}`,
        );
      }
    }
    const ratio = (a: number, b: number) => ((second[a]?.rps ?? 0) / (second[b]?.rps ?? 1)).toFixed(2);
    console.log(`  ratios (groups / org, round 2): directory ${ratio(1, 0)}, SOAP ${ratio(3, 2)}`);
    console.log(
      `  store cost per request: the caller's record grows from ~${userBytes(0)} B to ~${userBytes(GROUPS_PER_USER).toLocaleString("en")} B (${Math.ceil(userBytes(GROUPS_PER_USER) / 4096)} RCU strongly consistent instead of 1), still one read; a service record with ${GROUPS_PER_SERVICE} groups is ~${serviceBytes.toLocaleString("en")} B, read only when the catalog version moves`,
    );
  } finally {
    ddb.destroy();
    await engine.stop();
  }
}
