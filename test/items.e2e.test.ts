// Portal items for what is published, and sharing that decides who sees each service: driven through the real
// local engine by the real @esri/arcgis-rest-portal client, and checked on every surface (REST directory, SOAP
// catalog, service URL and content, item, search, getLayers) for every access level and every kind of caller.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCommand, type DemoOrganization, demoOrganization, otherOrganizationToken } from "./helpers/admin.ts";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, signIn as signInAt } from "./helpers/http.ts";
import { soapDescriptions, surfaces as seenOn } from "./helpers/surfaces.ts";
import { publishDemoBasemap, share, waitForJob } from "./helpers/publish.ts";

let engine: RunningEngine;
let org: DemoOrganization;
const tokens: Record<string, string> = {};

const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const server = () => `${engine.ready.https}/arcgis`;

const signIn = (username: string, password: string) => signInAt(rest(), engine.ca, username, password);

/** GET with f=json and the caller's token (none for an anonymous caller). */
const { getJson, postJson } = jsonCalls(() => engine.ca);

const CALLERS = ["anonymous", "member", "other", "owner", "admin"] as const;
type Caller = (typeof CALLERS)[number];
const tokenOf = (caller: Caller) =>
  ({ anonymous: undefined, member: tokens.user, other: tokens.other, owner: tokens.publisher, admin: tokens.admin })[
    caller
  ];

/** Who the rule says sees an item of each access level (another organization's callers only public ones). */
const SEES: Record<string, readonly Caller[]> = {
  public: ["anonymous", "member", "other", "owner", "admin"],
  org: ["member", "owner", "admin"],
  private: ["owner", "admin"],
};

