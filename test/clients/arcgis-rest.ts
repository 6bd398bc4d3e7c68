// Runs the real ArcGIS REST JS client against a running engine and prints what it saw as JSON.
// Started by test/arcgis-client.test.ts in its own Node process, with NODE_EXTRA_CA_CERTS set to the
// engine's certificate (Node reads that variable only at start).
import { ArcGISIdentityManager, request } from "@esri/arcgis-rest-request";
import { forge } from "../helpers/tokens.ts";

const [portal, dataDir, portalId, password] = process.argv.slice(2) as [string, string, string, string];

const calls: string[] = [];
const realFetch = globalThis.fetch;
globalThis.fetch = (input: Parameters<typeof fetch>[0], init?: RequestInit) => {
  calls.push(new URL(input instanceof Request ? input.url : String(input)).pathname.split("/").pop() ?? "");
  return realFetch(input, init);
};

const describe = (err: unknown) => ({
  name: (err as Error).name,
  code: (err as { code?: unknown }).code,
  message: (err as Error).message,
});

const out: Record<string, unknown> = {};

const session = await ArcGISIdentityManager.signIn({ username: "publisher", password, portal });
out.signIn = {
  username: session.username,
  tokenType: typeof session.token,
  expires: session.tokenExpires instanceof Date ? session.tokenExpires.getTime() : String(session.tokenExpires),
  calls: calls.splice(0),
};
out.self = await request(`${portal}/community/self`, { authentication: session });

try {
  await ArcGISIdentityManager.signIn({ username: "publisher", password: "not-the-password", portal });
  out.wrongPassword = "resolved";
} catch (err) {
  out.wrongPassword = describe(err);
}
calls.splice(0);

// A token the server has let expire while the client still believes it valid.
const expired = await forge(dataDir, {
  username: "publisher",
  portalId,
  cli: "referer",
  bnd: "@esri/arcgis-rest-js",
  exp: Math.floor(Date.now() / 1000) - 1,
});
const stale = new ArcGISIdentityManager({
  username: "publisher",
  password,
  portal,
  token: expired,
  tokenExpires: new Date(Date.now() + 3600_000),
});
try {
  const me = (await request(`${portal}/community/self`, { authentication: stale })) as { username?: string };
  out.refresh = { username: me.username, calls: calls.splice(0), refreshed: stale.token !== expired };
} catch (err) {
  out.refresh = { error: describe(err), calls: calls.splice(0) };
}

process.stdout.write(`${JSON.stringify(out)}\n`);
