// Groups as the portal's unit of sharing, through the real local engine: the group operations driven by the real
// @esri/arcgis-rest-portal client, and who sees a group-shared service on every surface (REST directory, SOAP
// catalog, service JSON, tiles, feature queries, the item, search, getLayers) for members, non-members, former
// members, the owner, administrators, anonymous callers and another organization, on the very next request
// after each change.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCommand, type DemoOrganization, demoOrganization, otherOrganizationToken } from "./helpers/admin.ts";
import { portalCalls } from "./helpers/arcgis.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, jsonCalls, signIn as signInAt } from "./helpers/http.ts";
import { soapDescriptions, surfaces as seenOn } from "./helpers/surfaces.ts";
import { publish, publishDemoBasemap, waitForJob } from "./helpers/publish.ts";

const EXTRA = ["viewer", "former", "joiner"] as const;
const password = (name: string) => `${name}-Pass-1234`;

let engine: RunningEngine;
let org: DemoOrganization;
const tokens: Record<string, string> = {};

const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const server = () => `${engine.ready.https}/arcgis`;

const signIn = (username: string, password: string) => signInAt(rest(), engine.ca, username, password);

const { getJson, postJson } = jsonCalls(() => engine.ca);

const community = () => `${rest()}/community`;

async function newGroup(token: string, fields: Record<string, string>): Promise<string> {
  const created = await postJson(`${community()}/createGroup`, token, { title: "A group", ...fields });
  const id = (created.group as { id?: string } | undefined)?.id;
  if (!id) throw new Error(JSON.stringify(created));
  return id;
}

const shareWith = (token: string, itemId: string, groups: string, unshare = false) =>
  postJson(`${rest()}/content/items/${itemId}/${unshare ? "unshare" : "share"}`, token, { groups });

const publishBasemap = (serviceName: string) => publishDemoBasemap(engine, org, tokens.publisher ?? "", serviceName);

beforeAll(async () => {
  engine = await startEngine();
  org = demoOrganization(engine.dataDir);
  for (const name of EXTRA) {
    adminCommand(engine.dataDir, ["add-user", "--portal", org.portalId, "--username", name, "--role", "org_user"], {
      MAPGATE_USER_PASSWORD: password(name),
    });
  }
  tokens.admin = await signIn("admin", PASSWORDS.admin);
  tokens.publisher = await signIn("publisher", PASSWORDS.publisher);
  tokens.user = await signIn("user", PASSWORDS.user);
  for (const name of EXTRA) tokens[name] = await signIn(name, password(name));
  tokens.other = await otherOrganizationToken(engine);
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("groups through @esri/arcgis-rest-portal", () => {
  it("create, get, search, update, join, members, add and remove users, share, content, unshare, leave, remove", async () => {
    const { serviceItemId: itemId } = await publishBasemap("Group_Client");
    const [created, searched, updated] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      {
        fn: "createGroup",
        options: {
          group: { title: "Field crew", access: "org", tags: ["crew", "field"], snippet: "Crew maps", autoJoin: true },
        },
      },
      { fn: "searchGroups", options: { q: `title:"Field crew" AND tags:crew` } },
      { fn: "getGroup", options: { id: "placeholder" } },
    ])) as Record<string, unknown>[];
    expect(created).toMatchObject({ success: true, group: { title: "Field crew", owner: "publisher", access: "org" } });
    const groupId = (created?.group as { id: string }).id;
    expect(groupId).toMatch(/^[0-9a-f]{32}$/);
    expect((searched?.results as { id: string }[]).map((g) => g.id)).toEqual([groupId]);
    expect(updated).toMatchObject({ error: {} });

    const [joined, seen] = (await portalCalls(engine, "user", PASSWORDS.user, [
      { fn: "joinGroup", options: { id: groupId } },
      { fn: "getGroup", options: { id: groupId } },
    ])) as Record<string, unknown>[];
    expect(joined).toEqual({ success: true, groupId });
    expect(seen).toMatchObject({ id: groupId, userMembership: { username: "user", memberType: "member" } });

    const steps = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "updateGroup", options: { group: { id: groupId, snippet: "Maps for the crew" } } },
      { fn: "getGroup", options: { id: groupId } },
      { fn: "addGroupUsers", options: { id: groupId, users: ["viewer"] } },
      { fn: "getGroupUsers", options: { id: groupId } },
      { fn: "removeGroupUsers", options: { id: groupId, users: ["viewer"] } },
      { fn: "shareItemWithGroup", options: { id: itemId, groupId } },
      { fn: "getItemGroups", options: { id: itemId } },
      { fn: "getGroupContent", options: { id: groupId } },
      { fn: "getItem", options: { id: itemId } },
    ])) as Record<string, unknown>[];
    const [update, afterUpdate, added, users, removed, shared, itemGroups, content, item] = steps;
    expect(update).toMatchObject({ success: true, groupId });
    expect(afterUpdate).toMatchObject({ snippet: "Maps for the crew", userMembership: { memberType: "owner" } });
    expect(added).toMatchObject({ notAdded: [] });
    expect(users).toEqual({
      owner: "publisher",
      admins: ["publisher"],
      users: expect.arrayContaining(["user", "viewer"]),
    });
    expect(removed).toMatchObject({ notRemoved: [] });
    expect(shared).toMatchObject({ itemId, notSharedWith: [] });
    expect((itemGroups?.admin as { id: string }[]).map((g) => g.id)).toEqual([groupId]);
    expect((content?.items as { id: string }[]).map((i) => i.id)).toEqual([itemId]);
    expect(item).toMatchObject({ access: "shared", sharing: { access: "private", groups: [groupId] } });

    // The member sees the item and its group's content; the user's profile lists the group.
    const [memberContent, memberItem, self] = (await portalCalls(engine, "user", PASSWORDS.user, [
      { fn: "getGroupContent", options: { id: groupId } },
      { fn: "getItem", options: { id: itemId } },
      { fn: "getUser", options: {} },
    ])) as Record<string, unknown>[];
    expect((memberContent?.items as { id: string }[]).map((i) => i.id)).toEqual([itemId]);
    expect(memberItem).toMatchObject({ id: itemId });
    expect((self?.groups as { id: string }[]).map((g) => g.id)).toContain(groupId);

    const [unshared, emptied, left] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "unshareItemWithGroup", options: { id: itemId, groupId } },
      { fn: "getGroupContent", options: { id: groupId } },
      { fn: "getGroup", options: { id: groupId } },
    ])) as Record<string, unknown>[];
    expect(unshared).toMatchObject({ itemId, notUnsharedFrom: [] });
    expect(emptied).toMatchObject({ total: 0, items: [] });
    expect(left).toMatchObject({ id: groupId });
    const [leaving, gone] = (await portalCalls(engine, "user", PASSWORDS.user, [
      { fn: "leaveGroup", options: { id: groupId } },
      { fn: "getItem", options: { id: itemId } },
    ])) as Record<string, unknown>[];
    expect(leaving).toEqual({ success: true, groupId });
    expect(gone).toMatchObject({ error: {} });
    const [removedGroup, afterRemove] = (await portalCalls(engine, "publisher", PASSWORDS.publisher, [
      { fn: "removeGroup", options: { id: groupId } },
      { fn: "getGroup", options: { id: groupId } },
    ])) as Record<string, unknown>[];
    expect(removedGroup).toEqual({ success: true, groupId });
    expect(afterRemove).toMatchObject({ error: {} });
  });
});

