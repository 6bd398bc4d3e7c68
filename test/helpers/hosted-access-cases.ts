// Who may edit a hosted feature layer, and which features (ownership-based access control), through the real local
// engine and ArcGIS REST JS (applyEdits, queryFeatures, updateServiceDefinition; anonymous callers with no session),
// on each backing of hosted data: test/hosted-edit-access.e2e.test.ts (a GeoPackage per service: the who-may-edit
// matrix and every ownership rule) and test/hosted-edit-access-postgis.e2e.test.ts (PostgreSQL + PostGIS: the
// ownership rules). The demo's publisher owns the service; its user is the other member; its administrator manages
// every service of the organization.
import decodeArcgisPbf from "arcgis-pbf-parser";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { attachmentCalls, defineCalls, definePointService } from "./arcgis.ts";
import { PASSWORDS, type RunningEngine, signInMembers, startEngine } from "./engine.ts";
import { call, jsonCalls } from "./http.ts";
import { share } from "./publish.ts";

export interface AccessBacking {
  start(): Promise<Record<string, string>>;
  stop(): Promise<void>;
}

type Who = "publisher" | "user" | "admin" | "anonymous";

/** ArcGIS's answers for an edit ownership refuses, and for one of a feature the caller does not see (or none). */
const DENIED = { code: 1007, description: "Edit denied due to ownership-based access control." };
const MISSING_UPDATE = { code: 1019, description: "Update for the object was not attempted. Object may not exist." };
/** A PNG file as the attachment client takes one (its bytes are a PNG's signature, then data). */
const photo = {
  name: "photo.png",
  type: "image/png",
  base64: Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    Buffer.from("pixels"),
  ]).toString("base64"),
};
const MISSING_DELETE = { code: 1019, description: "Delete for the object was not attempted. Object may not exist." };

