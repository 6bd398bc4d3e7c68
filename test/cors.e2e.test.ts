// Pages on other origins (an app at http://127.0.0.1:<its port>, the portal at the engine), through the real
// local engine: CORS by the organization's allowedOrigins (preflights included, answered by the route's own
// function or by $default's), the sign-in cookie never authenticating another origin's request, and the
// signed-in user's record in portals/self as the ArcGIS Maps SDK reads it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEMO_LAYERS_FOLDER } from "#infra/admin/demo.ts";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization } from "./helpers/admin.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { type Answer, call, form, formOf, setCookies } from "./helpers/http.ts";

let engine: RunningEngine;
let tokens: { admin: string; user: string };
const APP = "http://127.0.0.1:3000";
const OTHER = "http://127.0.0.1:4000";
const rest = () => `${engine.ready.https}/portal/sharing/rest`;

async function generateToken(username: string, password: string): Promise<string> {
  const res = await call(`${rest()}/generateToken`, { ca: engine.ca, body: form({ f: "json", username, password }) });
  const token = res.json<{ token?: string }>().token;
  if (!token) throw new Error(res.text);
  return token;
}

const get = (url: string, headers: Record<string, string> = {}) => call(url, { ca: engine.ca, headers });
const preflight = (url: string, origin: string, headers = "x-esri-authorization,content-type") =>
  call(url, {
    ca: engine.ca,
    method: "OPTIONS",
    headers: { origin, "access-control-request-method": "POST", "access-control-request-headers": headers },
  });
const setAllowedOrigins = (allowedOrigins: string, token = tokens.admin) =>
  call(`${rest()}/portals/self/update`, { ca: engine.ca, body: form({ f: "json", token, allowedOrigins }) });

/** What the SDK calls first, cross-origin: the portal, its info and the server's. */
const sdkUrls = () => [
  `${rest()}/portals/self?f=json&culture=en`,
  `${rest()}/info?f=json`,
  `${engine.ready.https}/arcgis/rest/info?f=json`,
  `${engine.ready.https}/arcgis/rest/services?f=json`,
];

function expectEchoed(res: Answer, origin: string) {
  expect(res.headers["access-control-allow-origin"]).toBe(origin);
  expect(res.headers["access-control-allow-credentials"]).toBe("true");
  expect(res.headers.vary).toContain("Origin");
}

function expectRefused(res: Answer) {
  expect(res.headers["access-control-allow-origin"]).toBeUndefined();
  expect(res.headers["access-control-allow-credentials"]).toBeUndefined();
  expect(res.headers.vary).toContain("Origin");
}

/** Binary answers (content): a feature query's PBF, an image tile and an uploaded item's file. */
let contentUrls: { pbf: string; tile: string; data: string };
/** The user's uploaded file: a private item. */
let privateItem: string;

/** A file uploaded as an item of the user's, as ArcGIS REST JS sends one (multipart/form-data). */
async function uploadedItem(token: string): Promise<string> {
  const data = new FormData();
  data.append("f", "json");
  data.append("token", token);
  data.append("file", new Blob(["name,x,y\nA,1,2\n"]), "sites.csv");
  const request = new Request("https://mapgate.invalid/", { method: "POST", body: data });
  const res = await call(`${rest()}/content/users/user/addItem`, {
    ca: engine.ca,
    body: Buffer.from(await request.arrayBuffer()),
    headers: { "content-type": request.headers.get("content-type") ?? "" },
  });
  const id = res.json<{ id?: string }>().id;
  if (!id) throw new Error(res.text);
  return id;
}