describe("sharing another member's item through @esri/arcgis-rest-portal", () => {
  it("lets an administrator share it with a group, and the group's owner take it out again", async () => {
    const { serviceItemId: id } = await publishBasemap("Group_Others_Item");
    const groupId = await newGroup(tokens.user ?? "", { title: "User's crew", access: "org" });
    // The administrator is not in the group: the client adds them, shares, and takes them out again.
    const [shared, groups] = (await portalCalls(engine, "admin", PASSWORDS.admin, [
      { fn: "shareItemWithGroup", options: { id, groupId, owner: "publisher" } },
      { fn: "getItemGroups", options: { id } },
    ])) as Record<string, unknown>[];
    expect(shared).toMatchObject({ itemId: id, notSharedWith: [] });
    expect((groups?.other as { id: string }[]).map((g) => g.id)).toEqual([groupId]);
    const users = await getJson(`${community()}/groups/${groupId}/users`, tokens.user);
    expect(users).toEqual({ owner: "user", admins: ["user"], users: [] });
    // The group's owner sees the item through the group and may take it out, though not its owner.
    const [unshared, after] = (await portalCalls(engine, "user", PASSWORDS.user, [
      { fn: "unshareItemWithGroup", options: { id, groupId, owner: "publisher" } },
      { fn: "getItem", options: { id } },
    ])) as Record<string, unknown>[];
    expect(unshared).toMatchObject({ itemId: id, notUnsharedFrom: [] });
    expect(after).toMatchObject({ error: {} });
    // A plain member may not: nothing is taken out.
    await shareWith(tokens.admin ?? "", id, groupId);
    await postJson(`${community()}/groups/${groupId}/addUsers`, tokens.user ?? "", { users: "viewer" });
    expect(await shareWith(tokens.viewer ?? "", id, groupId, true)).toEqual({
      notUnsharedFrom: [groupId],
      itemId: id,
    });
    expect(await postJson(`${rest()}/content/items/${id}/unshare`, tokens.viewer ?? "", { org: "true" })).toMatchObject(
      {
        error: { code: 403 },
      },
    );
  });
});

