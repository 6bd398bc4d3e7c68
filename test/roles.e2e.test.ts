// Custom-role administration through the local engine over HTTPS: the real ArcGIS client for the whole
// life of a role, plain HTTPS for refusals, validation and concurrency.
import { ROLE_PRIVILEGES } from "#shared/auth/privileges.ts";
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { arcgisSteps } from "./helpers/arcgis.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";
import { forge } from "./helpers/tokens.ts";

let engine: RunningEngine;
let portalId: string;
const tokens: Record<string, string> = {};
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const roles = () => `${rest()}/portals/self`;
const FORBIDDEN = {
  error: {
    code: 403,
    messageCode: "GWM_0003",
    message: "You do not have permissions to access this resource or perform this operation.",
    details: [],
  },
};

function admin(env: Record<string, string>, ...args: string[]): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
}

async function signIn(username: string, password: string): Promise<string> {
  const res = await call(`${rest()}/generateToken`, { ca: engine.ca, body: form({ f: "json", username, password }) });
  const token = res.json<{ token?: string }>().token;
  if (!token) throw new Error(res.text);
  return token;
}

function post(path: string, who: string | undefined, fields: Record<string, string> = {}) {
  return call(`${roles()}${path}`, {
    ca: engine.ca,
    body: form({ f: "json", ...fields, ...(who ? { token: tokens[who] ?? who } : {}) }),
  }).then((r) => r.json());
}

async function newRole(name: string, description = ""): Promise<string> {
  const res = await post("/createRole", "admin", { name, description });
  if (typeof res.id !== "string") throw new Error(JSON.stringify(res));
  return res.id;
}

beforeAll(async () => {
  engine = await startEngine();
  portalId = (await call(`${rest()}/portals/self?f=json`, { ca: engine.ca })).json<{ id: string }>().id;
  for (const name of ["admin2", "admin3"]) {
    admin(
      { MAPGATE_USER_PASSWORD: `${name}-Pass-1234` },
      "add-user",
      "--portal",
      portalId,
      "--username",
      name,
      "--role",
      "org_admin",
    );
  }
  admin(
    { MAPGATE_USER_PASSWORD: "roleuser-Pass-1234" },
    "add-user",
    "--portal",
    portalId,
    "--username",
    "roleuser",
    "--role",
    "org_user",
  );
  const other = JSON.parse(
    admin({ MAPGATE_ADMIN_PASSWORD: "other-admin-pass" }, "bootstrap", "--name", "Other", "--admin", "other-admin"),
  ) as {
    portal: { portalId: string };
  };
  expect(other.portal.portalId).not.toBe(portalId);
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.admin2 = await signIn("admin2", "admin2-Pass-1234");
  tokens.admin3 = await signIn("admin3", "admin3-Pass-1234");
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
  tokens.roleuser = await signIn("roleuser", "roleuser-Pass-1234");
  tokens.other = await signIn("other-admin", "other-admin-pass");
});
afterAll(async () => {
  await engine?.stop();
});