beforeAll(async () => {
  engine = await startEngine();
  org = demoOrganization(engine.dataDir);
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
  tokens.other = await otherOrganizationToken(engine);
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

const publishBasemap = (serviceName: string, folder = "") =>
  publishDemoBasemap(engine, org, tokens.publisher ?? "", serviceName, folder);

describe("items of what is published", () => {
  it("are driven end to end by @esri/arcgis-rest-portal: get, content, search, update, share, name check, user, remove", async () => {
    const { serviceItemId: id, serviceUrl } = await publishBasemap("Client_Basemap");
    const [item, content, found, updated, afterUpdate, shared, afterShare, taken, user, removed, gone, free] =
      (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
        { fn: "getItem", options: { id } },
        { fn: "getUserContent", options: { num: 100 } },
        { fn: "searchItems", options: { q: `owner:publisher AND type:"Map Service" AND title:Client_Basemap` } },
        {
          fn: "updateItem",
          options: {
            item: {
              id,
              title: "Client basemap",
              tags: ["base", "tiles"],
              snippet: "A basemap",
              description: "Levels 0–2",
            },
          },
        },
        { fn: "getItem", options: { id } },
        { fn: "setItemAccess", options: { id, access: "org" } },
        { fn: "getItem", options: { id } },
        { fn: "isServiceNameAvailable", options: { name: "Client_Basemap", type: "Map Service" } },
        { fn: "getUser", options: { username: "publisher" } },
        { fn: "removeItem", options: { id } },
        { fn: "getItem", options: { id } },
        { fn: "isServiceNameAvailable", options: { name: "Client_Basemap", type: "Map Service" } },
      ])) as Record<string, unknown>[];
    expect(item).toMatchObject({
      id,
      owner: "publisher",
      orgId: org.portalId,
      title: "Client_Basemap",
      type: "Map Service",
      url: serviceUrl,
      access: "private",
      tags: [],
      itemControl: "admin",
    });
    // The cache's Web Mercator extent, as WGS84 (the demo basemap covers the world).
    expect((item?.extent as number[][])[0]?.[0]).toBeCloseTo(-180, 3);
    expect((item?.extent as number[][])[1]?.[1]).toBeGreaterThan(85);
    const contentItems = content?.items as { id: string }[];
    expect(contentItems.map((i) => i.id)).toContain(id);
    expect(content).toMatchObject({ username: "publisher", start: 1, num: 100 });
    expect(found).toMatchObject({ total: 1, start: 1, nextStart: -1 });
    expect((found?.results as { id: string }[])[0]?.id).toBe(id);
    expect(updated).toEqual({ success: true, id });
    expect(afterUpdate).toMatchObject({
      title: "Client basemap",
      tags: ["base", "tiles"],
      snippet: "A basemap",
      description: "Levels 0–2",
    });
    expect(shared).toMatchObject({ itemId: id, notSharedWith: [] });
    expect(afterShare).toMatchObject({ access: "org" });
    expect(taken).toEqual({ available: false });
    expect(user).toMatchObject({ username: "publisher", role: "org_publisher", orgId: org.portalId });
    expect(removed).toEqual({ success: true, itemId: id });
    expect(gone).toMatchObject({ error: { code: "CONT_0001" } });
    expect(free).toEqual({ available: true });
    // Unpublished: gone from its URL and the directory, its name free for a new publish.
    expect(await getJson(serviceUrl, tokens.publisher)).toMatchObject({ error: { code: 404 } });
    const root = (await getJson(`${server()}/rest/services`, tokens.admin)).services as { name: string }[];
    expect(root.map((s) => s.name)).not.toContain("Client_Basemap");
    const again = await publishBasemap("Client_Basemap");
    expect(again.serviceItemId).not.toBe(id);
  });

  it("shows a service's description and tags from its item in the service JSON and the SOAP catalog", async () => {
    const { serviceItemId: id, serviceUrl } = await publishBasemap("Described");
    await share(engine, tokens.publisher ?? "", id, { everyone: "true" });
    const update = await postJson(`${rest()}/content/users/publisher/items/${id}/update`, tokens.publisher ?? "", {
      description: "Shown everywhere",
      tags: "one,two",
    });
    expect(update).toEqual({ success: true, id });
    expect(await getJson(serviceUrl)).toMatchObject({ serviceDescription: "Shown everywhere" });
    expect(await soapDescriptions(engine)).toContain("<Description>Shown everywhere</Description>");
  });

  it("makes a data store's registration an item, which getLayers' datastoreId names", async () => {
    const item = await getJson(`${rest()}/content/items/${org.folderStore}`, tokens.publisher);
    expect(item).toMatchObject({ id: org.folderStore, type: "Data Store", owner: "publisher", access: "private" });
    const refused = await postJson(
      `${rest()}/content/users/publisher/items/${org.folderStore}/delete`,
      tokens.publisher ?? "",
    );
    expect(refused).toMatchObject({ error: { code: 400 } });
  });

  it("answers the users operations: profiles by who asks, and the organization's users to administrators", async () => {
    expect(await getJson(`${rest()}/community/users/publisher`, tokens.user)).not.toHaveProperty("email");
    expect(await getJson(`${rest()}/community/users/publisher`, tokens.user)).toMatchObject({ username: "publisher" });
    expect(await getJson(`${rest()}/community/users/publisher`, tokens.admin)).toMatchObject({
      role: "org_publisher",
      email: expect.any(String),
    });
    expect(await getJson(`${rest()}/community/users/publisher`, tokens.other)).toMatchObject({ error: { code: 400 } });
    expect(await getJson(`${rest()}/community/users/publisher`)).toMatchObject({ error: { code: 499 } });
    const users = await getJson(`${rest()}/portals/self/users?num=2`, tokens.admin);
    expect(users).toMatchObject({ total: 3, start: 1, num: 2, nextStart: 3 });
    expect((users.users as { username: string }[]).map((u) => u.username)).toEqual(["admin", "publisher"]);
    expect(await getJson(`${rest()}/portals/self/users`, tokens.user)).toMatchObject({ error: { code: 403 } });
  });

  it("searches with fields, AND/OR, phrases, sorting and paging, and refuses a malformed query", async () => {
    const q = (query: string, extra = "") =>
      getJson(`${rest()}/search?q=${encodeURIComponent(query)}${extra}`, tokens.admin);
    const parcels = await q(`title:Parcels OR title:World_Basemap`, "&sortField=title&sortOrder=asc");
    expect((parcels.results as { title: string }[]).map((r) => r.title)).toEqual(["Parcels", "World_Basemap"]);
    const paged = await q(`orgid:${org.portalId} AND type:"Map Service"`, "&num=1&sortField=title");
    expect(paged).toMatchObject({ start: 1, num: 1, nextStart: 2 });
    expect(await q(`title:(Parcels`)).toMatchObject({ error: { code: 400 } });
    expect(await q(`nosuchfield:x`)).toMatchObject({ error: { code: 400 } });
    // Anonymous callers find public items only.
    const anonymous = await getJson(`${rest()}/search?q=${encodeURIComponent("type:service")}&num=100`);
    expect((anonymous.results as { access: string }[]).every((r) => r.access === "public")).toBe(true);
  });
});