describe("a group-shared service on every surface", () => {
  const CALLERS = ["anonymous", "member", "nonmember", "former", "owner", "admin", "other"] as const;
  type Caller = (typeof CALLERS)[number];
  const tokenOf = (c: Caller) =>
    ({
      anonymous: undefined,
      member: tokens.user,
      nonmember: tokens.viewer,
      former: tokens.former,
      owner: tokens.publisher,
      admin: tokens.admin,
      other: tokens.other,
    })[c];

  let id = "";
  let serviceUrl = "";
  let groupId = "";

  beforeAll(async () => {
    ({ serviceItemId: id, serviceUrl } = await publishBasemap("Group_Matrix"));
    groupId = await newGroup(tokens.publisher ?? "", { title: "Matrix crew", access: "org", autoJoin: "true" });
    for (const who of ["user", "former"]) {
      expect(await postJson(`${community()}/groups/${groupId}/join`, tokens[who] ?? "")).toEqual({
        success: true,
        groupId,
      });
    }
  });

  const surfaces = (caller: Caller) => seenOn(engine, { name: "Group_Matrix", id, serviceUrl }, tokenOf(caller));

  async function expectSeenBy(who: readonly Caller[], label: string) {
    for (const caller of CALLERS) {
      const sees = who.includes(caller);
      const seen = await surfaces(caller);
      expect(seen, `${caller}: ${label}`).toEqual({
        directory: sees,
        soap: sees,
        service: sees,
        tile: sees,
        item: sees,
        search: sees,
      });
    }
  }

  it("shows it to members and nobody else beyond the owner and administrators, and takes it from a former member at once", async () => {
    // Warm every cache first (the former member still sees it), so what follows proves none of them is stale.
    expect(await shareWith(tokens.publisher ?? "", id, groupId)).toEqual({ notSharedWith: [], itemId: id });
    await expectSeenBy(["member", "former", "owner", "admin"], "shared with the group, before leaving");
    expect(await postJson(`${community()}/groups/${groupId}/leave`, tokens.former ?? "")).toEqual({
      success: true,
      groupId,
    });
    await expectSeenBy(["member", "owner", "admin"], "shared with the group, after one member left");
    // I3S content follows the same rule: a scene layer shared with the group, read as each caller.
    const scene = await publish(engine, {
      token: tokens.publisher ?? "",
      serverId: org.serverId,
      type: "SceneServer",
      serviceName: "Group_Scene",
      store: org.folderStore,
      path: "/caches/scene/Buildings3D",
    });
    expect(await shareWith(tokens.publisher ?? "", scene.serviceItemId, groupId)).toMatchObject({ notSharedWith: [] });
    for (const caller of CALLERS) {
      const layer = await getJson(`${scene.serviceUrl}/layers/0`, tokenOf(caller));
      expect("error" in layer, `${caller} reading a group-shared scene layer`).toBe(
        !["member", "owner", "admin"].includes(caller),
      );
    }
    // Another organization's token is refused by this organization's servers; on the portal it sees nothing.
    expect(await getJson(`${server()}/rest/services`, tokens.other)).toMatchObject({ error: { code: 498 } });
    // A private tile is never for shared caches.
    const tile = await call(`${serviceUrl}/tile/0/0/0?token=${encodeURIComponent(tokens.user ?? "")}`, {
      ca: engine.ca,
    });
    expect(tile.headers["cache-control"]).toMatch(/^private/);
  });

  it("adds the group to org and public sharing, and takes the service away when unshared or the group is deleted", async () => {
    await postJson(`${rest()}/content/items/${id}/share`, tokens.publisher ?? "", { org: "true" });
    await expectSeenBy(["member", "nonmember", "former", "owner", "admin"], "org and the group");
    await postJson(`${rest()}/content/items/${id}/unshare`, tokens.publisher ?? "", { org: "true" });
    await expectSeenBy(["member", "owner", "admin"], "the group again");
    expect(await shareWith(tokens.publisher ?? "", id, groupId, true)).toEqual({ notUnsharedFrom: [], itemId: id });
    await expectSeenBy(["owner", "admin"], "unshared from the group");
    await shareWith(tokens.publisher ?? "", id, groupId);
    await expectSeenBy(["member", "owner", "admin"], "shared again");
    expect(await postJson(`${community()}/groups/${groupId}/delete`, tokens.publisher ?? "")).toEqual({
      success: true,
      groupId,
    });
    await expectSeenBy(["owner", "admin"], "the group deleted");
    expect(await getJson(`${rest()}/content/items/${id}`, tokens.publisher)).toMatchObject({
      access: "private",
      sharing: { groups: [] },
    });
    const self = await getJson(`${community()}/self`, tokens.user);
    expect((self.groups as { id: string }[]).map((g) => g.id)).not.toContain(groupId);
  });

  it("lists a group-shared bulk-published layer in getLayers for a member, and answers its feature queries", async () => {
    const started = await postJson(`${rest()}/portals/self/datastores/allDatasets/publishLayers`, tokens.admin ?? "", {
      datastoreId: org.folderStore,
      serverId: org.serverId,
      serverFolder: "GroupLayers",
      templateSvcConfig: "{}",
    });
    await waitForJob(engine, tokens.admin ?? "", String(started.jobId), String(started.key));
    const layers = async (token: string | undefined) =>
      (
        (await getJson(`${rest()}/portals/self/datastores/getLayers?datastoreId=${org.folderStore}`, token))
          .layerAndDatasets as { layer: { id: string; url: string } }[]
      ).map((p) => p.layer);
    const adminLayers = (await layers(tokens.admin)).filter((l) => l.url.includes("/GroupLayers/"));
    const layer = adminLayers.find((l) => l.url.includes("FeatureServer"));
    if (!layer) throw new Error("no feature layer published");
    // The data store's owner (publisher) does not see the administrator's private layer until it is shared with
    // a group they are in.
    expect((await layers(tokens.publisher)).map((l) => l.id)).not.toContain(layer.id);
    const crew = await newGroup(tokens.publisher ?? "", { title: "Layer crew", access: "private" });
    await postJson(`${community()}/groups/${crew}/addUsers`, tokens.publisher ?? "", { users: "user" });
    expect(await shareWith(tokens.admin ?? "", layer.id, crew)).toEqual({ notSharedWith: [], itemId: layer.id });
    expect((await layers(tokens.publisher)).map((l) => l.id)).toContain(layer.id);
    const count = async (token?: string) =>
      getJson(`${layer.url}/0/query?where=1%3D1&returnCountOnly=true`, token).then((a) => a.count);
    expect(await count(tokens.user)).toEqual(expect.any(Number));
    expect(await count(tokens.viewer)).toBeUndefined();
    await postJson(`${community()}/groups/${crew}/removeUsers`, tokens.publisher ?? "", { users: "user" });
    expect(await count(tokens.user)).toBeUndefined();
  });
});