describe("with the ArcGIS client", () => {
  it("creates, lists, renames, redescribes, reads, sets privileges on and deletes a role", async () => {
    const base = `${rest()}/portals/self`;
    const results = (await arcgisSteps(engine, "admin", PASSWORDS.admin, [
      { url: `${base}/createRole`, params: { name: "Field Crew", description: "Works outside" } },
      { url: `${base}/roles`, params: { start: 1, num: 100 }, httpMethod: "GET" },
      { url: `${base}/roles/{roleId}/update`, params: { name: "Field Crews" } },
      { url: `${base}/roles/{roleId}/update`, params: { description: "Edits in the field" } },
      { url: `${base}/roles/{roleId}`, httpMethod: "GET" },
      {
        url: `${base}/roles/{roleId}/setPrivileges`,
        // features:user:edit, a standard ArcGIS privilege no operation here asks for, is accepted and kept.
        params: {
          privileges: {
            privileges: ["portal:user:createItem", "portal:publisher:publishFeatures", "features:user:edit"],
          },
        },
      },
      { url: `${base}/roles/{roleId}/privileges`, httpMethod: "GET" },
      { url: `${base}/roles/{roleId}`, params: { f: "pjson" }, httpMethod: "GET", rawText: true },
      { url: `${base}/roles/{roleId}`, params: { f: "html" }, httpMethod: "GET", rawText: true },
      { url: `${base}/roles/{roleId}/update`, params: { f: "html", description: "<b>bold</b>" }, rawText: true },
      { url: `${base}/roles/{roleId}/delete` },
      { url: `${base}/roles/{roleId}`, httpMethod: "GET" },
    ])) as Record<string, unknown>[];
    const [created, list, rename, redescribe, got, setPriv, privs, pjson, html, htmlUpdate, deleted, gone] = results;
    expect(created).toMatchObject({ success: true, id: expect.stringMatching(/^[A-Za-z0-9]{16}$/) });
    const id = created?.id as string;
    expect(list).toMatchObject({ total: 1, start: 1, num: 100, nextStart: -1 });
    expect((list?.roles as Record<string, unknown>[])[0]).toMatchObject({
      id,
      name: "Field Crew",
      description: "Works outside",
    });
    expect(rename).toEqual({ success: true });
    expect(redescribe).toEqual({ success: true });
    expect(got).toEqual({
      id,
      name: "Field Crews",
      description: "Edits in the field",
      created: expect.any(Number),
      modified: expect.any(Number),
    });
    expect(got?.modified as number).toBeGreaterThan(got?.created as number);
    expect(setPriv).toEqual({ success: true });
    expect(privs).toEqual({
      privileges: ["portal:user:createItem", "portal:publisher:publishFeatures", "features:user:edit"],
    });
    expect(pjson).toMatchObject({ contentType: "text/plain; charset=utf-8" });
    expect(JSON.parse((pjson as { text: string }).text)).toMatchObject({ id, name: "Field Crews" });
    expect((pjson as { text: string }).text).toContain('\n  "name": "Field Crews"');
    expect((html as { text: string }).text).toContain("<tr><th>name</th><td>Field Crews</td></tr>");
    expect((htmlUpdate as { text: string }).text).toContain(
      '<p role="status">The role “Field Crews”: its description changed.</p>',
    );
    expect(deleted).toEqual({ success: true, roleId: id });
    expect(gone).toMatchObject({ error: { name: "ArcGISRequestError", code: "CONT_0001" } });
  });
});