describe("access follows the item on every surface", () => {
  let id = "";
  let serviceUrl = "";
  beforeAll(async () => {
    ({ serviceItemId: id, serviceUrl } = await publishBasemap("Matrix"));
  });

  /** What each surface shows one caller: whether the service (or its item) is there. */
  const surfaces = (caller: Caller) => seenOn(engine, { name: "Matrix", id, serviceUrl }, tokenOf(caller));

  for (const access of ["public", "org", "private"] as const) {
    it(`${access}: every surface agrees, for anonymous callers, members, another organization, the owner and administrators`, async () => {
      const flags: Record<string, string> =
        access === "public" ? { everyone: "true" } : access === "org" ? { org: "true" } : { org: "false" };
      expect(await share(engine, tokens.publisher ?? "", id, flags)).toMatchObject({ itemId: id });
      expect(await getJson(`${rest()}/content/items/${id}`, tokens.publisher)).toMatchObject({ access });
      for (const caller of CALLERS) {
        const seen = await surfaces(caller);
        const sees = SEES[access]?.includes(caller) ?? false;
        if (caller === "other") {
          // Another organization's token is refused by this organization's servers (498), whatever the access;
          // on the portal its holder sees public items only.
          expect(seen, caller).toEqual({
            directory: false,
            soap: false,
            service: false,
            tile: false,
            item: sees,
            search: sees,
          });
          expect(await getJson(`${server()}/rest/services`, tokens.other)).toMatchObject({ error: { code: 498 } });
          continue;
        }
        expect(seen, `${caller} on a ${access} service`).toEqual({
          directory: sees,
          soap: sees,
          service: sees,
          tile: sees,
          item: sees,
          search: sees,
        });
      }
      // Caching: a public tile asked for without a credential may be kept by shared caches; asked for with a token,
      // or of any other service, only by the caller's own.
      const tile = await call(`${serviceUrl}/tile/0/0/0?token=${encodeURIComponent(tokens.admin ?? "")}`, {
        ca: engine.ca,
      });
      expect(tile.headers["cache-control"]).toMatch(/^private/);
      const anonymous = await call(`${serviceUrl}/tile/0/0/0`, { ca: engine.ca });
      expect(anonymous.headers["cache-control"]).toMatch(access === "public" ? /^public/ : /^no-store/);
    });
  }

  it("lets only the owner and administrators share, and refuses bad flags", async () => {
    // A member who can see the item (shared with the organization) still may not share it.
    await share(engine, tokens.publisher ?? "", id, { org: "true" });
    expect(await postJson(`${rest()}/content/items/${id}/share`, tokens.user ?? "", { org: "true" })).toMatchObject({
      error: { code: 403 },
    });
    expect(await postJson(`${rest()}/content/items/${id}/share`, tokens.other ?? "", { org: "true" })).toMatchObject({
      error: { messageCode: "CONT_0001" },
    });
    expect(await postJson(`${rest()}/content/items/${id}/share`, tokens.admin ?? "", { org: "maybe" })).toMatchObject({
      error: { code: 400 },
    });
    const shared = await postJson(`${rest()}/content/items/${id}/share`, tokens.admin ?? "", {
      everyone: "true",
      groups: "g1,g2",
    });
    expect(shared).toEqual({ notSharedWith: ["g1", "g2"], itemId: id });
    expect(await postJson(`${rest()}/content/items/${id}/unshare`, tokens.admin ?? "", { everyone: "true" })).toEqual({
      notUnsharedFrom: [],
      itemId: id,
    });
    expect(await getJson(`${rest()}/content/items/${id}`, tokens.admin)).toMatchObject({ access: "org" });
    // A GET cannot share (state changes are POST only).
    expect(await getJson(`${rest()}/content/items/${id}/share?org=true&token=${tokens.admin}`)).toMatchObject({
      error: { code: 405 },
    });
  });
});