describe("who may do what with groups", () => {
  it("shares only to groups the caller may share to, and honours view-only groups", async () => {
    const { serviceItemId: id } = await publishBasemap("Group_Rules");
    const open = await newGroup(tokens.admin ?? "", { title: "Admins' open group", access: "org", autoJoin: "true" });
    const viewOnly = await newGroup(tokens.admin ?? "", {
      title: "Read-only",
      access: "org",
      autoJoin: "true",
      isViewOnly: "true",
    });
    // Not a member of either: both refused, nothing shared.
    const refused = await shareWith(tokens.publisher ?? "", id, `${open},${viewOnly},${"0".repeat(32)}`);
    expect(refused).toEqual({ notSharedWith: [open, viewOnly, "0".repeat(32)], itemId: id });
    await postJson(`${community()}/groups/${open}/join`, tokens.publisher ?? "");
    await postJson(`${community()}/groups/${viewOnly}/join`, tokens.publisher ?? "");
    // A plain member shares to an open group, never to a view-only one.
    expect(await shareWith(tokens.publisher ?? "", id, `${open},${viewOnly}`)).toEqual({
      notSharedWith: [viewOnly],
      itemId: id,
    });
    // Another organization's group is never shared to, even by its administrator's hand.
    const foreign = await newGroup(tokens.other ?? "", { title: "Elsewhere", access: "public", autoJoin: "true" });
    expect(await shareWith(tokens.admin ?? "", id, foreign)).toEqual({ notSharedWith: [foreign], itemId: id });
    expect(await postJson(`${community()}/groups/${foreign}/join`, tokens.user ?? "")).toMatchObject({
      error: { code: 403 },
    });
    // A member may not manage the group; the owner may not be removed.
    expect(
      await postJson(`${community()}/groups/${open}/update`, tokens.publisher ?? "", { title: "x" }),
    ).toMatchObject({ error: { code: 403 } });
    expect(await postJson(`${community()}/groups/${open}/removeUsers`, tokens.admin ?? "", { users: "admin" })).toEqual(
      { notRemoved: ["admin"] },
    );
    expect(await postJson(`${community()}/groups/${open}/leave`, tokens.admin ?? "")).toMatchObject({
      error: { code: 400 },
    });
  });

  it("keeps private groups from non-members, and anonymous callers to public groups", async () => {
    const hidden = await newGroup(tokens.publisher ?? "", { title: "Hidden crew", access: "private" });
    const shown = await newGroup(tokens.publisher ?? "", { title: "Shown crew", access: "public" });
    expect(await getJson(`${community()}/groups/${hidden}`, tokens.user)).toMatchObject({ error: { code: 400 } });
    expect(await getJson(`${community()}/groups/${hidden}`, tokens.admin)).toMatchObject({ id: hidden });
    expect(await getJson(`${community()}/groups/${hidden}`)).toMatchObject({ error: { code: 499 } });
    expect(await getJson(`${community()}/groups/${shown}`)).toMatchObject({ id: shown, access: "public" });
    const anonymous = await getJson(`${community()}/groups?q=${encodeURIComponent("crew")}&num=100`);
    const ids = (anonymous.results as { id: string }[]).map((g) => g.id);
    expect(ids).toContain(shown);
    expect(ids).not.toContain(hidden);
    expect(await postJson(`${community()}/groups/${hidden}/join`, tokens.user ?? "")).toMatchObject({
      error: { code: 400 },
    });
    expect(await postJson(`${community()}/createGroup`, tokens.user ?? "", { title: "" })).toMatchObject({
      error: { code: 400 },
    });
    expect(
      await postJson(`${community()}/createGroup`, tokens.user ?? "", { title: "x", access: "world" }),
    ).toMatchObject({ error: { code: 400 } });
    expect(await getJson(`${community()}/createGroup?title=x`, tokens.user)).toMatchObject({ error: { code: 405 } });
    expect(await getJson(`${community()}/nothing/here`, tokens.user)).toMatchObject({ error: { code: 404 } });
  });

  it("joins invitation-only groups by invitation, and other groups by an accepted request", async () => {
    const invited = await newGroup(tokens.publisher ?? "", {
      title: "Invited crew",
      access: "org",
      isInvitationOnly: "true",
    });
    expect(await postJson(`${community()}/groups/${invited}/join`, tokens.joiner ?? "")).toMatchObject({
      error: { code: 403 },
    });
    expect(
      await postJson(`${community()}/groups/${invited}/invite`, tokens.publisher ?? "", { users: "joiner" }),
    ).toEqual({ success: true, notInvited: [] });
    const list = await getJson(`${community()}/users/joiner/invitations`, tokens.joiner);
    expect((list.userInvitations as { groupId?: string; id: string }[]).map((i) => i.id)).toEqual([invited]);
    expect(await getJson(`${community()}/users/joiner/invitations`, tokens.user)).toMatchObject({
      error: { code: 403 },
    });
    expect(
      await postJson(`${community()}/users/joiner/invitations/${invited}/accept`, tokens.joiner ?? ""),
    ).toMatchObject({ success: true, groupId: invited });
    expect(await getJson(`${community()}/groups/${invited}`, tokens.joiner)).toMatchObject({
      userMembership: { memberType: "member" },
    });

    const asking = await newGroup(tokens.publisher ?? "", { title: "Asking crew", access: "org" });
    expect(await postJson(`${community()}/groups/${asking}/join`, tokens.joiner ?? "")).toEqual({
      success: true,
      groupId: asking,
    });
    expect(await getJson(`${community()}/groups/${asking}`, tokens.joiner)).toMatchObject({
      userMembership: { memberType: "none" },
    });
    const applications = await getJson(`${community()}/groups/${asking}/applications`, tokens.publisher);
    expect((applications.applications as { username: string }[]).map((a) => a.username)).toEqual(["joiner"]);
    expect(await getJson(`${community()}/groups/${asking}/applications`, tokens.joiner)).toMatchObject({
      error: { code: 403 },
    });
    expect(
      await postJson(`${community()}/groups/${asking}/applications/joiner/accept`, tokens.publisher ?? ""),
    ).toEqual({ success: true, username: "joiner", groupId: asking });
    expect(await getJson(`${community()}/groups/${asking}`, tokens.joiner)).toMatchObject({
      userMembership: { memberType: "member" },
    });
  });

  it("takes the group privileges from the role: without joinGroup or createGroup a member may do neither", async () => {
    const admin = tokens.admin ?? "";
    const portal = `${rest()}/portals/self`;
    const self = await getJson(`${community()}/self`, admin);
    expect(self.privileges).toEqual(
      expect.arrayContaining(["portal:admin:updateGroups", "portal:admin:deleteGroups", "portal:user:joinGroup"]),
    );
    const role = String((await postJson(`${portal}/createRole`, admin, { name: "No Groups" })).id);
    const privileges = ((await getJson(`${community()}/self`, tokens.viewer)).privileges as string[]).filter(
      (p) => p !== "portal:user:joinGroup" && p !== "portal:user:createGroup",
    );
    await postJson(`${portal}/roles/${role}/setPrivileges`, admin, { privileges: JSON.stringify({ privileges }) });
    await postJson(`${portal}/updateuserrole`, admin, { user: "viewer", role });
    const open = await newGroup(admin, { title: "Anyone", access: "org", autoJoin: "true" });
    expect(await postJson(`${community()}/groups/${open}/join`, tokens.viewer ?? "")).toMatchObject({
      error: { code: 403 },
    });
    expect(await postJson(`${community()}/createGroup`, tokens.viewer ?? "", { title: "Mine" })).toMatchObject({
      error: { code: 403 },
    });
    // Without viewOrgGroups the organization's groups are not even seen.
    expect(await getJson(`${community()}/groups/${open}`, tokens.viewer)).toMatchObject({ id: open });
    await postJson(`${portal}/roles/${role}/setPrivileges`, admin, {
      privileges: JSON.stringify({ privileges: privileges.filter((p) => p !== "portal:user:viewOrgGroups") }),
    });
    expect(await getJson(`${community()}/groups/${open}`, tokens.viewer)).toMatchObject({ error: { code: 400 } });
    await postJson(`${portal}/updateuserrole`, admin, { user: "viewer", role: "org_user" });
    expect(await postJson(`${community()}/groups/${open}/join`, tokens.viewer ?? "")).toEqual({
      success: true,
      groupId: open,
    });
  });
});