describe("who may change roles", () => {
  it("refuses publishers, plain users, custom-role administrators and other portals' administrators (403)", async () => {
    const id = await newRole("Guarded");
    const powerful = await newRole("Almost Admin");
    await post(`/roles/${powerful}/setPrivileges`, "admin", {
      privileges: JSON.stringify({
        privileges: ["portal:admin:manageRoles", "portal:admin:updateUsers", "portal:admin:viewUsers"],
      }),
    });
    expect(await post("/updateuserrole", "admin", { user: "roleuser", role: powerful })).toEqual({
      success: true,
      username: "roleuser",
    });
    for (const who of ["publisher", "user", "roleuser", "other"]) {
      // Paths name this portal by id, so another portal's administrator addresses it explicitly.
      const explicit = (path: string, fields: Record<string, string> = {}) =>
        call(`${rest()}/portals/${portalId}${path}`, {
          ca: engine.ca,
          body: form({ f: "json", token: tokens[who] ?? "", ...fields }),
        }).then((r) => r.json());
      expect(await explicit("/createRole", { name: `x-${who}` }), who).toEqual(FORBIDDEN);
      expect(await explicit(`/roles/${id}/update`, { name: "Taken over" }), who).toEqual(FORBIDDEN);
      expect(await explicit(`/roles/${id}/setPrivileges`, { privileges: '{"privileges":[]}' }), who).toEqual(FORBIDDEN);
      expect(await explicit(`/roles/${id}/delete`), who).toEqual(FORBIDDEN);
      expect(await explicit("/updateuserrole", { user: "user", role: "org_admin" }), who).toEqual(FORBIDDEN);
    }
    // Another portal's administrator, naming this portal explicitly, and seeing nothing of it.
    const explicit = await call(`${rest()}/portals/${portalId}/roles?f=json&token=${tokens.other}`, { ca: engine.ca });
    expect(explicit.json()).toEqual(FORBIDDEN);
    const ownList = await call(`${rest()}/portals/self/roles?f=json&token=${tokens.other}`, { ca: engine.ca });
    expect(ownList.json()).toMatchObject({ total: 0, roles: [] });
    const byId = await call(`${rest()}/portals/self/roles/${id}?f=json&token=${tokens.other}`, { ca: engine.ca });
    expect(byId.json()).toMatchObject({ error: { code: 400, messageCode: "CONT_0001" } });
    expect((await post(`/roles/${id}`, "admin")).name).toBe("Guarded");
    await post("/updateuserrole", "admin", { user: "roleuser", role: "org_user" });
  });

  it("does not let the sign-in cookie alone change anything (a cross-site form could send it)", async () => {
    const id = await newRole("Cookie Proof");
    const cookie = `vendor_authcookie=${encodeURIComponent(JSON.stringify({ token: tokens.admin }))}`;
    const res = await call(`${roles()}/roles/${id}/update`, {
      ca: engine.ca,
      body: form({ f: "json", name: "Hijacked" }),
      headers: { cookie },
    });
    expect(res.json()).toMatchObject({ error: { code: 403, details: [expect.stringMatching(/CSRF check failed/)] } });
    expect((await post(`/roles/${id}`, "admin")).name).toBe("Cookie Proof");
    // Reads still accept it.
    const read = await call(`${roles()}/roles/${id}?f=json`, { ca: engine.ca, headers: { cookie } });
    expect(read.json()).toMatchObject({ name: "Cookie Proof" });
  });

  it("answers anonymous callers 499 and expired tokens 498", async () => {
    const id = await newRole("Quiet");
    expect(await post(`/roles/${id}/update`, undefined, { name: "Loud" })).toMatchObject({ error: { code: 499 } });
    const expired = await forge(engine.dataDir, {
      username: "admin",
      portalId,
      exp: Math.floor(Date.now() / 1000) - 1,
    });
    expect(await post(`/roles/${id}/update`, expired, { name: "Loud" })).toEqual({
      error: { code: 498, message: "Invalid token.", details: ["Invalid token."] },
    });
  });

  it("answers an unknown, built-in or other portal's role as not existing", async () => {
    const otherRole = (
      await call(`${rest()}/portals/self/createRole`, {
        ca: engine.ca,
        body: form({ f: "json", token: tokens.other ?? "", name: "Theirs" }),
      })
    ).json<{ id: string }>().id;
    for (const id of ["NoSuchRole123456", "org_admin", "org_user", otherRole, "a%2Fb"]) {
      expect(await post(`/roles/${id}/update`, "admin", { name: "Mine" }), id).toMatchObject({
        error: { code: 400, messageCode: "CONT_0001", message: "Item does not exist or is inaccessible." },
      });
    }
  });
});