describe("who may share, and what", () => {
  it("takes the role's sharing privileges: without shareToPublic an owner may share with the organization only", async () => {
    const { serviceItemId: id } = await publishBasemap("Privileged");
    const admin = tokens.admin ?? "";
    const portal = `${rest()}/portals/self`;
    const created = await postJson(`${portal}/createRole`, admin, { name: "No Public Sharing" });
    const roleId = String(created.id);
    const privileges = (await getJson(`${rest()}/community/self`, tokens.publisher)).privileges as string[];
    expect(privileges).toContain("portal:user:shareToPublic");
    const without = privileges.filter((p) => p !== "portal:user:shareToPublic");
    expect(
      await postJson(`${portal}/roles/${roleId}/setPrivileges`, admin, {
        privileges: JSON.stringify({ privileges: without }),
      }),
    ).toEqual({ success: true });
    expect(await postJson(`${portal}/updateuserrole`, admin, { user: "publisher", role: roleId })).toMatchObject({
      success: true,
    });
    try {
      const publisher = tokens.publisher ?? "";
      expect(await share(engine, publisher, id, { everyone: "true" })).toMatchObject({ error: { code: 403 } });
      expect(await share(engine, publisher, id, { org: "true" })).toMatchObject({ itemId: id });
      expect(await getJson(`${rest()}/content/items/${id}`, publisher)).toMatchObject({ access: "org" });
    } finally {
      await postJson(`${portal}/updateuserrole`, admin, { user: "publisher", role: "org_publisher" });
    }
    expect(await share(engine, tokens.publisher ?? "", id, { everyone: "true" })).toMatchObject({ itemId: id });
  });

  it("refuses to share a data store's item, which stays private; updating it renames the data store with it", async () => {
    const item = `${rest()}/content/users/publisher/items/${org.folderStore}`;
    const shared = await postJson(`${item}/share`, tokens.admin ?? "", { everyone: "true" });
    expect(shared).toMatchObject({ error: { code: 400 } });
    expect(await postJson(`${item}/update`, tokens.admin ?? "", { title: "Renamed" })).toMatchObject({ success: true });
    expect(await getJson(`${rest()}/content/items/${org.folderStore}`, tokens.admin)).toMatchObject({
      access: "private",
      title: "Renamed",
    });
    const stores = (JSON.parse(adminCommand(engine.dataDir, ["list"])) as { datastores: { datastoreId: string }[] }[])
      .flatMap((o) => o.datastores)
      .filter((d) => d.datastoreId === org.folderStore);
    expect(stores).toEqual([expect.objectContaining({ title: "Renamed" })]);
    expect(await postJson(`${item}/update`, tokens.admin ?? "", { title: "Demo Data Store" })).toMatchObject({
      success: true,
    });
  });

  it("lists another user's content as the caller may see it, and answers absurd search keys with nothing", async () => {
    const { serviceItemId: hidden } = await publishBasemap("Hidden_From_Members");
    const seen = await getJson(`${rest()}/content/users/publisher?num=100`, tokens.user);
    const ids = (seen.items as { id: string; access: string }[]).map((i) => i.id);
    expect(ids).not.toContain(hidden);
    expect((seen.items as { access: string }[]).every((i) => i.access !== "private")).toBe(true);
    const own = await getJson(`${rest()}/content/users/publisher?num=100`, tokens.publisher);
    expect((own.items as { id: string }[]).map((i) => i.id)).toContain(hidden);
    for (const q of [`owner:${"x".repeat(300)}`, `orgid:${"é".repeat(600)}`, `id:${"a".repeat(40)}`]) {
      expect(await getJson(`${rest()}/search?q=${encodeURIComponent(q)}`, tokens.admin), q).toMatchObject({
        total: 0,
        results: [],
      });
    }
  });
});