describe("join requests at ArcGIS's paths, and each user's membership", () => {
  it("createApplication, applications, applications/<u>, accept and decline; userMembership on self, users/<u> and the group", async () => {
    const groupId = await newGroup(tokens.publisher ?? "", {
      title: "Applied crew",
      access: "org",
      isInvitationOnly: "true",
    });
    const group = `${community()}/groups/${groupId}`;
    // join keeps to invitations in an invitation-only group; createApplication asks its managers.
    expect(await postJson(`${group}/join`, tokens.joiner ?? "")).toMatchObject({ error: { code: 403 } });
    for (const who of ["joiner", "former"]) {
      expect(await postJson(`${group}/createApplication`, tokens[who] ?? "")).toEqual({ success: true, groupId });
    }
    // Asking again changes nothing.
    expect(await postJson(`${group}/createApplication`, tokens.joiner ?? "")).toEqual({ success: true, groupId });
    expect(await getJson(`${group}/createApplication`, tokens.joiner)).toMatchObject({ error: { code: 405 } });
    expect(await getJson(group, tokens.publisher)).toMatchObject({
      userMembership: { username: "publisher", memberType: "owner", applications: 2 },
    });
    const listed = await getJson(`${group}/applications`, tokens.publisher);
    expect(listed).toEqual({
      applications: expect.arrayContaining([
        { username: "joiner", fullname: "joiner", received: expect.any(Number) },
        { username: "former", fullname: "former", received: expect.any(Number) },
      ]),
    });
    expect(listed.applications).toHaveLength(2);
    expect(await getJson(`${group}/applications/joiner`, tokens.publisher)).toEqual({
      username: "joiner",
      fullname: "joiner",
      received: expect.any(Number),
    });
    // Only the group's managers (and administrators) read or answer them.
    expect(await getJson(`${group}/applications/joiner`, tokens.joiner)).toMatchObject({ error: { code: 403 } });
    expect(await postJson(`${group}/applications/former/accept`, tokens.joiner ?? "")).toMatchObject({
      error: { code: 403 },
    });
    expect(await getJson(`${group}/applications/user`, tokens.publisher)).toMatchObject({ error: { code: 400 } });
    expect(await postJson(`${group}/applications/joiner/accept`, tokens.publisher ?? "")).toEqual({
      success: true,
      username: "joiner",
      groupId,
    });
    expect(await postJson(`${group}/applications/former/decline`, tokens.admin ?? "")).toEqual({
      success: true,
      username: "former",
      groupId,
    });
    expect(await postJson(`${group}/applications/former/decline`, tokens.publisher ?? "")).toMatchObject({
      error: { code: 400 },
    });
    expect(await getJson(`${group}/applications`, tokens.publisher)).toEqual({ applications: [] });
    expect(await getJson(group, tokens.publisher)).toMatchObject({ userMembership: { applications: 0 } });

    // Each group on community/self and community/users/<u> carries that user's membership; the count of
    // pending applications only for the group's owner and managers, and only to the user and administrators.
    const mine = async (token: string | undefined, url: string) =>
      ((await getJson(url, token)).groups as { id: string; userMembership?: unknown }[]).find((g) => g.id === groupId)
        ?.userMembership;
    expect(await mine(tokens.joiner, `${community()}/self`)).toEqual({ username: "joiner", memberType: "member" });
    expect(await mine(tokens.publisher, `${community()}/self`)).toEqual({
      username: "publisher",
      memberType: "owner",
      applications: 0,
    });
    expect(await mine(tokens.admin, `${community()}/users/publisher`)).toEqual({
      username: "publisher",
      memberType: "owner",
      applications: 0,
    });
    expect(await mine(tokens.joiner, `${community()}/users/publisher`)).toEqual({
      username: "publisher",
      memberType: "owner",
    });
    // The client reads a group's userMembership to tell what the caller is in it.
    const [joined, self] = (await portalCalls(engine, "joiner", password("joiner"), [
      { fn: "getUserMembership", options: { groupId } },
      { fn: "getUser", options: {} },
    ])) as [string, { groups: { id: string; userMembership: unknown }[] }];
    expect(joined).toBe("member");
    expect(self.groups.find((g) => g.id === groupId)?.userMembership).toEqual({
      username: "joiner",
      memberType: "member",
    });
    const [declined] = await portalCalls(engine, "former", password("former"), [
      { fn: "getUserMembership", options: { groupId } },
    ]);
    expect(declined).toBe("none");
    // A manager adding an applicant answers their request.
    expect(await postJson(`${group}/createApplication`, tokens.former ?? "")).toEqual({ success: true, groupId });
    expect(await postJson(`${group}/addUsers`, tokens.publisher ?? "", { users: "former" })).toEqual({ notAdded: [] });
    expect(await getJson(`${group}/applications`, tokens.publisher)).toEqual({ applications: [] });
    expect(await getJson(group, tokens.publisher)).toMatchObject({ userMembership: { applications: 0 } });
  });
});

