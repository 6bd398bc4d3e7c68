// People on the REST wire, against the local engine: community/users/<u>/update (the user themselves and their
// administrator may; anyone else is refused; a password change needs the current one and ends every earlier token),
// an administrator's createUser, disable/enable, resetPassword and delete (refused while the user owns content),
// and every bad input answered with a 400 naming it.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form, jsonCalls, signIn } from "./helpers/http.ts";

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
const tokens: Record<string, string> = {};
const { getJson, postJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${REST}${path}`;
const community = (path: string) => https(`/community/${path}`);

beforeAll(async () => {
  engine = await startEngine();
  for (const who of ["admin", "publisher", "user"] as const) {
    tokens[who] = await signIn(https(""), engine.ca, who, PASSWORDS[who]);
  }
}, 120_000);

afterAll(() => engine?.stop());

const token = (who: string) => tokens[who] ?? "";
/** The password createUser generated for the user it added. */
let newcomerPassword = "";

describe("community/users/<u>/update", () => {
  it("the user changes their own full name and description, and reads them back", async () => {
    expect(
      await postJson(community("users/user/update"), token("user"), {
        fullName: " User Person ",
        description: "Maps rivers.\nAnd lakes.",
      }),
    ).toEqual({ success: true, username: "user" });
    expect(await getJson(community("users/user"), token("user"))).toMatchObject({
      username: "user",
      fullName: "User Person",
      description: "Maps rivers.\nAnd lakes.",
    });
    // An empty description clears it; fields not sent stay as they are.
    await postJson(community("users/user/update"), token("user"), { description: "" });
    expect(await getJson(community("users/user"), token("user"))).toMatchObject({
      fullName: "User Person",
      description: null,
    });
  });

  it("an administrator changes a member's profile, but not their password", async () => {
    expect(await postJson(community("users/publisher/update"), token("admin"), { fullName: "Pub" })).toEqual({
      success: true,
      username: "publisher",
    });
    expect(
      await postJson(community("users/publisher/update"), token("admin"), {
        password: "another-Pass-1234",
        oldPassword: PASSWORDS.publisher,
      }),
    ).toMatchObject({
      error: {
        code: 400,
        message: "Unable to update user.",
        details: ["Only the user changes their password here; an administrator resets it (resetPassword)."],
      },
    });
  });

  it("refuses anyone else: another member (403), no token (499), a user of no organization here (400)", async () => {
    expect(await postJson(community("users/publisher/update"), token("user"), { fullName: "x" })).toMatchObject({
      error: { code: 403 },
    });
    const anonymous = await call(community("users/publisher/update"), {
      ca: engine.ca,
      body: form({ f: "json", fullName: "x" }),
    });
    expect(anonymous.json()).toMatchObject({ error: { code: 499 } });
    expect(await postJson(community("users/nobody/update"), token("admin"), { fullName: "x" })).toMatchObject({
      error: { code: 400, details: ["User 'nobody' does not exist or is inaccessible."] },
    });
  });

  it("answers each bad input with a 400 naming it", async () => {
    const cases: [Record<string, string>, string[]][] = [
      [{ fullName: "  " }, ["'fullName' must not be empty."]],
      [{ fullName: "x".repeat(251) }, ["'fullName' may have at most 250 characters."]],
      [{ fullName: "a\u0007b" }, ["'fullName' may not contain control characters."]],
      [{ description: "x".repeat(32_001) }, ["'description' may have at most 32000 characters."]],
      [{ password: "short", oldPassword: PASSWORDS.user }, ["'password' must have between 8 and 256 characters."]],
      [
        { password: "user" + "x".repeat(4) },
        ["'oldPassword' (the current password) is required to change the password."],
      ],
      [{ oldPassword: PASSWORDS.user }, ["'password' (the new password) is required with 'oldPassword'."]],
      [{ password: "new-Pass-9876", oldPassword: "wrong-password" }, ["The current password is not correct."]],
    ];
    for (const [fields, details] of cases) {
      expect(await postJson(community("users/user/update"), token("user"), fields), JSON.stringify(fields)).toEqual({
        error: { code: 400, message: "Unable to update user.", details },
      });
    }
    // A password in the query string is refused (URLs land in logs).
    const inQuery = await call(`${community("users/user/update")}?password=new-Pass-9876`, {
      ca: engine.ca,
      body: form({ f: "json", token: token("user"), oldPassword: PASSWORDS.user }),
    });
    expect(inQuery.json()).toMatchObject({ error: { code: 400 } });
    // GET is refused: the operation changes state.
    const get = await call(`${community("users/user/update")}?f=json&token=${token("user")}&fullName=x`, {
      ca: engine.ca,
    });
    expect(get.json()).toMatchObject({ error: { code: 405 } });
  });

  it("changes the user's own password given the current one: the new one signs in, every earlier token ends", async () => {
    const before = await signIn(https(""), engine.ca, "user", PASSWORDS.user);
    expect(
      await postJson(community("users/user/update"), before, {
        oldPassword: PASSWORDS.user,
        password: "user-New-Pass-5678",
      }),
    ).toEqual({ success: true, username: "user", passwordChanged: true });
    expect(await getJson(https("/community/self"), before)).toMatchObject({ error: { code: 498 } });
    const old = await call(https("/generateToken"), {
      ca: engine.ca,
      body: form({ f: "json", username: "user", password: PASSWORDS.user }),
    });
    expect(old.json()).toMatchObject({ error: { code: 400, details: ["Invalid username or password."] } });
    tokens.user = await signIn(https(""), engine.ca, "user", "user-New-Pass-5678");
    expect(await getJson(https("/community/self"), token("user"))).toMatchObject({ username: "user" });
  });
});

describe("an administrator's people operations", () => {
  it("adds a user with a generated password, which signs in", async () => {
    const added = (await postJson(community("createUser"), token("admin"), {
      username: "newcomer",
      fullName: "New Comer",
      email: "new@example.com",
      role: "org_publisher",
    })) as { success: boolean; username: string; role: string; password: string };
    expect(added).toEqual({
      success: true,
      username: "newcomer",
      role: "org_publisher",
      password: expect.stringMatching(/^[A-Za-z0-9]{20}$/),
    });
    newcomerPassword = added.password;
    tokens.newcomer = await signIn(https(""), engine.ca, "newcomer", added.password);
    expect(await getJson(https("/community/self"), token("newcomer"))).toMatchObject({
      username: "newcomer",
      fullName: "New Comer",
      email: "new@example.com",
      role: "org_publisher",
    });
    expect(await postJson(community("createUser"), token("admin"), { username: "newcomer" })).toEqual({
      error: { code: 400, message: "Unable to create user.", details: ["The username 'newcomer' is taken."] },
    });
    expect(
      await postJson(community("createUser"), token("admin"), { username: "bad name", email: "nope", role: "king" }),
    ).toEqual({
      error: {
        code: 400,
        message: "Unable to create user.",
        details: [
          "'username' must be 1–128 letters, digits or _.@-",
          "'email' is not an email address.",
          "'role' must be one of org_admin, org_publisher, org_user (a custom role is given afterwards).",
        ],
      },
    });
    expect(await postJson(community("createUser"), token("publisher"), { username: "x1" })).toMatchObject({
      error: { code: 403 },
    });
    // A password is never answered over plain HTTP.
    const plain = await call(`${engine.ready.http}${REST}/community/createUser`, {
      body: form({ f: "json", token: token("admin"), username: "x2" }),
    });
    expect(plain.json()).toMatchObject({ error: { code: 403, message: "SSL Required" } });
  });

  it("disables a user (their token ends, sign-in is refused) and enables them again", async () => {
    expect(await postJson(community("users/newcomer/disable"), token("admin"))).toEqual({
      success: true,
      username: "newcomer",
    });
    expect(await getJson(https("/community/self"), token("newcomer"))).toMatchObject({ error: { code: 498 } });
    const refused = await call(https("/generateToken"), {
      ca: engine.ca,
      body: form({ f: "json", username: "newcomer", password: "whatever-it-was" }),
    });
    // A wrong password says nothing of the account; the right one is told the account is disabled.
    expect(refused.json()).toMatchObject({ error: { details: ["Invalid username or password."] } });
    const disabled = await call(https("/generateToken"), {
      ca: engine.ca,
      body: form({ f: "json", username: "newcomer", password: newcomerPassword }),
    });
    expect(disabled.json()).toMatchObject({ error: { code: 400, details: ["This account has been disabled."] } });
    expect(await getJson(community("users/newcomer"), token("admin"))).toMatchObject({ disabled: true });
    expect(await postJson(community("users/newcomer/enable"), token("admin"))).toEqual({
      success: true,
      username: "newcomer",
    });
    expect(await postJson(community("users/admin/disable"), token("admin"))).toEqual({
      error: { code: 400, message: "Unable to disable user.", details: ["Administrators cannot disable themselves."] },
    });
    expect(await postJson(community("users/newcomer/disable"), token("publisher"))).toMatchObject({
      error: { code: 403 },
    });
  });

  it("resets a password: a new generated one, shown once, and the old one no longer works", async () => {
    const reset = (await postJson(community("users/newcomer/resetPassword"), token("admin"))) as { password: string };
    expect(reset).toEqual({
      success: true,
      username: "newcomer",
      password: expect.stringMatching(/^[A-Za-z0-9]{20}$/),
    });
    tokens.newcomer = await signIn(https(""), engine.ca, "newcomer", reset.password);
    expect(await getJson(https("/community/self"), token("newcomer"))).toMatchObject({ username: "newcomer" });
  });

  it("refuses to delete a user who owns content, then deletes them once it is gone", async () => {
    const item = await postJson(https("/content/users/newcomer/addItem"), token("newcomer"), {
      type: "Web Mapping Application",
      title: "An app",
      url: "https://example.com/app",
    });
    expect(item).toMatchObject({ success: true });
    expect(await postJson(community("users/newcomer/delete"), token("admin"))).toEqual({
      error: {
        code: 400,
        message: "Unable to delete user.",
        details: [`User 'newcomer' owns items: 'An app' (${String(item.id)}). Reassign or delete them first.`],
      },
    });
    await postJson(https(`/content/users/newcomer/items/${String(item.id)}/delete`), token("newcomer"));
    expect(await postJson(community("users/newcomer/delete"), token("admin"))).toEqual({
      success: true,
      username: "newcomer",
    });
    expect(await getJson(community("users/newcomer"), token("admin"))).toMatchObject({ error: { code: 400 } });
    expect(await getJson(https("/community/self"), token("newcomer"))).toMatchObject({ error: { code: 498 } });
  });
});