describe("validation", () => {
  it("answers each bad input with a 400 and details", async () => {
    const id = await newRole("Valid");
    await newRole("Analysts");
    const cases: [string, Record<string, string>, string[]][] = [
      ["/createRole", { name: "x".repeat(129) }, ["'name' may have at most 128 characters."]],
      ["/createRole", { name: "ok", description: "d".repeat(251) }, ["'description' may have at most 250 characters."]],
      ["/createRole", { name: "   " }, ["'name' must not be empty."]],
      ["/createRole", { name: "aNaLySTS" }, ["A role named 'aNaLySTS' already exists in this organization."]],
      [`/roles/${id}/update`, {}, ["Specify 'name', 'description' or both."]],
      [`/roles/${id}/update`, { name: "" }, ["'name' must not be empty."]],
      [`/roles/${id}/update`, { name: " ANALYSTS " }, ["A role named 'ANALYSTS' already exists in this organization."]],
      [
        `/roles/${id}/update`,
        { name: "y".repeat(129), description: "z".repeat(251) },
        ["'name' may have at most 128 characters.", "'description' may have at most 250 characters."],
      ],
      [
        `/roles/${id}/setPrivileges`,
        { privileges: '{"privileges":["portal:admin:launchMissiles"]}' },
        ['Unknown privilege "portal:admin:launchMissiles".', `Valid privileges: ${ROLE_PRIVILEGES.join(", ")}.`],
      ],
      [
        `/roles/${id}/setPrivileges`,
        { privileges: '{"privileges":["portal:user:createItem"' },
        ['\'privileges\' must be JSON: {"privileges":["portal:user:createItem", …]}.'],
      ],
      [
        `/roles/${id}/setPrivileges`,
        { privileges: '["portal:user:createItem"]' },
        ["'privileges' must be an object with a 'privileges' array."],
      ],
    ];
    for (const [path, fields, details] of cases) {
      const res = await post(path, "admin", fields);
      expect(res, `${path} ${JSON.stringify(fields).slice(0, 80)}`).toMatchObject({ error: { code: 400, details } });
    }
    expect((await post(`/roles/${id}`, "admin")).name).toBe("Valid");
  });

  it("keeps an omitted field, clears an empty description, trims names and round-trips unicode exactly", async () => {
    const name = "Géomètres 🗺️ 測量 — ﬁeld";
    const id = await newRole(`  ${name}  `, "first");
    expect(await post(`/roles/${id}`, "admin")).toMatchObject({ name, description: "first" });
    await post(`/roles/${id}/update`, "admin", { description: "" });
    expect(await post(`/roles/${id}`, "admin")).toMatchObject({ name, description: "" });
    await post(`/roles/${id}/update`, "admin", { name: name.toUpperCase() });
    expect(await post(`/roles/${id}`, "admin")).toMatchObject({ name: name.toUpperCase(), description: "" });
    // The old name is free again, and the new one taken in any case.
    const again = await newRole("Analysts Two");
    expect(await post(`/roles/${again}/update`, "admin", { name: name.toLowerCase() })).toMatchObject({
      error: { code: 400 },
    });
  });

  it("pages the list with start and num", async () => {
    const res = await call(`${roles()}/roles?f=json&start=2&num=2&token=${tokens.admin}`, { ca: engine.ca });
    const body = res.json<{ total: number; start: number; num: number; nextStart: number; roles: unknown[] }>();
    expect(body.total).toBeGreaterThanOrEqual(5);
    expect(body).toMatchObject({ start: 2, num: 2, nextStart: 4 });
    expect(body.roles).toHaveLength(2);
    const bad = await call(`${roles()}/roles?f=json&num=101&token=${tokens.admin}`, { ca: engine.ca });
    expect(bad.json()).toMatchObject({
      error: { code: 400, details: ["'num' must be a whole number from 1 to 100."] },
    });
  });
});