describe("group titles", () => {
  const created = (answer: Record<string, unknown>) => (answer.group as { id?: string } | undefined)?.id;
  const taken = (title: string, what = "create") => ({
    error: {
      code: 400,
      message: `Unable to ${what} group.`,
      details: [`You already have a group named '${title}'. Try a different name.`],
    },
  });

  it("are unique within an organization in any letter case, on create and update, and free again once changed", async () => {
    const first = await newGroup(tokens.publisher ?? "", { title: "Unique crew", access: "org" });
    expect(await postJson(`${community()}/createGroup`, tokens.user ?? "", { title: "UNIQUE crew" })).toEqual(
      taken("UNIQUE crew"),
    );
    // Another organization has its own titles.
    expect(created(await postJson(`${community()}/createGroup`, tokens.other ?? "", { title: "Unique crew" }))).toMatch(
      /^[0-9a-f]{32}$/,
    );
    const second = await newGroup(tokens.user ?? "", { title: "Second crew" });
    expect(
      await postJson(`${community()}/groups/${second}/update`, tokens.user ?? "", { title: "unique CREW" }),
    ).toEqual(taken("unique CREW", "update"));
    // The same group may change its title's letter case; a renamed group's old title is free again.
    expect(
      await postJson(`${community()}/groups/${first}/update`, tokens.publisher ?? "", { title: "UNIQUE Crew" }),
    ).toEqual({ success: true, groupId: first });
    expect(
      await postJson(`${community()}/groups/${first}/update`, tokens.publisher ?? "", { title: "Renamed crew" }),
    ).toEqual({ success: true, groupId: first });
    expect(
      await postJson(`${community()}/groups/${second}/update`, tokens.user ?? "", { title: "Unique crew" }),
    ).toEqual({
      success: true,
      groupId: second,
    });
    expect(await postJson(`${community()}/createGroup`, tokens.user ?? "", { title: "renamed crew" })).toEqual(
      taken("renamed crew"),
    );
    // A deleted group's title is free again.
    await postJson(`${community()}/groups/${first}/delete`, tokens.publisher ?? "");
    const third = await newGroup(tokens.user ?? "", { title: "Renamed crew" });
    await postJson(`${community()}/groups/${third}/delete`, tokens.user ?? "");
    await postJson(`${community()}/groups/${second}/delete`, tokens.user ?? "");
  });

  it("of concurrent creates and renames to one title, exactly one wins", async () => {
    const who = ["publisher", "user", "viewer", "joiner", "former", "admin"] as const;
    const creates = await Promise.all(
      who.map((name, i) =>
        postJson(`${community()}/createGroup`, tokens[name] ?? "", { title: i % 2 ? "RACED crew" : "Raced crew" }),
      ),
    );
    expect(creates.filter((a) => created(a) !== undefined)).toHaveLength(1);
    for (const a of creates.filter((a) => created(a) === undefined)) {
      expect((a.error as { details: string[] }).details[0], JSON.stringify(a)).toMatch(
        /^You already have a group named/,
      );
    }
    const groups = await Promise.all(
      ["Rename one", "Rename two", "Rename three"].map((title) => newGroup(tokens.publisher ?? "", { title })),
    );
    const renames = await Promise.all(
      groups.map((id) =>
        postJson(`${community()}/groups/${id}/update`, tokens.publisher ?? "", { title: "Raced rename" }),
      ),
    );
    expect(renames.filter((a) => a.success === true)).toHaveLength(1);
    const found = await getJson(`${community()}/groups?q=${encodeURIComponent('title:"Raced"')}&num=100`, tokens.admin);
    const titles = (found.results as { title: string }[]).map((g) => g.title.toLowerCase());
    expect(titles.filter((t) => t === "raced crew")).toHaveLength(1);
    expect(titles.filter((t) => t === "raced rename")).toHaveLength(1);
  });
});