beforeAll(async () => {
  engine = await startEngine();
  tokens = {
    admin: await generateToken("admin", PASSWORDS.admin),
    user: await generateToken("user", PASSWORDS.user),
  };
  const world = demoOrganization(engine.dataDir).worldStore;
  const places = `places_${stableItemId(world, "/world.gpkg/places").slice(0, 6)}`;
  const services = `${engine.ready.https}/arcgis/rest/services`;
  contentUrls = {
    pbf: `${services}/${DEMO_LAYERS_FOLDER}/${places}/FeatureServer/0/query?f=pbf&where=1%3D1&resultRecordCount=2`,
    tile: `${services}/Imagery/Ortho_2024/ImageServer/tile/0/0/0?token=${tokens.user}`,
    data: `${rest()}/content/items/${(privateItem = await uploadedItem(tokens.user))}/data?token=${tokens.user}`,
  };
}, 60_000);

afterAll(async () => {
  await engine?.stop();
});

describe("CORS by the organization's allowed origins", () => {
  it("answers preflights on every route the SDK calls, in the route's own function or $default's", async () => {
    const paths = [
      "/portal/sharing/rest/portals/self",
      "/portal/sharing/rest/info",
      "/arcgis/rest/info",
      "/arcgis/rest/services",
      "/portal/sharing/rest/generateToken",
      "/portal/sharing/rest/community/self",
      "/portal/sharing/rest/content/users/user/addItem",
      "/portal/sharing/rest/oauth2/token",
      "/portal/sharing/oauth2/token",
      "/portal/sharing/rest/oauth2/revokeToken",
      // No route serves it: API Gateway gives it to $default (not-found), as the local engine does.
      "/portal/sharing/rest/nothing/here",
    ];
    for (const path of paths) {
      const res = await preflight(`${engine.ready.https}${path}?f=json`, APP);
      expect(res.status, path).toBe(204);
      expect(res.body.length).toBe(0);
      expectEchoed(res, APP);
      expect(res.headers["access-control-allow-methods"]).toBe("GET, POST, OPTIONS");
      expect(res.headers["access-control-allow-headers"]).toBe("x-esri-authorization, content-type");
      expect(res.headers["access-control-max-age"]).toBe("7200");
      expect(res.headers.vary).toBe("Origin, Access-Control-Request-Method, Access-Control-Request-Headers");
    }
    // Which function answered: the route's own (its ANY route takes OPTIONS), $default's for no route. A function's
    // request line reaches the engine's log a moment after its answer (the last one may still be on its way).
    const answered = async (operation: string, path: string) => {
      const seen = () =>
        engine.lines.some(
          (l) => l.includes('"method":"OPTIONS"') && l.includes(`"operation":"${operation}"`) && l.includes(path),
        );
      for (let waited = 0; !seen() && waited < 5000; waited += 50) await new Promise((r) => setTimeout(r, 50));
      return seen();
    };
    expect(await answered("Portal", '"path":"/portal/sharing/rest/portals/self"')).toBe(true);
    expect(await answered("Not Found", '"path":"/portal/sharing/rest/nothing/here"')).toBe(true);
    // A header that is no header name is not echoed: the SDK's usual ones are allowed instead.
    const odd = await preflight(`${rest()}/portals/self`, APP, "x-a\tb");
    expect(odd.headers["access-control-allow-headers"]).toBe(
      "Authorization, X-Esri-Authorization, Content-Type, X-Requested-With",
    );
    // OPTIONS without Origin is no preflight: what the path takes, no CORS.
    const plain = await call(`${rest()}/portals/self`, { ca: engine.ca, method: "OPTIONS" });
    expect(plain.status).toBe(204);
    expect(plain.headers.allow).toBe("GET, POST, OPTIONS");
    expect(plain.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("echoes every origin while the list is empty, on answers and errors alike", async () => {
    for (const url of sdkUrls()) {
      const res = await get(url, { origin: APP });
      expect(res.status, url).toBe(200);
      expect(res.json(), url).not.toHaveProperty("error");
      expectEchoed(res, APP);
    }
    expect((await get(`${rest()}/portals/self?f=json`)).json()).toMatchObject({ allowedOrigins: [] });
    // The page reads why it was refused: a bad token's 498, an anonymous 499, a bad format's 400.
    const bad = await get(`${rest()}/portals/self?f=json&token=not.a.token`, { origin: APP });
    expect(bad.json()).toMatchObject({ error: { code: 498 } });
    expectEchoed(bad, APP);
    const anonymous = await get(`${rest()}/community/self?f=json`, { origin: APP });
    expect(anonymous.json()).toMatchObject({ error: { code: 499 } });
    expectEchoed(anonymous, APP);
    const format = await get(`${rest()}/portals/self?f=nonsense`, { origin: APP });
    expect(format.json()).toMatchObject({ error: { code: 400 } });
    expectEchoed(format, APP);
    // `null` (sandboxed frames, files) is never echoed.
    expectRefused(await get(`${rest()}/portals/self?f=json`, { origin: "null" }));
    // A service answers `*` to a tool (no Origin), the echoed origin to a page, Vary: Origin to both.
    const tool = await get(`${engine.ready.https}/arcgis/rest/services?f=json`);
    expect(tool.headers["access-control-allow-origin"]).toBe("*");
    expect(tool.headers.vary).toContain("Origin");
    // A service's content too; an item's file (portal content, not a service) carries none without Origin.
    for (const [what, url] of Object.entries(contentUrls)) {
      const res = await get(url);
      expect(res.status, what).toBe(200);
      expect(res.headers["access-control-allow-origin"], what).toBe(what === "data" ? undefined : "*");
      expect(res.headers["access-control-allow-credentials"], what).toBeUndefined();
      expect(res.headers.vary, what).toContain("Origin");
      expectEchoed(await get(url, { origin: APP }), APP);
    }
    // Other answers carry no CORS header without Origin, but still vary on it.
    const noOrigin = await get(`${rest()}/portals/self?f=json`);
    expect(noOrigin.headers["access-control-allow-origin"]).toBeUndefined();
    expect(noOrigin.headers.vary).toContain("Origin");
  });

  it("lets an administrator list origins (checked as origins), then answers only them", async () => {
    expect((await setAllowedOrigins(APP, tokens.user)).json()).toMatchObject({ error: { code: 403 } });
    for (const bad of ["http://127.0.0.1:3000/app", "127.0.0.1:3000", "ftp://a.example", "https://a.example?x=1"]) {
      const refused = (await setAllowedOrigins(bad)).json<{ error?: { code: number; details: string[] } }>();
      expect(refused.error?.code, bad).toBe(400);
      expect(refused.error?.details.join(" "), bad).toContain("is not an origin");
    }
    // Over GET the operation shows its form, never changes anything.
    const viaGet = await get(`${rest()}/portals/self/update?f=json&allowedOrigins=x&token=${tokens.admin}`);
    expect(viaGet.json()).toMatchObject({ error: { code: 405 } });

    const set = await setAllowedOrigins(` ${APP}/ , HTTPS://Maps.Example.TEST:443 `);
    expect(set.json()).toEqual({
      success: true,
      id: expect.any(String),
      allowedOrigins: [APP, "https://maps.example.test"],
    });
    try {
      expect((await get(`${rest()}/portals/self?f=json`)).json()).toMatchObject({
        allowedOrigins: [APP, "https://maps.example.test"],
      });
      for (const url of sdkUrls()) {
        expectEchoed(await get(url, { origin: APP }), APP);
        const other = await get(url, { origin: OTHER });
        expect(other.status).toBe(200);
        expectRefused(other);
      }
      expectEchoed(await preflight(`${rest()}/portals/self`, APP), APP);
      const refused = await preflight(`${rest()}/portals/self`, OTHER);
      expect(refused.status).toBe(204);
      expectRefused(refused);
      expect(refused.headers["access-control-allow-methods"]).toBeUndefined();
      // A service answers the listed origins only too (as ArcGIS Server does with the list set).
      expectRefused(await get(`${engine.ready.https}/arcgis/rest/services?f=json`, { origin: OTHER }));
      // So do binary answers: a PBF page, a tile, an item's file, decided where every other answer's CORS is.
      for (const [what, url] of Object.entries(contentUrls)) {
        const listed = await get(url, { origin: APP });
        expect(listed.status, what).toBe(200);
        expect(listed.headers["content-type"], what).not.toContain("json");
        expectEchoed(listed, APP);
        const other = await get(url, { origin: OTHER });
        expect(other.status, what).toBe(200);
        expectRefused(other);
      }
      // mapgate's own pages are always its own: the engine's other listener is another origin, not listed.
      expectEchoed(await get(`${rest()}/portals/self?f=json`, { origin: engine.ready.https }), engine.ready.https);
      expectRefused(await get(`${rest()}/portals/self?f=json`, { origin: engine.ready.http }));
    } finally {
      expect((await setAllowedOrigins("")).json()).toMatchObject({ success: true, allowedOrigins: [] });
    }
    expectEchoed(await get(`${rest()}/portals/self?f=json`, { origin: OTHER }), OTHER);
  });
});

/** A browser's sign-in cookie for user, from the sign-in page's form. */
async function signedInCookie(): Promise<string> {
  const url = `${rest()}/oauth2/signin`;
  const { cookie, csrf } = await formOf(url, engine.ca);
  const res = await call(url, {
    ca: engine.ca,
    body: form({ username: "user", password: PASSWORDS.user, csrf }),
    headers: { cookie },
  });
  const auth = setCookies(res).find((c) => c.startsWith("vendor_authcookie="));
  if (!auth) throw new Error(`not signed in: ${res.status} ${res.text.slice(0, 300)}`);
  return auth.split(";")[0] as string;
}

describe("the sign-in cookie and other origins", () => {
  it("never authenticates another origin's request by the cookie; its token works", async () => {
    const cookie = await signedInCookie();
    const self = `${rest()}/community/self?f=json`;
    // Our own pages (no Origin on a navigation; our own origin on a fetch): the cookie signs the user in.
    expect((await get(self, { cookie })).json()).toMatchObject({ username: "user" });
    expect((await get(self, { cookie, origin: engine.ready.https })).json()).toMatchObject({ username: "user" });
    // Another origin: a page elsewhere, another port of the same host (the engine's HTTP listener: the browser
    // sends a SameSite=Lax cookie there too). Anonymous, told a token is needed; allowed to read that.
    for (const origin of [APP, engine.ready.http, "https://sibling.127.0.0.1.nip.io"]) {
      const res = await get(self, { cookie, origin });
      expect(res.json(), origin).toMatchObject({ error: { code: 499 } });
      expectEchoed(res, origin);
      const portal = (await get(`${rest()}/portals/self?f=json`, { cookie, origin })).json();
      expect(portal, origin).not.toHaveProperty("user");
      // A POST with the cookie and no token is not taken for a failed form of ours: it needs a token.
      const post = await call(`${rest()}/portals/self/createRole`, {
        ca: engine.ca,
        body: form({ f: "json", name: "From elsewhere" }),
        headers: { cookie, origin },
      });
      expect(post.json(), origin).toMatchObject({ error: { code: 499 } });
    }
    // With its token (any of the three ways), the same page is the user.
    const token = tokens.user;
    for (const [url, headers] of [
      [`${self}&token=${token}`, {}],
      [self, { "x-esri-authorization": `Bearer ${token}` }],
      [self, { authorization: `Bearer ${token}` }],
    ] as const) {
      const res = await get(url, { cookie, origin: APP, ...headers });
      expect(res.json()).toMatchObject({ username: "user" });
      expectEchoed(res, APP);
    }
  });
});

describe("the sign-in cookie and other sites' subresources", () => {
  it("does not sign in an image or script another site embeds, which sends the cookie without Origin", async () => {
    const cookie = await signedInCookie();
    const self = `${rest()}/community/self?f=json`;
    const data = `${rest()}/content/items/${privateItem}/data`;
    const fetchMode = (site: string, mode: string) => ({ cookie, "sec-fetch-site": site, "sec-fetch-mode": mode });
    // A sibling subdomain's or another port's <img>, <script> or no-cors fetch (same-site), or another site's
    // (cross-site): anonymous. The private file neither loads nor tells that it exists.
    for (const site of ["same-site", "cross-site"])
      for (const mode of ["no-cors", "cors", "same-origin", "websocket"]) {
        expect((await get(self, fetchMode(site, mode))).json(), `${site} ${mode}`).toMatchObject({
          error: { code: 499 },
        });
        const file = await get(data, fetchMode(site, mode));
        // An error page (HTML: no f), not the file.
        expect(file.headers["content-type"], `${site} ${mode}`).toContain("text/html");
        expect(file.text, `${site} ${mode}`).not.toContain("A,1,2");
      }
    // mapgate's own pages' reads, navigations from anywhere (a link, the HTML pages and their forms), a typed URL,
    // and clients that say nothing: the cookie signs the user in.
    for (const headers of [
      fetchMode("same-origin", "cors"),
      fetchMode("same-origin", "no-cors"),
      fetchMode("same-site", "navigate"),
      fetchMode("cross-site", "navigate"),
      fetchMode("none", "navigate"),
      { cookie },
    ]) {
      expect((await get(self, headers)).json(), JSON.stringify(headers)).toMatchObject({ username: "user" });
      const file = await get(data, headers);
      expect(file.status).toBe(200);
      expect(file.text, JSON.stringify(headers)).toBe("name,x,y\nA,1,2\n");
    }
  });
});

describe("the user in portals/self", () => {
  it("answers the caller's own record, with an id the content and user routes take", async () => {
    const self = (await get(`${rest()}/portals/self?f=json&token=${tokens.user}`)).json<{
      id: string;
      user: Record<string, unknown>;
    }>();
    expect(self.user).toMatchObject({
      id: "user",
      username: "user",
      fullName: expect.any(String),
      email: expect.any(String),
      orgId: self.id,
      role: "org_user",
      privileges: expect.arrayContaining(["portal:user:createItem"]),
      level: "2",
      userType: "arcgisonly",
      userLicenseTypeId: "creatorUT",
      access: "org",
      culture: "en",
      units: "metric",
      thumbnail: null,
      created: expect.any(Number),
      modified: expect.any(Number),
    });
    // As on ArcGIS, portals/self does not list the user's groups; community/self does.
    expect(self.user).not.toHaveProperty("groups");
    expect(self.user).not.toHaveProperty("passwordHash");
    const community = (await get(`${rest()}/community/self?f=json&token=${tokens.user}`)).json();
    expect(community).toMatchObject({ id: "user", username: "user", groups: expect.any(Array) });
    // The SDK builds `content/users/<id>` and `community/users/<id>` from the id.
    const id = String(self.user.id);
    const content = (await get(`${rest()}/content/users/${id}?f=json&token=${tokens.user}`)).json();
    expect(content).toMatchObject({ username: "user", items: expect.any(Array) });
    const profile = (await get(`${rest()}/community/users/${id}?f=json&token=${tokens.user}`)).json();
    expect(profile).toMatchObject({ username: "user", email: expect.any(String) });
    // Another member's record: the public profile only (no email, no privileges).
    const other = (await get(`${rest()}/community/users/admin?f=json&token=${tokens.user}`)).json();
    expect(other).toMatchObject({ id: "admin", username: "admin" });
    expect(other).not.toHaveProperty("email");
    expect(other).not.toHaveProperty("privileges");
    // Anonymous: no user.
    expect((await get(`${rest()}/portals/self?f=json`)).json()).not.toHaveProperty("user");
  });
});