describe("concurrency", () => {
  it("50 concurrent updates of one role by three administrators leave one of them, with the latest modified", async () => {
    const id = await newRole("Contended");
    const admins = ["admin", "admin2", "admin3"];
    const requests = Array.from({ length: 50 }, (_, i) => ({ name: `Contended ${i}`, description: `by request ${i}` }));
    const answers = await Promise.all(requests.map((fields, i) => post(`/roles/${id}/update`, admins[i % 3], fields)));
    for (const a of answers) {
      if (!a.success) expect(a).toMatchObject({ error: { code: 409 } });
    }
    expect(answers.filter((a) => a.success).length).toBeGreaterThan(0);
    const final = await post(`/roles/${id}`, "admin");
    const i = requests.findIndex((r) => r.name === final.name);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(final.description).toBe(requests[i]?.description);
    // modified is the newest any update wrote: nothing after it, and later than creation.
    expect(final.modified as number).toBeGreaterThan(final.created as number);
    expect(final.modified as number).toBeLessThanOrEqual(Date.now());
    // No reservation was orphaned: every other name tried is free again.
    const probe = await post("/createRole", "admin", { name: requests[(i + 1) % 50]?.name ?? "" });
    expect(probe).toMatchObject({ success: true });
  });

  it("20 concurrent renames of different roles to one name: exactly one wins", async () => {
    const ids = await Promise.all(Array.from({ length: 20 }, (_, i) => newRole(`Racer ${i}`)));
    const answers = await Promise.all(
      ids.map((id, i) => post(`/roles/${id}/update`, ["admin", "admin2", "admin3"][i % 3], { name: "Winner" })),
    );
    expect(answers.filter((a) => a.success)).toHaveLength(1);
    for (const a of answers.filter((x) => !x.success)) {
      expect(a).toEqual({
        error: {
          code: 400,
          message: "Unable to update role.",
          details: ["A role named 'Winner' already exists in this organization."],
        },
      });
    }
    const names = await Promise.all(ids.map((id) => post(`/roles/${id}`, "admin").then((r) => r.name)));
    expect(names.filter((n) => n === "Winner")).toHaveLength(1);
    // The losers kept their names, and their names are still reserved.
    const loser = names.find((n) => n !== "Winner");
    expect(await post("/createRole", "admin", { name: String(loser) })).toMatchObject({ error: { code: 400 } });
  });
});

describe("privileges take effect", () => {
  it("a privilege change is visible to the role's users on their next request", async () => {
    const id = await newRole("Publishers Lite");
    await post(`/roles/${id}/setPrivileges`, "admin", {
      privileges: JSON.stringify({ privileges: ["portal:user:createItem", "portal:publisher:publishScenes"] }),
    });
    await post("/updateuserrole", "admin", { user: "roleuser", role: id });
    const me = () =>
      call(`${rest()}/community/self?f=json&token=${tokens.roleuser}`, { ca: engine.ca }).then((r) => r.json());
    expect(await me()).toMatchObject({
      role: "org_publisher",
      roleId: id,
      privileges: ["portal:user:createItem", "portal:publisher:publishScenes"],
    });
    await post(`/roles/${id}/setPrivileges`, "admin", {
      privileges: JSON.stringify({ privileges: ["portal:user:createItem"] }),
    });
    expect(await me()).toMatchObject({ role: "org_user", roleId: id, privileges: ["portal:user:createItem"] });
    // A held role cannot be deleted; once nobody holds it, it can.
    expect(await post(`/roles/${id}/delete`, "admin")).toMatchObject({
      error: { code: 400, details: ["1 user(s) hold this role. Give them another role first (updateuserrole)."] },
    });
    await post("/updateuserrole", "admin", { user: "roleuser", role: "org_user" });
    expect(await post(`/roles/${id}/delete`, "admin")).toEqual({ success: true, roleId: id });
  });

  it("offers the organization's users and roles to choose from, and says what it did", async () => {
    const id = await newRole("Chosen Crew");
    const choices = (await call(`${roles()}/updateuserrole?f=html&token=${tokens.admin}`, { ca: engine.ca })).text;
    expect(choices).toContain('<option value="roleuser">roleuser (now org_user)</option>');
    expect(choices).not.toContain('<option value="admin">');
    expect(choices).toContain(`<option>org_admin</option><option>org_publisher</option><option>org_user</option>`);
    expect(choices).toContain(`<option value="${id}">Chosen Crew (${id})</option>`);
    const done = await call(`${roles()}/updateuserrole`, {
      ca: engine.ca,
      body: form({ f: "html", user: "roleuser", role: "org_user", token: tokens.admin as string }),
    });
    expect(done.text).toContain('<p role="status">roleuser now has the role org_user.</p>');
    expect(done.text).toContain('href="/portal/sharing/rest/portals/self/users?f=html">Users</a>');
  });

  it("refuses an administrator changing their own role", async () => {
    expect(await post("/updateuserrole", "admin", { user: "admin", role: "org_user" })).toMatchObject({
      error: { code: 400, details: ["Administrators cannot change their own role."] },
    });
  });
});
