// Deleting a member who owns content, as ArcGIS rules it, against the local engine: the delete is refused naming
// their items and groups; `content/users/<u>/deleteItems` deletes many of their items at once (raw REST: ArcGIS REST
// JS has no call for it), each answered on its own and delete protection holding; ArcGIS REST JS's `reassignItem`
// gives an item to another member's folder (made when missing), administrators only, its service and storage use
// following it; once their group is reassigned too, the member is deleted.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { jsonCalls, signIn } from "./helpers/http.ts";

const REST = "/portal/sharing/rest";
let engine: RunningEngine;
const tokens: Record<string, string> = {};
let leaverPassword = "";
const { getJson, postJson } = jsonCalls(() => engine.ca);
const https = (path: string) => `${engine.ready.https}${REST}${path}`;
const token = (who: string) => tokens[who] ?? "";
const errorOf = (answer: Record<string, unknown>) =>
  answer.error as { code: number; message: string; details: string[] } | undefined;
const ids: Record<string, string> = {};
let groupId = "";

const addApp = async (title: string) => {
  const added = await postJson(https("/content/users/leaver/addItem"), token("leaver"), {
    type: "Web Mapping Application",
    title,
    url: "https://example.com/app",
  });
  expect(added).toMatchObject({ success: true });
  return String(added.id);
};

beforeAll(async () => {
  engine = await startEngine();
  for (const who of ["admin", "publisher", "user"] as const)
    tokens[who] = await signIn(https(""), engine.ca, who, PASSWORDS[who]);
  const added = await postJson(https("/community/createUser"), token("admin"), {
    username: "leaver",
    role: "org_publisher",
  });
  leaverPassword = String(added.password);
  tokens.leaver = await signIn(https(""), engine.ca, "leaver", leaverPassword);
  for (const title of ["Keep me", "Scratch one", "Scratch two", "Guarded"]) ids[title] = await addApp(title);
  // The map is shared with the group (private otherwise) and has a thumbnail, counted against its owner's storage.
  const map = await postJson(https("/content/users/leaver/addItem"), token("leaver"), {
    type: "Web Map",
    title: "Field map",
    text: JSON.stringify({
      operationalLayers: [],
      baseMap: { title: "None", baseMapLayers: [] },
      spatialReference: { wkid: 102100 },
      version: "2.31",
    }),
  });
  ids["Field map"] = String(map.id);
  const group = await postJson(https("/community/createGroup"), token("leaver"), {
    title: "Leaver's team",
    access: "org",
  });
  groupId = String((group.group as { id: string }).id);
  await postJson(https(`/community/groups/${groupId}/addUsers`), token("leaver"), { users: "publisher" });
  await postJson(https(`/content/items/${ids["Field map"]}/share`), token("leaver"), { groups: groupId });
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
  expect(
    await postJson(https(`/content/users/leaver/items/${ids["Field map"]}/updateThumbnail`), token("leaver"), {
      data: `data:image/png;base64,${png}`,
    }),
  ).toEqual({ success: true });
  await postJson(https(`/content/users/leaver/items/${ids.Guarded}/protect`), token("leaver"));
}, 120_000);

afterAll(() => engine?.stop());

