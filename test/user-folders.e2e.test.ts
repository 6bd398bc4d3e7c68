// Members' folders and the rest of the uploads wire, through the real local engine: ArcGIS REST JS makes a folder
// (createFolder), adds a file into it (createItemInFolder), lists it (getUserContent with folderId), makes an empty
// hosted service in it (createFeatureService with folderId), uploads in parts into it, lists the parts kept
// (getItemParts) and cancels the upload (cancelItemUpload: the parts, the item and their quota use gone). Raw requests
// check what clients may get wrong: a folder that is not the member's, one of another member, an item addressed in a
// folder it is not in, cancelling or listing the parts of a committed upload, and who may do each.
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineCalls, portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine, signInMembers } from "./helpers/engine.ts";
import { call, jsonCalls, multipartBody } from "./helpers/http.ts";

let engine: RunningEngine;
const tokens = { admin: "", publisher: "", user: "" };
const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const { getJson, postJson } = jsonCalls(() => engine.ca);

type Json = Record<string, unknown>;
const ID = /^[0-9a-f]{32}$/;
const CSV = "name,latitude,longitude\nA,40.1,-105.2\nB,40.2,-105.3\n";
const usage = async (token: string) =>
  ((await getJson(`${rest()}/community/self`, token)) as { storageUsage: number }).storageUsage;
const partsOnDisk = (itemId: string) => {
  const dir = join(engine.dataDir, "item-files", "items", "parts", itemId);
  return existsSync(dir) ? readdirSync(dir).sort() : [];
};
const markOnDisk = (itemId: string) => existsSync(join(engine.dataDir, "item-files", "items", "uploads", itemId));

async function addFile(owner: string, token: string, folder: string | undefined, name = "sites.csv", title = "Sites") {
  const { body, type } = await multipartBody(
    { f: "json", token, type: "CSV", title },
    { file: { name, bytes: Buffer.from(CSV) } },
  );
  const path = folder === undefined ? owner : `${owner}/${folder}`;
  return (
    await call(`${rest()}/content/users/${path}/addItem`, { ca: engine.ca, body, headers: { "content-type": type } })
  ).json<Json>();
}

async function addPart(token: string, itemId: string, partNum: number, bytes: Buffer, path = "publisher") {
  const { body, type } = await multipartBody({ f: "json", token }, { file: { name: "blob", bytes } });
  return (
    await call(`${rest()}/content/users/${path}/items/${itemId}/addPart?partNum=${partNum}`, {
      ca: engine.ca,
      body,
      headers: { "content-type": type },
    })
  ).json<Json>();
}

let folderId = "";