describe("a group's sort order", () => {
  it("orders content/groups when the request gives none, and is checked on create and update", async () => {
    // Published oldest first: title order and newest-first order differ.
    const a = await publishBasemap("Group_Sort_A");
    const b = await publishBasemap("Group_Sort_B");
    expect(
      await postJson(`${community()}/createGroup`, tokens.publisher ?? "", { title: "Sorted", sortField: "views" }),
    ).toMatchObject({ error: { code: 400 } });
    const groupId = await newGroup(tokens.publisher ?? "", { title: "Sorted crew", access: "org" });
    expect(await getJson(`${community()}/groups/${groupId}`, tokens.publisher)).toMatchObject({
      sortField: "title",
      sortOrder: "asc",
    });
    for (const id of [a.serviceItemId, b.serviceItemId]) await shareWith(tokens.publisher ?? "", id, groupId);
    const order = async (query = "") =>
      ((await getJson(`${rest()}/content/groups/${groupId}${query}`, tokens.publisher)).items as { id: string }[]).map(
        (i) => i.id,
      );
    expect(await order()).toEqual([a.serviceItemId, b.serviceItemId]);
    expect(
      await postJson(`${community()}/groups/${groupId}/update`, tokens.publisher ?? "", { sortOrder: "sideways" }),
    ).toMatchObject({ error: { code: 400 } });
    expect(
      await postJson(`${community()}/groups/${groupId}/update`, tokens.publisher ?? "", {
        sortField: "created",
        sortOrder: "desc",
      }),
    ).toEqual({ success: true, groupId });
    expect(await order()).toEqual([b.serviceItemId, a.serviceItemId]);
    // The request's own order wins; an unknown one is refused.
    expect(await order("?sortField=title&sortOrder=asc")).toEqual([a.serviceItemId, b.serviceItemId]);
    expect(await getJson(`${rest()}/content/groups/${groupId}?sortField=size`, tokens.publisher)).toMatchObject({
      error: { code: 400 },
    });
  });
});

