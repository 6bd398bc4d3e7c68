// Role figures: update latency on the local engine next to a plain authenticated read in the same run,
// and DynamoDB requests per update (in-process, counted at the SDK client).
import type { RunningEngine } from "../test/helpers/engine.ts";
import { PASSWORDS } from "../test/helpers/engine.ts";
import { call, form } from "../test/helpers/http.ts";
import { apiEvent, eventCallerToken, lambdaContext } from "../test/helpers/in-process.ts";
import { dynamoRequests } from "./requests.ts";

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))] ?? NaN;

export async function roleLatency(engine: RunningEngine, runs = 100): Promise<void> {
  const rest = `${engine.ready.https}/portal/sharing/rest`;
  const signIn = await call(`${rest}/generateToken`, {
    ca: engine.ca,
    body: form({ f: "json", username: "admin", password: PASSWORDS.admin }),
  });
  const token = signIn.json<{ token: string }>().token;
  const created = await call(`${rest}/portals/self/createRole`, {
    ca: engine.ca,
    body: form({ f: "json", token, name: `Bench ${Date.now()}` }),
  });
  const id = created.json<{ id: string }>().id;
  const time = async (fn: () => Promise<unknown>) => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };
  const updates: number[] = [];
  const reads: number[] = [];
  for (let i = 0; i < runs; i++) {
    updates.push(
      await time(() =>
        call(`${rest}/portals/self/roles/${id}/update`, {
          ca: engine.ca,
          body: form({ f: "json", token, name: `Bench role ${i}`, description: `run ${i}` }),
        }),
      ),
    );
    reads.push(await time(() => call(`${rest}/community/self?f=json&token=${token}`, { ca: engine.ca })));
  }
  console.log(
    `\nRole update on the local engine over HTTPS (${runs} sequential requests each, new connection per request)`,
  );
  console.log(
    `  role update (rename + redescribe)   p50 ${pct(updates, 0.5).toFixed(1)} ms   p95 ${pct(updates, 0.95).toFixed(1)} ms`,
  );
  console.log(
    `  authenticated read (community/self) p50 ${pct(reads, 0.5).toFixed(1)} ms   p95 ${pct(reads, 0.95).toFixed(1)} ms`,
  );
  console.log(`  ratio (p50)                          ${(pct(updates, 0.5) / pct(reads, 0.5)).toFixed(2)}×`);
}

export async function roleRequests(): Promise<void> {
  {
    const { bootstrapOrganization } = await import("#infra/admin/operations.ts");
    const create = (await import("#functions/role-create.ts")).handler;
    const update = (await import("#functions/role-update.ts")).handler;
    const self = (await import("#functions/community-self.ts")).handler;
    const { portal } = await bootstrapOrganization({
      name: "Roles",
      admin: { username: "radmin", password: "radmin-pass-1" },
    });
    const token = await eventCallerToken("radmin", portal.portalId);
    const headers = { authorization: `Bearer ${token}` };
    const path = "/portal/sharing/rest/portals/self";
    const created = await create(
      apiEvent(`${path}/createRole`, {
        body: "f=json&name=Counted",
        headers,
        pathParameters: { portalId: "self" },
      }),
      lambdaContext(),
    );
    const id = JSON.parse(created.body ?? "{}").id as string;
    if (!id) throw new Error(`createRole failed: ${created.body}`);
    const event = (body: string) =>
      apiEvent(`${path}/roles/${id}/update`, { body, headers, pathParameters: { portalId: "self", roleId: id } });
    const count = async (fn: () => Promise<{ body?: string }>) => {
      const before = dynamoRequests();
      const res = await fn();
      if (res.body?.includes('"error"')) throw new Error(`request failed: ${res.body}`);
      return dynamoRequests() - before;
    };
    const describe = await count(() => update(event("f=json&description=only"), lambdaContext()));
    const rename = await count(() => update(event("f=json&name=Counted%20Again"), lambdaContext()));
    const read = await count(() =>
      self(apiEvent("/portal/sharing/rest/community/self", { query: "f=json", headers }), lambdaContext()),
    );
    console.log("\nDynamoDB requests per role update (warm function, no contention)");
    console.log(`  description only  ${describe}  (identity, read role, one-item transaction)`);
    console.log(`  rename            ${rename}  (identity, read role, transaction moving the name reservation)`);
    console.log(`  plain authenticated read ${read}`);
  }
}