describe("bulk-published layers", () => {
  it("hides layers from getLayers as their items' access says, and removes a deleted layer's pair and service", async () => {
    const started = await postJson(
      `${rest()}/portals/self/datastores/allDatasets/publishLayers`,
      tokens.publisher ?? "",
      { datastoreId: org.folderStore, serverId: org.serverId, serverFolder: "Layers", templateSvcConfig: "{}" },
    );
    await waitForJob(engine, tokens.publisher ?? "", String(started.jobId), String(started.key));
    const layers = async (token: string | undefined) =>
      (
        (await getJson(`${rest()}/portals/self/datastores/getLayers?datastoreId=${org.folderStore}`, token))
          .layerAndDatasets as { layer: { id: string; url: string } }[]
      ).map((p) => p.layer);
    const all = await layers(tokens.publisher);
    expect(all.length).toBeGreaterThan(1);
    expect(await layers(tokens.admin)).toHaveLength(all.length);
    // Every layer is an item of its own (private, as new items are), titled after its dataset.
    const first = all[0] as { id: string; url: string };
    expect(await getJson(`${rest()}/content/items/${first.id}`, tokens.publisher)).toMatchObject({
      type: "Feature Service",
      access: "private",
      url: first.url,
    });
    // Deleting a layer's item (here by an administrator) unpublishes it and removes its pair.
    expect(await postJson(`${rest()}/content/users/publisher/items/${first.id}/delete`, tokens.admin ?? "")).toEqual({
      success: true,
      itemId: first.id,
    });
    const after = await layers(tokens.publisher);
    expect(after.map((l) => l.id)).not.toContain(first.id);
    expect(after).toHaveLength(all.length - 1);
    expect(await getJson(first.url, tokens.admin)).toMatchObject({ error: { code: 404 } });
    // publishLayers again makes the missing layer anew (synchronizing), with the same item id. An administrator
    // runs it this time, so the new layer's item is the administrator's, private: the data store's owner does
    // not see it in getLayers until it is shared with the organization.
    const again = await postJson(`${rest()}/portals/self/datastores/allDatasets/publishLayers`, tokens.admin ?? "", {
      datastoreId: org.folderStore,
      serverId: org.serverId,
      serverFolder: "Layers",
      templateSvcConfig: "{}",
    });
    await waitForJob(engine, tokens.admin ?? "", String(again.jobId), String(again.key));
    expect((await layers(tokens.admin)).map((l) => l.id)).toContain(first.id);
    expect((await layers(tokens.publisher)).map((l) => l.id)).not.toContain(first.id);
    expect(await getJson(`${rest()}/content/items/${first.id}`, tokens.admin)).toMatchObject({ owner: "admin" });
    await share(engine, tokens.admin ?? "", first.id, { org: "true" });
    expect((await layers(tokens.publisher)).map((l) => l.id)).toContain(first.id);
    expect(await layers(tokens.publisher)).toHaveLength(all.length);
  });
});

describe("concurrent sharing and deleting", () => {
  it("50 concurrent shares, unshares and deletes of one item leave one consistent state", async () => {
    for (const round of [0, 1]) {
      const name = `Contended_${round}`;
      const { serviceItemId: id, serviceUrl } = await publishBasemap(name);
      const token = tokens.publisher ?? "";
      const requests = Array.from({ length: 50 }, (_, i) => {
        // Round 0 mixes in deletes; round 1 only shares and unshares.
        if (round === 0 && i % 17 === 16)
          return postJson(`${rest()}/content/users/publisher/items/${id}/delete`, token);
        const kind = i % 4;
        if (kind === 0) return postJson(`${rest()}/content/items/${id}/share`, token, { everyone: "true" });
        if (kind === 1) return postJson(`${rest()}/content/items/${id}/share`, token, { org: "true" });
        if (kind === 2) return postJson(`${rest()}/content/items/${id}/unshare`, token, { org: "true" });
        return postJson(`${rest()}/content/items/${id}/unshare`, token, { everyone: "true" });
      });
      const answers = await Promise.all(requests);
      // Every answer is a success or a clean "item gone", never an internal error.
      for (const a of answers) {
        if ("error" in a)
          expect((a.error as { messageCode: unknown }).messageCode, JSON.stringify(a)).toBe("CONT_0001");
      }
      const item = await getJson(`${rest()}/content/items/${id}`, tokens.admin);
      const listed = async (token?: string) =>
        ((await getJson(`${server()}/rest/services`, token)).services as { name: string }[]).some(
          (s) => s.name === name,
        );
      const soapListed = async (token?: string) =>
        (await soapDescriptions(engine, token)).includes(`<Name>${name}</Name>`);
      if (round === 0) {
        // The delete won: no item, no service anywhere, the name free.
        expect(item).toMatchObject({ error: { messageCode: "CONT_0001" } });
        expect(await listed(tokens.admin)).toBe(false);
        expect(await soapListed(tokens.admin)).toBe(false);
        expect(await getJson(serviceUrl, tokens.admin)).toMatchObject({ error: { code: 404 } });
        const free = await getJson(
          `${rest()}/portals/self/isServiceNameAvailable?name=${name}&type=Map%20Service`,
          tokens.publisher,
        );
        expect(free).toEqual({ available: true });
        continue;
      }
      // The item and its service agree on who sees it, on every surface.
      const access = item.access as string;
      expect(["public", "org", "private"]).toContain(access);
      expect(await listed()).toBe(access === "public");
      expect(await soapListed()).toBe(access === "public");
      expect(await listed(tokens.user)).toBe(access !== "private");
      expect(await soapListed(tokens.user)).toBe(access !== "private");
      expect(await listed(tokens.admin)).toBe(true);
    }
  });
});