describe("concurrent membership and sharing", () => {
  it("50 concurrent joins, leaves, shares and unshares leave one consistent state", async () => {
    const { serviceItemId: id } = await publishBasemap("Group_Contended");
    const groupId = await newGroup(tokens.publisher ?? "", { title: "Busy crew", access: "org", autoJoin: "true" });
    const members = ["user", "viewer", "former", "joiner"] as const;
    const requests = Array.from({ length: 50 }, (_, i) => {
      const who = members[i % members.length] ?? "user";
      switch (i % 5) {
        case 0:
          return shareWith(tokens.publisher ?? "", id, groupId);
        case 1:
          return shareWith(tokens.publisher ?? "", id, groupId, true);
        case 2:
        case 3:
          return postJson(`${community()}/groups/${groupId}/join`, tokens[who] ?? "");
        default:
          return postJson(`${community()}/groups/${groupId}/leave`, tokens[who] ?? "");
      }
    });
    const answers = await Promise.all(requests);
    for (const a of answers) expect(a, JSON.stringify(a)).not.toHaveProperty("error");
    // The group's members and each member's own record agree.
    const users = await getJson(`${community()}/groups/${groupId}/users`, tokens.publisher);
    const listed = new Set([...(users.users as string[]), ...(users.admins as string[])]);
    for (const who of members) {
      const self = await getJson(`${community()}/self`, tokens[who]);
      const inGroup = (self.groups as { id: string }[]).some((g) => g.id === groupId);
      expect(inGroup, who).toBe(listed.has(who));
    }
    // The item, the group's content and every surface agree on whether it is shared.
    const item = await getJson(`${rest()}/content/items/${id}`, tokens.publisher);
    const shared = ((item.sharing as { groups: string[] }).groups ?? []).includes(groupId);
    const content = await getJson(`${rest()}/content/groups/${groupId}`, tokens.publisher);
    expect((content.items as { id: string }[]).some((i) => i.id === id)).toBe(shared);
    for (const who of members) {
      const root = await getJson(`${server()}/rest/services`, tokens[who]);
      const sees = ((root.services ?? []) as { name: string }[]).some((s) => s.name === "Group_Contended");
      expect(sees, who).toBe(shared && listed.has(who));
      expect((await soapDescriptions(engine, tokens[who])).includes("<Name>Group_Contended</Name>"), who).toBe(
        shared && listed.has(who),
      );
    }
  });
});

describe("deleting a group under concurrent shares", () => {
  it("leaves no item shared with the deleted group, whichever request wins", async () => {
    const { serviceItemId: id } = await publishBasemap("Group_Deleted_Meanwhile");
    for (let round = 0; round < 3; round++) {
      const groupId = await newGroup(tokens.publisher ?? "", { title: `Short-lived ${round}`, access: "org" });
      const requests = Array.from({ length: 12 }, (_, i) =>
        i === 4 + round
          ? postJson(`${community()}/groups/${groupId}/delete`, tokens.publisher ?? "")
          : shareWith(tokens.publisher ?? "", id, groupId, i % 3 === 2),
      );
      for (const a of await Promise.all(requests)) {
        // A share either landed before the delete (and was undone by it) or was refused cleanly.
        if ("error" in a) expect((a.error as { code: number }).code, JSON.stringify(a)).toBe(400);
      }
      const item = await getJson(`${rest()}/content/items/${id}`, tokens.publisher);
      expect((item.sharing as { groups: string[] }).groups, `round ${round}`).not.toContain(groupId);
      expect(await getJson(`${community()}/groups/${groupId}`, tokens.publisher)).toMatchObject({
        error: { code: 400 },
      });
    }
  });
});

describe("deleting a shared item", () => {
  it("takes it out of its groups' content, and search finds group-only items as shared", async () => {
    const { serviceItemId: id } = await publishBasemap("Group_Item_Deleted");
    const groupId = await newGroup(tokens.publisher ?? "", { title: "Item crew", access: "org" });
    await shareWith(tokens.publisher ?? "", id, groupId);
    const found = await getJson(`${rest()}/search?q=${encodeURIComponent(`group:${groupId}`)}`, tokens.publisher);
    expect(found).toMatchObject({ total: 1, results: [{ id, access: "shared" }] });
    const shared = await getJson(
      `${rest()}/search?q=${encodeURIComponent(`access:shared AND id:${id}`)}`,
      tokens.admin,
    );
    expect(shared).toMatchObject({ total: 1 });
    expect(await postJson(`${rest()}/content/users/publisher/items/${id}/delete`, tokens.publisher ?? "")).toEqual({
      success: true,
      itemId: id,
    });
    expect(await getJson(`${rest()}/content/groups/${groupId}`, tokens.publisher)).toMatchObject({
      total: 0,
      items: [],
    });
  });
});

describe("limits", () => {
  it("keeps a member to 512 groups, and still answers their profile and the directory", async () => {
    // A fresh member, so the other tests' groups do not count.
    adminCommand(engine.dataDir, ["add-user", "--portal", org.portalId, "--username", "busy", "--role", "org_user"], {
      MAPGATE_USER_PASSWORD: password("busy"),
    });
    const token = await signIn("busy", password("busy"));
    for (let i = 0; i < 512; i += 16) {
      const batch = Array.from({ length: Math.min(16, 512 - i) }, (_, j) =>
        postJson(`${community()}/createGroup`, token, { title: `Busy ${i + j}` }),
      );
      for (const answer of await Promise.all(batch)) expect(answer).toMatchObject({ success: true });
    }
    expect(await postJson(`${community()}/createGroup`, token, { title: "One too many" })).toMatchObject({
      error: { code: 400, details: ["A member may belong to at most 512 groups."] },
    });
    const self = await getJson(`${community()}/self`, token);
    expect(self.groups).toHaveLength(512);
    expect(await getJson(`${server()}/rest/services`, token)).toHaveProperty("services");
  }, 120_000);
});