export function accessSuite(backing: AccessBacking, { matrix }: { readonly matrix: boolean }) {
  let engine: RunningEngine;
  const tokens = { admin: "", publisher: "", user: "" };
  const { getJson, postJson } = jsonCalls(() => engine.ca);
  let url = "";
  let itemId = "";
  const layer = () => `${url}/0`;

  beforeAll(async () => {
    const env = await backing.start();
    engine = await startEngine({ env });
    Object.assign(tokens, await signInMembers(`${engine.ready.https}/portal/sharing/rest`, engine.ca));
    itemId = await definePointService(engine, "Access");
    url = `${engine.ready.https}/arcgis/rest/services/Hosted/Access/FeatureServer`;
  }, 120_000);

  afterAll(async () => {
    await engine?.stop();
    await backing.stop();
  });

  /** REST JS calls as `who` (anonymous: no session at all), each answer or error in order. */
  const rest = (who: Who, calls: { fn: string; options: Record<string, unknown> }[]) =>
    defineCalls(engine, who === "anonymous" ? "" : who, who === "anonymous" ? "" : PASSWORDS[who], calls);
  const one = async (who: Who, fn: string, options: Record<string, unknown>) =>
    ((await rest(who, [{ fn, options }])) as Record<string, unknown>[])[0] as Record<string, unknown>;
  const edits = (who: Who, params: Record<string, unknown>) =>
    one(who, "applyEdits", { url: layer(), params: { rollbackOnFailure: false, ...params } });
  const add = async (who: Who, name: string): Promise<number> => {
    const answer = await edits(who, { adds: [{ geometry: { x: 1, y: 2 }, attributes: { Name: name } }] });
    const [result] = answer.addResults as { objectId: number; success: boolean }[];
    expect(result, JSON.stringify(answer)).toMatchObject({ success: true });
    return result?.objectId ?? -1;
  };
  const update = (who: Who, id: number, name: string) =>
    edits(who, { updates: [{ attributes: { OBJECTID: id, Name: name } }] });
  const define = (updateDefinition: Record<string, unknown>) =>
    one("publisher", "updateServiceDefinition", { url, updateDefinition });
  const ownership = (settings: Record<string, boolean>) =>
    define({ editorTrackingInfo: { enableEditorTracking: true, enableOwnershipAccessControl: true, ...settings } });
  /** What `who` sees through queryFeatures: each feature's name and creator, in object id order. */
  const seen = async (who: Who, params: Record<string, unknown> = {}) => {
    const answer = await one(who, "queryFeatures", {
      url: layer(),
      params: { where: "1=1", outFields: "*", orderByFields: "OBJECTID", ...params },
    });
    if (!Array.isArray(answer.features)) throw new Error(JSON.stringify(answer));
    return (answer.features as { attributes: Record<string, unknown> }[]).map(
      (f) => `${String(f.attributes.Name)}:${String(f.attributes.Creator)}`,
    );
  };
  /** REST JS's error for a 499 (it says Token Required by its message; its code is the message code). */
  const TOKEN_REQUIRED = { name: "ArcGISAuthError", message: expect.stringContaining("Token Required") as unknown };
  const query = (token: string, params: string) => getJson(`${layer()}/query?where=1%3D1&${params}`, token);

  if (matrix)
    describe.sequential("who may edit", () => {
      it("refuses a member the service is not shared with (as a query would) and anonymous callers", async () => {
        expect((await edits("user", { adds: [{ attributes: { Name: "no" } }] })).error).toMatchObject({
          code: 404,
          details: ["The service does not exist or is inaccessible."],
        });
        expect((await edits("anonymous", { adds: [{ attributes: { Name: "no" } }] })).error).toMatchObject(
          TOKEN_REQUIRED,
        );
      });

      it("lets the owner and an administrator edit, and a member it is shared with while editing is enabled", async () => {
        await add("publisher", "owner's");
        await add("admin", "admin's");
        expect(await share(engine, tokens.publisher, itemId, { org: "true" })).toMatchObject({ notSharedWith: [] });
        const id = await add("user", "member's");
        expect(await update("user", id, "member's")).toEqual({
          addResults: [],
          updateResults: [{ objectId: id, globalId: null, success: true }],
          deleteResults: [],
        });
      });

      it("refuses a member what the owner turned off (Update), while the owner and an administrator still may", async () => {
        expect(await define({ capabilities: "Query,Create" })).toEqual({ success: true });
        expect((await getJson(layer(), tokens.user)).capabilities).toBe("Create,Query");
        const [first] = (await seen("publisher")).map((_, i) => i + 1);
        expect((await update("user", first ?? 1, "x")).error).toMatchObject({
          code: "GWM_0003",
          details: ["User does not have permissions to access 'hosted/access.featureserver'."],
        });
        await add("user", "member's second");
        for (const who of ["publisher", "admin"] as const)
          expect((await update(who, 1, "owner's")).updateResults).toEqual([
            { objectId: 1, globalId: null, success: true },
          ]);
        expect(await define({ capabilities: "Query,Create,Update,Delete,Editing" })).toEqual({ success: true });
      });

      it("refuses anonymous edits of a public layer until its owner turns on public data collection", async () => {
        expect(await share(engine, tokens.publisher, itemId, { everyone: "true", org: "true" })).toMatchObject({
          notSharedWith: [],
        });
        expect((await edits("anonymous", { adds: [{ attributes: { Name: "anon" } }] })).error).toMatchObject(
          TOKEN_REQUIRED,
        );
        // The service says so on the admin wire and in its JSON.
        expect(await define({ publicDataCollection: true })).toEqual({ success: true });
        const id = await add("anonymous", "anonymous's");
        // Editor tracking records an anonymous caller as clients see ArcGIS's anonymous edits: an empty name.
        const got = (await query(tokens.publisher, `objectIds=${id}&outFields=Creator,Editor,CreationDate`))
          .features as { attributes: Record<string, unknown> }[];
        expect(got[0]?.attributes).toMatchObject({ Creator: "", Editor: "", CreationDate: expect.any(Number) });
        expect(await update("anonymous", id, "anonymous's")).toMatchObject({
          updateResults: [{ objectId: id, success: true }],
        });
      });

      it("gives anonymous callers only the edits the capabilities allow, and only while the layer is public", async () => {
        expect(await define({ capabilities: "Query,Create" })).toEqual({ success: true });
        expect((await update("anonymous", 1, "x")).error).toMatchObject(TOKEN_REQUIRED);
        await add("anonymous", "anonymous's second");
        expect(await define({ capabilities: "Query,Create,Update,Delete,Editing" })).toEqual({ success: true });
        expect(await share(engine, tokens.publisher, itemId, { everyone: "false", org: "true" })).toMatchObject({
          notSharedWith: [],
        });
        const unshared = await call(`${layer()}/addFeatures`, {
          ca: engine.ca,
          body: new URLSearchParams({ f: "json", features: '[{"attributes":{"Name":"no"}}]' }).toString(),
        });
        expect(unshared.json<Record<string, unknown>>().error).toMatchObject({ code: 499 });
        expect(await share(engine, tokens.publisher, itemId, { everyone: "true", org: "true" })).toMatchObject({
          notSharedWith: [],
        });
        expect(await define({ publicDataCollection: false })).toEqual({ success: true });
        expect((await edits("anonymous", { adds: [{ attributes: { Name: "no" } }] })).error).toMatchObject(
          TOKEN_REQUIRED,
        );
        expect(await define({ publicDataCollection: true })).toEqual({ success: true });
      });
    });

  describe.sequential("ownership-based access control", () => {
    const mine: Record<string, number> = {};

    it("is set by editorTrackingInfo on the admin wire, and advertised as ArcGIS advertises it", async () => {
      if (!matrix) {
        expect(await share(engine, tokens.publisher, itemId, { everyone: "true", org: "true" })).toMatchObject({
          notSharedWith: [],
        });
        expect(await define({ publicDataCollection: true })).toEqual({ success: true });
      }
      mine.owner = await add("publisher", "O1");
      mine.member = await add("user", "M1");
      mine.anonymous = await add("anonymous", "A1");
      const layerBefore = await getJson(layer(), tokens.user);
      expect(layerBefore).not.toHaveProperty("ownershipBasedAccessControlForFeatures");
      expect(
        await ownership({
          allowOthersToQuery: false,
          allowOthersToUpdate: false,
          allowOthersToDelete: false,
          allowAnonymousToUpdate: false,
          allowAnonymousToDelete: false,
        }),
      ).toEqual({ success: true });
      expect((await getJson(layer(), tokens.user)).ownershipBasedAccessControlForFeatures).toEqual({
        allowOthersToQuery: false,
        allowOthersToUpdate: false,
        allowOthersToDelete: false,
        allowAnonymousToQuery: true,
        allowAnonymousToUpdate: false,
        allowAnonymousToDelete: false,
      });
      expect((await getJson(url, tokens.user)).editorTrackingInfo).toEqual({
        enableEditorTracking: true,
        enableOwnershipAccessControl: true,
        allowOthersToUpdate: false,
        allowOthersToDelete: false,
        allowOthersToQuery: false,
        allowAnonymousToUpdate: false,
        allowAnonymousToDelete: false,
      });
      // A setting it does not know, or one not true/false, is named.
      expect(await define({ editorTrackingInfo: { allowOthersToQuery: "no", allowEveryone: true } })).toMatchObject({
        error: {
          code: 400,
          details: [
            "'editorTrackingInfo.allowOthersToQuery' must be true or false.",
            expect.stringContaining("'editorTrackingInfo.allowEveryone' is not a setting here"),
          ],
        },
      });
    });

    it("takes the same settings through addToDefinition, as ArcGIS clients also send them", async () => {
      const admin = url.replace("/rest/services/", "/rest/admin/services/");
      const added = await one("publisher", "request", {
        url: `${admin}/addToDefinition`,
        params: { addToDefinition: { editorTrackingInfo: { allowAnonymousToQuery: false } } },
      });
      expect(added).toEqual({ success: true });
      expect((await getJson(layer(), tokens.user)).ownershipBasedAccessControlForFeatures).toMatchObject({
        allowOthersToQuery: false,
        allowAnonymousToQuery: false,
      });
      expect(await ownership({ allowAnonymousToQuery: true })).toEqual({ success: true });
    });

    it("hides others' features from a member on every query surface, in the plan (paging and counts agree)", async () => {
      const all = await seen("publisher");
      expect(all.length).toBeGreaterThanOrEqual(3);
      expect(await seen("admin")).toEqual(all);
      // The member's own features and those anonymous callers made (no creator: anyone reaches them).
      const members = all.filter((f) => f.endsWith(":user") || f.endsWith(":"));
      expect(await seen("user")).toEqual(members);
      expect(members).toContain("M1:user");
      expect(members).toContain("A1:");
      expect(members.some((f) => f.startsWith("O1"))).toBe(false);
      // A where naming the owner's feature, an OR, ids, counts, extents, statistics, paging, GeoJSON and PBF.
      expect(await seen("user", { where: "Name = 'O1' OR 1=1" })).toEqual(members);
      expect((await query(tokens.user, "returnCountOnly=true")).count).toBe(members.length);
      expect((await query(tokens.user, "returnIdsOnly=true")).objectIds).toHaveLength(members.length);
      expect(
        ((await query(tokens.user, `objectIds=${mine.owner}&returnIdsOnly=true`)).objectIds as unknown[]) ?? [],
      ).toEqual([]);
      expect((await query(tokens.user, "returnExtentOnly=true&returnCountOnly=true")).count).toBe(members.length);
      const stats = await query(
        tokens.user,
        `outStatistics=${encodeURIComponent('[{"statisticType":"count","onStatisticField":"OBJECTID","outStatisticFieldName":"n"}]')}`,
      );
      expect((stats.features as { attributes: { n: number } }[])[0]?.attributes.n).toBe(members.length);
      const paged: string[] = [];
      for (let offset = 0; offset < members.length; offset++)
        paged.push(...(await seen("user", { resultOffset: offset, resultRecordCount: 1 })));
      expect(paged).toEqual(members);
      const geojson = await call(`${layer()}/query?where=1%3D1&f=geojson&token=${tokens.user}`, { ca: engine.ca });
      expect(geojson.json<{ features: unknown[] }>().features).toHaveLength(members.length);
      const pbf = await call(`${layer()}/query?where=1%3D1&f=pbf&token=${tokens.user}`, { ca: engine.ca });
      expect(
        (decodeArcgisPbf(new Uint8Array(pbf.body)) as { featureCollection: { features: unknown[] } }).featureCollection
          .features,
      ).toHaveLength(members.length);
    });

    it("refuses a member's update and delete of others' features per feature, a hidden one as missing", async () => {
      const [owner, member, anonymous] = [mine.owner ?? -1, mine.member ?? -1, mine.anonymous ?? -1];
      expect(await update("user", owner, "taken")).toEqual({
        addResults: [],
        updateResults: [{ objectId: owner, globalId: null, success: false, error: MISSING_UPDATE }],
        deleteResults: [],
      });
      expect(await ownership({ allowOthersToQuery: true })).toEqual({ success: true });
      expect(await seen("user")).toContain("O1:publisher");
      expect(
        await edits("user", {
          updates: [
            { attributes: { OBJECTID: owner, Name: "taken" } },
            { attributes: { OBJECTID: member, Name: "M1" } },
            { attributes: { OBJECTID: anonymous, Name: "A1" } },
          ],
          deletes: [owner],
        }),
      ).toEqual({
        addResults: [],
        updateResults: [
          { objectId: owner, globalId: null, success: false, error: DENIED },
          { objectId: member, globalId: null, success: true },
          { objectId: anonymous, globalId: null, success: true },
        ],
        deleteResults: [{ objectId: owner, globalId: null, success: false, error: DENIED }],
      });
      // With rollbackOnFailure (the default) the refusal undoes the member's own edit too.
      const rolled = await one("user", "applyEdits", {
        url: layer(),
        params: {
          updates: [
            { attributes: { OBJECTID: member, Name: "M1 changed" } },
            { attributes: { OBJECTID: owner, Name: "taken" } },
          ],
        },
      });
      expect(rolled.updateResults).toEqual([{ objectId: owner, globalId: null, success: false, error: DENIED }]);
      expect(await seen("publisher")).toContain("O1:publisher");
      expect(await seen("user")).toContain("M1:user");
    });

    it("allows others' updates and deletes once the owner allows them", async () => {
      const owner = mine.owner ?? -1;
      expect(await ownership({ allowOthersToUpdate: true })).toEqual({ success: true });
      expect((await update("user", owner, "O1 by member")).updateResults).toEqual([
        { objectId: owner, globalId: null, success: true },
      ]);
      expect((await edits("user", { deletes: [owner] })).deleteResults).toEqual([
        { objectId: owner, globalId: null, success: false, error: DENIED },
      ]);
      expect(await ownership({ allowOthersToDelete: true })).toEqual({ success: true });
      expect((await edits("user", { deletes: [owner] })).deleteResults).toEqual([
        { objectId: owner, globalId: null, success: true },
      ]);
      expect((await query(tokens.publisher, `objectIds=${owner}&returnCountOnly=true`)).count).toBe(0);
    });

    it("gives anonymous callers only the updates and deletes the owner allows them", async () => {
      const anonymous = await add("anonymous", "A2");
      const member = mine.member ?? -1;
      expect((await update("anonymous", anonymous, "A2")).updateResults).toEqual([
        { objectId: anonymous, globalId: null, success: false, error: DENIED },
      ]);
      expect(await ownership({ allowAnonymousToUpdate: true, allowOthersToUpdate: false })).toEqual({ success: true });
      // What anonymous callers made, yes; a member's feature, no (others' updates are off).
      expect((await update("anonymous", anonymous, "A2")).updateResults).toEqual([
        { objectId: anonymous, globalId: null, success: true },
      ]);
      expect((await update("anonymous", member, "M1")).updateResults).toEqual([
        { objectId: member, globalId: null, success: false, error: DENIED },
      ]);
      expect((await edits("anonymous", { deletes: [anonymous] })).deleteResults).toEqual([
        { objectId: anonymous, globalId: null, success: false, error: DENIED },
      ]);
      expect(await ownership({ allowOthersToQuery: false })).toEqual({ success: true });
      // Anonymous callers see only what anonymous callers made, now that others' features are hidden.
      expect((await seen("anonymous")).every((f) => f.endsWith(":"))).toBe(true);
      expect((await edits("anonymous", { deletes: [member] })).deleteResults).toEqual([
        { objectId: member, globalId: null, success: false, error: MISSING_DELETE },
      ]);
    });

    it("keeps every settings change it answers success for when changes are made at once (others are 409)", async () => {
      const admin = `${url.replace("/rest/services/", "/rest/admin/services/")}/updateDefinition`;
      const keys = ["allowOthersToUpdate", "allowOthersToDelete", "allowAnonymousToUpdate", "allowAnonymousToDelete"];
      const base = Object.fromEntries(keys.map((k) => [k, false]));
      expect(await ownership(base)).toEqual({ success: true });
      const answers = await Promise.all(
        keys.map((k) =>
          postJson(admin, tokens.publisher, {
            updateDefinition: JSON.stringify({ editorTrackingInfo: { [k]: true } }),
          }),
        ),
      );
      for (const a of answers) {
        if ("error" in a)
          expect(a).toMatchObject({ error: { code: 409, message: "Unable to update feature service definition." } });
        else expect(a).toEqual({ success: true });
      }
      expect(answers.some((a) => !("error" in a))).toBe(true);
      const kept = (await getJson(url, tokens.publisher)).editorTrackingInfo as Record<string, boolean>;
      // What was answered success is kept; what was refused is as it was.
      expect(Object.fromEntries(keys.map((k) => [k, kept[k]]))).toEqual(
        Object.fromEntries(keys.map((k, i) => [k, !("error" in (answers[i] ?? {}))])),
      );
    });

    it("hides the attachments of a feature the caller may not query: its list, its bytes, queryAttachments", async () => {
      const admin = `${engine.ready.https}/arcgis/rest/admin/services/Hosted/Access/FeatureServer/0/updateDefinition`;
      expect(
        await one("publisher", "request", {
          url: admin,
          params: { updateDefinition: JSON.stringify({ hasAttachments: true }) },
        }),
      ).toEqual({ success: true });
      const owner = await add("publisher", "O3");
      const [added] = (await attachmentCalls(engine, "publisher", PASSWORDS.publisher, [
        {
          fn: "addAttachment",
          options: {
            url: layer(),
            featureId: owner,
            file: photo,
          },
        },
      ])) as [{ addAttachmentResult?: { objectId: number; success: boolean } }];
      expect(added.addAttachmentResult?.success).toBe(true);
      const attachment = added.addAttachmentResult?.objectId ?? -1;
      // Hidden from others, though others may update: a feature a member cannot see is not theirs to change.
      expect(await ownership({ allowOthersToQuery: false, allowOthersToUpdate: true })).toEqual({ success: true });
      expect((await update("user", owner, "hidden")).updateResults).toEqual([
        { objectId: owner, globalId: null, success: false, error: MISSING_UPDATE },
      ]);
      const notFound = {
        error: {
          code: 404,
          message: "Feature not found.",
          details: [`The layer has no feature with object id ${owner}.`],
        },
      };
      // The owner reads them; the member is told the feature is not there, as a query of it would.
      expect(
        ((await getJson(`${layer()}/${owner}/attachments`, tokens.publisher)).attachmentInfos as unknown[]).length,
      ).toBe(1);
      expect(await getJson(`${layer()}/${owner}/attachments`, tokens.user)).toEqual(notFound);
      const bytes = await call(`${layer()}/${owner}/attachments/${attachment}?token=${tokens.user}`, { ca: engine.ca });
      // ArcGIS's errors are JSON (HTTP 200) unless the request asks otherwise.
      expect(bytes.json()).toEqual(notFound);
      expect(await getJson(`${layer()}/queryAttachments?objectIds=${owner}`, tokens.user)).toEqual({
        attachmentGroups: [],
      });
      expect(
        (
          (await getJson(`${layer()}/queryAttachments?objectIds=${owner}`, tokens.publisher)).attachmentGroups as
            unknown[] | undefined
        )?.length,
      ).toBe(1);
      // Nor may the member attach to it: it is not there for them.
      const [hiddenAdd] = await attachmentCalls(engine, "user", PASSWORDS.user, [
        { fn: "addAttachment", options: { url: layer(), featureId: owner, file: photo } },
      ]);
      expect(hiddenAdd).toMatchObject({ error: { code: 404, message: expect.stringContaining("Feature not found.") } });
      // Once others may query, the member reads them too.
      expect(await ownership({ allowOthersToQuery: true })).toEqual({ success: true });
      expect(
        ((await getJson(`${layer()}/${owner}/attachments`, tokens.user)).attachmentInfos as unknown[]).length,
      ).toBe(1);
    });

    it("refuses a member's change of the attachments of a feature they may not update (1007), on every path", async () => {
      expect(await ownership({ allowOthersToQuery: true, allowOthersToUpdate: false })).toEqual({ success: true });
      const owner = await add("publisher", "O4");
      const addAs = async (who: "publisher" | "user") =>
        (
          await attachmentCalls(engine, who, PASSWORDS[who], [
            { fn: "addAttachment", options: { url: layer(), featureId: owner, file: photo } },
          ])
        )[0] as { addAttachmentResult: { objectId: number } };
      const own = await addAs("publisher");
      const byMember = await addAs("user");
      expect(byMember).toEqual({
        addAttachmentResult: { objectId: -1, globalId: null, success: false, error: DENIED },
      });
      const attachment = own.addAttachmentResult.objectId;
      expect(
        await postJson(`${layer()}/${owner}/deleteAttachments`, tokens.user, { attachmentIds: String(attachment) }),
      ).toEqual({ deleteAttachmentResults: [{ objectId: attachment, globalId: null, success: false, error: DENIED }] });
      // applyEdits' attachments, by the feature's global id: the same rule.
      const features = (await query(tokens.user, `objectIds=${owner}&outFields=GlobalID`)).features as {
        attributes: { GlobalID: string };
      }[];
      const parentGlobalId = features[0]?.attributes.GlobalID ?? "";
      const globalId = `{${crypto.randomUUID().toUpperCase()}}`;
      const edited = await postJson(`${layer()}/applyEdits`, tokens.user, {
        useGlobalIds: "true",
        rollbackOnFailure: "false",
        attachments: JSON.stringify({
          adds: [{ globalId, parentGlobalId, contentType: "image/png", name: "x.png", data: photo.base64 }],
        }),
      });
      expect(edited).toEqual({
        addResults: [],
        updateResults: [],
        deleteResults: [],
        attachments: {
          addResults: [{ objectId: -1, globalId, success: false, error: DENIED }],
          updateResults: [],
          deleteResults: [],
        },
      });
      // The owner's attachment is still there, once; the owner (who manages the service) changes it freely.
      const infos = (await getJson(`${layer()}/${owner}/attachments`, tokens.publisher)).attachmentInfos as unknown[];
      expect(infos).toHaveLength(1);
      expect(
        await postJson(`${layer()}/${owner}/deleteAttachments`, tokens.publisher, {
          attachmentIds: String(attachment),
        }),
      ).toMatchObject({ deleteAttachmentResults: [{ objectId: attachment, success: true }] });
    });
  });
}