beforeAll(async () => {
  engine = await startEngine();
  Object.assign(tokens, await signInMembers(rest(), engine.ca));
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("a member's folders", () => {
  it("are made, filled and listed by ArcGIS REST JS", async () => {
    const [made, again] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        { fn: "createFolder", options: { title: "Field work" } },
        // Titles are the member's to keep unique, whatever the letters' case.
        { fn: "createFolder", options: { title: "FIELD WORK" } },
      ],
      { asInBrowser: true },
    )) as Json[];
    expect(made).toEqual({
      success: true,
      folder: { username: "publisher", id: expect.stringMatching(ID), title: "Field work" },
    });
    folderId = String((made?.folder as Json).id);
    expect(again).toEqual({
      error: {
        name: "ArcGISRequestError",
        code: 400,
        message: "400: Unable to create folder.",
        details: ["Folder title 'FIELD WORK' not available: publisher has a folder of that title."],
      },
    });

    const [added] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        {
          fn: "createItemInFolderWithFile",
          options: {
            item: { title: "Sites in a folder", type: "CSV" },
            folderId,
            name: "sites.csv",
            base64: Buffer.from(CSV).toString("base64"),
          },
        },
      ],
      { asInBrowser: true },
    )) as Json[];
    expect(added).toEqual({ success: true, id: expect.stringMatching(ID), folder: folderId });
    const id = String(added?.id);
    const root = await addFile("publisher", tokens.publisher, undefined, "root.csv", "Sites at the root");
    expect(root).toMatchObject({ success: true, folder: null });

    const [item, rootListing, folderListing] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        { fn: "getItem", options: { id } },
        { fn: "getUserContent", options: { num: 100 } },
        { fn: "getUserContent", options: { folderId, num: 100 } },
      ],
      { asInBrowser: true },
    )) as Json[];
    expect(item).toMatchObject({ id, title: "Sites in a folder", ownerFolder: folderId });
    // Shared with the organization, the item is seen by others, but not where its owner filed it.
    expect(
      await postJson(`${rest()}/content/users/publisher/items/${id}/share`, tokens.publisher, { org: "true" }),
    ).toMatchObject({ notSharedWith: [] });
    expect(await getJson(`${rest()}/content/items/${id}`, tokens.user)).toMatchObject({ id, ownerFolder: null });
    const titles = (listing: Json | undefined) => (listing?.items as { title: string }[]).map((i) => i.title);
    // The root lists the root's items and the folders; a folder lists its own items.
    expect(titles(rootListing)).toContain("Sites at the root");
    expect(titles(rootListing)).not.toContain("Sites in a folder");
    expect(rootListing).toMatchObject({
      currentFolder: null,
      folders: [{ username: "publisher", id: folderId, title: "Field work", created: expect.any(Number) }],
    });
    expect(titles(folderListing)).toEqual(["Sites in a folder"]);
    expect(folderListing).toMatchObject({
      username: "publisher",
      total: 1,
      currentFolder: { username: "publisher", id: folderId, title: "Field work" },
    });
  });

  it("takes an empty hosted service made by createFeatureService with folderId", async () => {
    const [created] = (await defineCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "createFeatureService", options: { folderId, item: { name: "Folder_sites", capabilities: "Query" } } },
    ])) as Json[];
    expect(created).toMatchObject({ success: true, name: "Folder_sites", serviceItemId: expect.stringMatching(ID) });
    const item = await getJson(`${rest()}/content/items/${String(created?.serviceItemId)}`, tokens.publisher);
    expect(item).toMatchObject({ type: "Feature Service", ownerFolder: folderId });
  });

  it("refuses a folder that is not the member's, and a member's folder to others", async () => {
    const missing = "0123456789abcdef0123456789abcdef";
    expect(await addFile("publisher", tokens.publisher, missing)).toEqual({
      error: {
        code: 400,
        message: "Unable to add item.",
        details: [`Folder '${missing}' does not exist in publisher's content.`],
      },
    });
    // The admin's own folder is not in the publisher's content, even for the admin.
    const adminFolder = (await postJson(`${rest()}/content/users/admin/createFolder`, tokens.admin, {
      title: "Admin's",
    })) as { folder: { id: string } };
    expect(await addFile("publisher", tokens.admin, adminFolder.folder.id)).toEqual({
      error: {
        code: 400,
        message: "Unable to add item.",
        details: [`Folder '${adminFolder.folder.id}' does not exist in publisher's content.`],
      },
    });
    // Another member's content (and folders) is not a member's to add to, or to list.
    expect(await addFile("publisher", tokens.user, folderId)).toMatchObject({ error: { code: 403 } });
    expect(await getJson(`${rest()}/content/users/publisher/${folderId}`, tokens.user)).toMatchObject({
      error: { code: 403, messageCode: "GWM_0003" },
    });
    expect(
      await postJson(`${rest()}/content/users/publisher/createFolder`, tokens.user, { title: "Mine" }),
    ).toMatchObject({ error: { code: 403 } });
    // An administrator organizes a member's content.
    const byAdmin = await postJson(`${rest()}/content/users/publisher/createFolder`, tokens.admin, { title: "Filed" });
    expect(byAdmin).toMatchObject({ success: true, folder: { username: "publisher", title: "Filed" } });
    // A segment that cannot be a folder id is nothing served; a bad title is named.
    expect(await getJson(`${rest()}/content/users/publisher/not-a-folder`, tokens.publisher)).toMatchObject({
      error: { code: 404 },
    });
    expect(
      await postJson(`${rest()}/content/users/publisher/createFolder`, tokens.publisher, { title: "a/b" }),
    ).toEqual({
      error: {
        code: 400,
        message: "Unable to create folder.",
        details: ["'title' must have 1–250 characters, no control characters and no '/' or '\\'."],
      },
    });
    expect(await getJson(`${rest()}/content/users/publisher/createFolder`, tokens.publisher)).toMatchObject({
      error: { code: 405 },
    });
  });
});