describe.sequential("a member's content handed over before they are deleted", () => {
  it("refuses to delete a member who owns items and groups, naming them", async () => {
    const refused = errorOf(await postJson(https("/community/users/leaver/delete"), token("admin")));
    expect(refused?.code).toBe(400);
    expect(refused?.message).toBe("Unable to delete user.");
    expect(refused?.details).toHaveLength(2);
    const [items, groups] = refused?.details ?? [];
    expect(items).toMatch(/^User 'leaver' owns items: .+\. Reassign or delete them first\.$/);
    for (const [title, id] of Object.entries(ids)) expect(items).toContain(`'${title}' (${id})`);
    expect(groups).toBe(`User 'leaver' owns groups: 'Leaver's team' (${groupId}). Reassign or delete them first.`);
  });

  it("deleteItems deletes many items at once, each answered; a protected one and another's are refused", async () => {
    const other = await postJson(https("/content/users/user/addItem"), token("user"), {
      type: "Web Mapping Application",
      title: "Not the leaver's",
      url: "https://example.com/other",
    });
    const path = https("/content/users/leaver/deleteItems");
    const items = [ids["Scratch one"], ids["Scratch two"], ids.Guarded, String(other.id), "nope"].join(",");
    // Nobody but the member and administrators.
    expect(errorOf(await postJson(path, token("publisher"), { items }))?.code).toBe(403);
    const answer = await postJson(path, token("admin"), { items });
    const inaccessible = (id: string) => ({
      itemId: id,
      success: false,
      error: {
        code: 400,
        message: "Unable to delete items.",
        details: [`Item '${id}' does not exist or is inaccessible.`],
      },
    });
    expect(answer).toEqual({
      results: [
        { itemId: ids["Scratch one"], success: true },
        { itemId: ids["Scratch two"], success: true },
        {
          itemId: ids.Guarded,
          success: false,
          error: expect.objectContaining({ code: 400, message: expect.stringMatching(/protect/i) }),
        },
        inaccessible(String(other.id)),
        inaccessible("nope"),
      ],
    });
    for (const title of ["Scratch one", "Scratch two"])
      expect(errorOf(await getJson(https(`/content/items/${ids[title]}`), token("admin")))?.code).toBe(400);
    expect(await getJson(https(`/content/items/${ids.Guarded}`), token("admin"))).toMatchObject({ protected: true });
    expect(await getJson(https(`/content/items/${String(other.id)}`), token("user"))).toMatchObject({ owner: "user" });
    for (const [fields, detail] of [
      [{}, "'items' must name at least one item id."],
      [
        { items: Array.from({ length: 101 }, (_, i) => i.toString(16).padStart(32, "0")).join(",") },
        "'items' may name at most 100 items.",
      ],
    ] as const)
      expect(errorOf(await postJson(path, token("admin"), fields))?.details).toEqual([detail]);
    // The member themselves may too.
    await postJson(https(`/content/users/leaver/items/${ids.Guarded}/unprotect`), token("leaver"));
    expect(await postJson(path, token("leaver"), { items: ids.Guarded ?? "" })).toEqual({
      results: [{ itemId: ids.Guarded, success: true }],
    });
  });

  it("ArcGIS REST JS's reassignItem gives items to another member (administrators only), into a folder made for them", async () => {
    const usage = async (who: string) => Number((await getJson(https("/community/self"), token(who))).storageUsage);
    const [leaverBefore, publisherBefore] = [await usage("leaver"), await usage("publisher")];
    // Not an administrator: REST JS refuses it before asking (it checks the caller's role), and so does mapgate.
    const raw = await postJson(https(`/content/users/leaver/items/${ids["Field map"]}/reassign`), token("publisher"), {
      targetUsername: "publisher",
    });
    expect(errorOf(raw)?.code).toBe(403);
    const [bad, notMember, given, kept] = (await portalCalls(engine, "admin", PASSWORDS.admin, [
      { fn: "reassignItem", options: { id: ids["Keep me"], currentOwner: "leaver", targetUsername: "nobody" } },
      { fn: "reassignItem", options: { id: ids["Field map"], currentOwner: "leaver", targetUsername: "user" } },
      {
        fn: "reassignItem",
        options: {
          id: ids["Field map"],
          currentOwner: "leaver",
          targetUsername: "publisher",
          targetFolderName: "Handed over",
        },
      },
      {
        fn: "reassignItem",
        options: { id: ids["Keep me"], currentOwner: "leaver", targetUsername: "publisher", targetFolderName: "/" },
      },
    ])) as Record<string, unknown>[];
    expect(bad).toMatchObject({ error: { code: 400, details: ["User 'nobody' does not exist."] } });
    // A private item shared with a group goes only to a member of it.
    expect(notMember).toMatchObject({
      error: {
        code: 400,
        details: [`User 'user' is not a member of every group the item is shared with (${groupId}).`],
      },
    });
    expect(given).toEqual({ success: true, itemId: ids["Field map"] });
    expect(kept).toEqual({ success: true, itemId: ids["Keep me"] });
    const folders = (await getJson(https("/content/users/publisher"), token("publisher"))).folders as {
      id: string;
      title: string;
    }[];
    const folder = folders.find((f) => f.title === "Handed over");
    expect(folder).toBeDefined();
    expect(await getJson(https(`/content/items/${ids["Field map"]}`), token("publisher"))).toMatchObject({
      owner: "publisher",
      ownerFolder: folder?.id,
      access: "shared",
    });
    expect(await getJson(https(`/content/items/${ids["Keep me"]}`), token("publisher"))).toMatchObject({
      owner: "publisher",
      ownerFolder: null,
    });
    // The new owner manages it now; the old one no longer does.
    expect(
      await postJson(https(`/content/users/publisher/items/${ids["Keep me"]}/update`), token("publisher"), {
        snippet: "mine now",
      }),
    ).toMatchObject({ success: true });
    expect(
      errorOf(
        await postJson(https(`/content/users/leaver/items/${ids["Keep me"]}/update`), token("leaver"), {
          snippet: "x",
        }),
      )?.code,
    ).toBeGreaterThanOrEqual(400);
    // What the map keeps is counted against its new owner's storage now.
    const moved = leaverBefore - (await usage("leaver"));
    expect(moved).toBeGreaterThan(0);
    expect((await usage("publisher")) - publisherBefore).toBe(moved);
    // Bad input, named.
    const path = https(`/content/users/publisher/items/${ids["Keep me"]}/reassign`);
    expect(errorOf(await postJson(path, token("admin"), {}))?.details).toEqual([
      "'targetUsername' must name the member who receives the item.",
    ]);
    expect(
      errorOf(await postJson(path, token("admin"), { targetUsername: "user", targetFolderName: "x".repeat(251) }))
        ?.details,
    ).toEqual(["'targetFolderName' is longer than 250 characters."]);
  });

  it("deletes the member once their group is reassigned too", async () => {
    expect(
      await postJson(https(`/community/groups/${groupId}/reassign`), token("admin"), { targetUsername: "publisher" }),
    ).toMatchObject({ success: true });
    expect(await postJson(https("/community/users/leaver/delete"), token("admin"))).toEqual({
      success: true,
      username: "leaver",
    });
    expect(await getJson(https(`/content/items/${ids["Field map"]}`), token("publisher"))).toMatchObject({
      owner: "publisher",
    });
  });
});
