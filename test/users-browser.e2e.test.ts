// The Users page and one's own profile in a real headless Chromium (no script: the pages have none) against the
// local engine: an administrator adds a user and reads the generated password once, and that user signs in with it;
// changes the user's role; disables them (their sign-in is refused) and enables them; resets their password (the
// new one signs in); deletes them, refused while they own an item and done once it is gone. A member changes their
// own password on their profile's page, a wrong current password refused. One behaviour a test, in order.
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startEngineAndBrowser, stopBrowserAndEngine } from "./helpers/browser.ts";
import { PASSWORDS, type RunningEngine } from "./helpers/engine.ts";
import { jsonCalls, signIn } from "./helpers/http.ts";

const REST = "/portal/sharing/rest";
const USERS = `${REST}/portals/self/users?f=html`;
let engine: RunningEngine;
let browser: Browser;
const contexts: BrowserContext[] = [];
const { getJson, postJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${path}`;

async function newPage(): Promise<Page> {
  const context = await browser.newContext({ ignoreHTTPSErrors: true, javaScriptEnabled: false });
  contexts.push(context);
  return context.newPage();
}

/** Signs in on the sign-in page; answers the page after it (the directory, or the sign-in page saying why not). */
async function signInPage(username: string, password: string): Promise<Page> {
  const page = await newPage();
  await page.goto(https(`${REST}/oauth2/signin?redirect=${encodeURIComponent(`${REST}?f=html`)}`));
  await page.getByLabel("Username").fill(username);
  await page.getByLabel("Password").fill(password);
  await submit(page, "Sign in");
  return page;
}

async function submit(page: Page, button: string, within?: string): Promise<void> {
  const loaded = page.waitForEvent("load");
  const scope = within ? page.locator(`tr[data-username="${within}"]`) : page;
  await scope.getByRole("button", { name: button, exact: true }).click();
  await loaded;
}

const heading = (page: Page) => page.getByRole("heading", { level: 1 }).textContent();
const signedInAs = async (page: Page) => !page.url().includes("/oauth2/signin");

beforeAll(async () => {
  ({ engine, browser } = await startEngineAndBrowser());
}, 120_000);

afterAll(() => stopBrowserAndEngine(contexts, browser, engine));

describe.sequential("the Users page", () => {
  let admin: Page;
  let password = "";

  it("adds a user: the generated password is shown once, and the user signs in with it", async () => {
    admin = await signInPage("admin", PASSWORDS.admin);
    await admin.goto(https(USERS));
    expect(await heading(admin)).toBe("Users");
    await admin.getByLabel("Username").fill("walker");
    await admin.getByLabel("Full name").fill("Wanda Walker");
    await admin.getByLabel("Email").fill("walker@example.com");
    await admin.getByLabel("Role", { exact: true }).selectOption("org_user");
    await submit(admin, "Add user");
    expect(await heading(admin)).toBe("User added");
    password = (await admin.locator("#new-password").textContent()) ?? "";
    expect(password).toMatch(/^[A-Za-z0-9]{20}$/);
    // Reloading shows the sealed result again, never a second user (the POST is not sent twice).
    await admin.reload();
    expect(await heading(admin)).toBe("User added");
    const walker = await signInPage("walker", password);
    expect(await signedInAs(walker)).toBe(true);
  });

  it("changes the user's role in their row", async () => {
    await admin.goto(https(USERS));
    await admin.getByLabel("Role of walker").selectOption("org_publisher");
    await submit(admin, "Change role", "walker");
    expect(await heading(admin)).toBe("User role updated");
    await admin.goto(https(USERS));
    expect(await admin.locator('tr[data-username="walker"] td').nth(3).textContent()).toBe("org_publisher");
  });

  it("disables the user, whose sign-in is then refused, and enables them again", async () => {
    await admin.goto(https(USERS));
    await submit(admin, "Disable", "walker");
    expect(await heading(admin)).toBe("User disabled");
    const refused = await signInPage("walker", password);
    expect(await signedInAs(refused)).toBe(false);
    expect(await refused.getByText("This account has been disabled.").count()).toBe(1);
    await admin.goto(https(USERS));
    expect(await admin.locator('tr[data-username="walker"] td').nth(4).textContent()).toBe("Disabled");
    await submit(admin, "Enable", "walker");
    expect(await heading(admin)).toBe("User enabled");
    expect(await signedInAs(await signInPage("walker", password))).toBe(true);
  });

  it("resets the user's password after confirming: the new one is shown once and signs in, the old one not", async () => {
    await admin.goto(https(USERS));
    await submit(admin, "Reset password", "walker");
    await admin.getByLabel(/^I understand: the user's current password/).check();
    await submit(admin, "Reset Password");
    expect(await heading(admin)).toBe("Password reset");
    const fresh = (await admin.locator("#new-password").textContent()) ?? "";
    expect(fresh).toMatch(/^[A-Za-z0-9]{20}$/);
    expect(fresh).not.toBe(password);
    expect(await signedInAs(await signInPage("walker", password))).toBe(false);
    expect(await signedInAs(await signInPage("walker", fresh))).toBe(true);
    password = fresh;
  });

  it("refuses to delete the user while they own an item, and deletes them once it is gone", async () => {
    const token = await signIn(https(REST), engine.ca, "walker", password);
    const item = await postJson(https(`${REST}/content/users/walker/addItem`), token, {
      type: "Web Mapping Application",
      title: "Walker's app",
      url: "https://example.com/app",
    });
    await admin.goto(https(USERS));
    await submit(admin, "Delete", "walker");
    await admin.getByLabel(/^I understand: the user is deleted for good/).check();
    await submit(admin, "Delete User");
    expect(
      await admin
        .getByText(`User 'walker' owns items: 'Walker's app' (${String(item.id)}). Reassign or delete them first.`)
        .count(),
    ).toBe(1);
    await postJson(https(`${REST}/content/users/walker/items/${String(item.id)}/delete`), token);
    await admin.goto(https(USERS));
    await submit(admin, "Delete", "walker");
    await admin.getByLabel(/^I understand: the user is deleted for good/).check();
    await submit(admin, "Delete User");
    expect(await heading(admin)).toBe("User deleted");
    await admin.goto(https(USERS));
    expect(await admin.locator('tr[data-username="walker"]').count()).toBe(0);
    expect(await signedInAs(await signInPage("walker", password))).toBe(false);
  });
});