describe("an upload in parts", () => {
  it("lists its parts and is cancelled by ArcGIS REST JS, into a folder, its quota use given back", async () => {
    const before = await usage(tokens.publisher);
    const [created] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [{ fn: "createItemMultipart", options: { item: { title: "Parts", type: "CSV" }, filename: "p.csv", folderId } }],
      { asInBrowser: true },
    )) as Json[];
    expect(created).toEqual({ success: true, id: expect.stringMatching(ID), folder: folderId });
    const id = String(created?.id);
    expect(markOnDisk(id)).toBe(true);
    const head = Buffer.from(CSV.slice(0, 20));
    const tail = Buffer.from(CSV.slice(20));
    const answers = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        { fn: "getItemParts", options: { id } },
        { fn: "addItemPart", options: { id, partNum: 3, base64: tail.toString("base64") } },
        { fn: "addItemPart", options: { id, partNum: 1, base64: head.toString("base64") } },
        { fn: "getItemParts", options: { id } },
      ],
      { asInBrowser: true },
    )) as Json[];
    expect(answers).toEqual([{ parts: [] }, { success: true, id }, { success: true, id }, { parts: ["1", "3"] }]);
    expect(await usage(tokens.publisher)).toBe(before + CSV.length);
    // In its folder it is reached there as well; elsewhere it is not in that folder.
    expect(await getJson(`${rest()}/content/users/publisher/${folderId}/items/${id}/parts`, tokens.publisher)).toEqual({
      parts: ["1", "3"],
    });
    const other = "fedcba9876543210fedcba9876543210";
    expect(await getJson(`${rest()}/content/users/publisher/${other}/items/${id}/status`, tokens.publisher)).toEqual({
      error: { code: 400, messageCode: "CONT_0005", message: "Item does not exist in this folder.", details: [] },
    });
    // Only its owner (or an administrator) cancels it.
    expect(await postJson(`${rest()}/content/users/publisher/items/${id}/cancel`, tokens.user)).toMatchObject({
      error: { code: 403 },
    });
    const [cancelled, gone] = (await portalCalls(
      engine,
      "publisher",
      PASSWORDS.publisher,
      [
        { fn: "cancelItemUpload", options: { id } },
        { fn: "getItem", options: { id } },
      ],
      { asInBrowser: true },
    )) as Json[];
    expect(cancelled).toEqual({ success: true, id });
    expect(gone).toMatchObject({
      error: { code: "CONT_0001", message: "CONT_0001: Item does not exist or is inaccessible." },
    });
    expect(partsOnDisk(id)).toEqual([]);
    expect(markOnDisk(id)).toBe(false);
    expect(await usage(tokens.publisher)).toBe(before);
  });

  it("is not cancelled, nor are its parts listed, once committed", async () => {
    const started = (await postJson(`${rest()}/content/users/publisher/addItem`, tokens.publisher, {
      multipart: "true",
      filename: "whole.csv",
      type: "CSV",
    })) as { id: string };
    const id = started.id;
    expect(await addPart(tokens.publisher, id, 1, Buffer.from(CSV))).toEqual({ success: true, id });
    expect(await postJson(`${rest()}/content/users/publisher/items/${id}/commit`, tokens.publisher)).toEqual({
      success: true,
      id,
    });
    expect(markOnDisk(id)).toBe(false);
    expect(await postJson(`${rest()}/content/users/publisher/items/${id}/cancel`, tokens.publisher)).toEqual({
      error: {
        code: 400,
        message: "Unable to cancel the upload.",
        details: ["The item's file is whole (committed, or uploaded in one request): it takes no more parts."],
      },
    });
    expect(await getJson(`${rest()}/content/users/publisher/items/${id}/parts`, tokens.publisher)).toEqual({
      error: {
        code: 400,
        message: "Unable to list the item's parts.",
        details: ["The item's file is whole (committed, or uploaded in one request): it takes no more parts."],
      },
    });
    expect(await getJson(`${rest()}/content/users/publisher/items/${id}/cancel`, tokens.publisher)).toMatchObject({
      error: { code: 405 },
    });
    const missing = "0123456789abcdef0123456789abcdef";
    expect(await postJson(`${rest()}/content/users/publisher/items/${missing}/cancel`, tokens.publisher)).toEqual({
      error: {
        code: 400,
        messageCode: "CONT_0001",
        message: "Item does not exist or is inaccessible.",
        details: [`Item '${missing}' does not exist or is inaccessible.`],
      },
    });
  });
});
