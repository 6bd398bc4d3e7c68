// The real ArcGIS REST JS client (@esri/arcgis-rest-request 4.10.2) signs in against the local engine
// over HTTPS, fails cleanly with a wrong password, and refreshes once after a 498.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, expect, it } from "vitest";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call } from "./helpers/http.ts";

let engine: RunningEngine;
let result: Record<string, Record<string, unknown>>;

beforeAll(async () => {
  engine = await startEngine();
  const portal = `${engine.ready.https}/portal/sharing/rest`;
  const portalId = (await call(`${portal}/portals/self?f=json`, { ca: engine.ca })).json<{ id: string }>().id;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [join(ROOT, "test/clients/arcgis-rest.ts"), portal, engine.dataDir, portalId, PASSWORDS.publisher],
    { cwd: ROOT, env: { ...process.env, NODE_EXTRA_CA_CERTS: engine.ready.cert }, timeout: 60_000 },
  );
  result = JSON.parse(stdout);
});
afterAll(async () => {
  await engine?.stop();
});

it("signs in with ArcGISIdentityManager.signIn and gets a numeric expiry 14 days ahead", () => {
  expect(result.signIn).toMatchObject({ username: "publisher", tokenType: "string", calls: ["generateToken", "self"] });
  const expires = result.signIn?.expires as number;
  expect(typeof expires).toBe("number");
  expect(expires).toBeGreaterThan(Date.now() + 20159 * 60_000 - 120_000);
  expect(result.self).toMatchObject({ username: "publisher", role: "org_publisher" });
});

it("rejects signIn with a wrong password", () => {
  expect(result.wrongPassword).not.toBe("resolved");
  expect(result.wrongPassword).toMatchObject({ name: "ArcGISTokenRequestError" });
  expect(String(result.wrongPassword?.message)).toContain("Unable to generate token.");
});

it("after a 498 refreshes the token once and succeeds", () => {
  expect(result.refresh).toEqual({
    username: "publisher",
    calls: ["self", "generateToken", "self"],
    refreshed: true,
  });
});