describe("one's own profile", () => {
  it("a member changes their full name and password on their profile's page; a wrong current password is refused", async () => {
    const me = await signInPage("user", PASSWORDS.user);
    // The directory a member lands on after signing in leads to the page.
    await Promise.all([
      me.waitForEvent("load"),
      me.getByRole("link", { name: "My profile and password", exact: true }).click(),
    ]);
    expect(me.url()).toBe(https(`${REST}/community/users/user/update?f=html`));
    // The form starts from the profile as it is.
    expect(await me.getByLabel("Full name").inputValue()).not.toBe("");
    await me.getByLabel("Full name").fill("Ursula User");
    await me.getByLabel("Current password").fill("not-my-password");
    await me.getByLabel("New password").fill("user-Fresh-Pass-42");
    await submit(me, "Submit");
    expect(await me.getByText("The current password is not correct.").count()).toBe(1);
    const token = await signIn(https(REST), engine.ca, "user", PASSWORDS.user);
    // Nothing was changed by the refused form.
    expect(await getJson(https(`${REST}/community/self`), token)).toMatchObject({
      fullName: expect.not.stringMatching(/Ursula/),
    });

    await me.goto(https(`${REST}/community/users/user/update?f=html`));
    await me.getByLabel("Full name").fill("Ursula User");
    await me.getByLabel("Current password").fill(PASSWORDS.user);
    await me.getByLabel("New password").fill("user-Fresh-Pass-42");
    await submit(me, "Submit");
    expect(await heading(me)).toBe("Password changed");
    expect(await signedInAs(await signInPage("user", PASSWORDS.user))).toBe(false);
    const again = await signInPage("user", "user-Fresh-Pass-42");
    expect(await signedInAs(again)).toBe(true);
    const fresh = await signIn(https(REST), engine.ca, "user", "user-Fresh-Pass-42");
    expect(await getJson(https(`${REST}/community/self`), fresh)).toMatchObject({ fullName: "Ursula User" });
  });
});
