// The operations function runs each operation with the handler of the route shared/system.ts names for it (its
// handler modules are listed in functions/operations.ts so the bundler can see them), group operations included.
import type { Context } from "aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { inProcessStore, lambdaContext } from "./helpers/in-process.ts";

await inProcessStore();
const { INVOCATION, ROUTES, invokedRoute } = await import("#shared/system.ts");
const { MODULES, handler } = await import("#functions/operations.ts");
const { MAX_PARAM_DEPTH } = await import("#shared/invocation/event.ts");

describe("the operations function", () => {
  const operations = Object.keys(INVOCATION.operations) as (keyof typeof INVOCATION.operations)[];
  it.each(operations.map((o) => [o, invokedRoute(o).route]))(
    "runs %s with the handler of route %s",
    async (operation, routeId) => {
      const route = ROUTES.find((r) => r.id === routeId);
      const own = (await import(`../functions/${route?.handler ?? routeId}.ts`)) as { handler: unknown };
      const loaded = await MODULES[operation as keyof typeof MODULES]();
      expect(loaded.handler).toBe(own.handler);
    },
  );
});

describe("parameters nested deep", () => {
  let context: Context;

  beforeAll(async () => {
    const ops = await import("#infra/admin/operations.ts");
    const { registerCaller } = await import("#infra/admin/callers.ts");
    const { portal } = await ops.bootstrapOrganization({
      name: "Nesting",
      admin: { username: "nesting-admin", password: "nesting-admin-pass-1" },
    });
    const fn = "arn:aws:lambda:us-east-1:123456789012:function:mapgate-operations";
    const { invoke } = await registerCaller(
      { portalId: portal.portalId, principalArn: "arn:aws:iam::111122223333:role/pipeline", username: "nesting-admin" },
      { operationsFunction: fn, alias: async () => undefined },
    );
    context = { ...lambdaContext(), invokedFunctionArn: invoke } as Context;
  });

  const nested = (depth: number) => JSON.parse(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`) as unknown;

  it("are refused with a 400 naming the parameter, not an overflowed stack", async () => {
    const answer = await handler({ operation: "self", params: { a: nested(5000) } }, context);
    expect(answer).toMatchObject({
      error: { code: 400, details: [`'params.a' nests more than ${MAX_PARAM_DEPTH} levels deep.`] },
    });
    const arrays = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`) as unknown;
    expect(await handler({ operation: "search", params: { q: "x", filter: arrays } }, context)).toMatchObject({
      error: { code: 400, details: [`'params.filter' nests more than ${MAX_PARAM_DEPTH} levels deep.`] },
    });
  });

  it("are taken up to the bound", async () => {
    const answer = await handler({ operation: "self", params: { a: nested(MAX_PARAM_DEPTH) } }, context);
    expect(answer).toMatchObject({ id: expect.any(String) });
  });
});

describe("group operations", () => {
  let context: Context;
  let portalId = "";
  let itemId = "";

  beforeAll(async () => {
    const ops = await import("#infra/admin/operations.ts");
    const { registerCaller } = await import("#infra/admin/callers.ts");
    const { portal } = await ops.bootstrapOrganization({
      name: "Group operations",
      admin: { username: "groups-admin", password: "groups-admin-pass-1" },
    });
    portalId = portal.portalId;
    for (const username of ["crew-one", "crew-two"]) {
      await ops.addUser(portalId, { username, role: "org_user", password: `${username}-pass-1` });
    }
    const server = await ops.registerServer(portalId, { name: "groupops" });
    const service = await ops.registerService(server.serverId, {
      name: "Crew_Map",
      type: "MapServer",
      owner: "groups-admin",
      access: "private",
    });
    itemId = service.itemId;
    const { invoke } = await registerCaller(
      { portalId, principalArn: "arn:aws:iam::111122223333:role/groups", username: "groups-admin" },
      {
        operationsFunction: "arn:aws:lambda:us-east-1:123456789012:function:mapgate-operations",
        alias: async () => undefined,
      },
    );
    context = { ...lambdaContext(), invokedFunctionArn: invoke } as Context;
  });

  const run = (operation: string, params: Record<string, unknown> = {}) =>
    handler({ operation, params }, context) as Promise<Record<string, unknown>>;

  it("create, read, update, search, add and remove users, share and unshare an item, content, delete", async () => {
    const created = await run("createGroup", { title: "Pipeline crew", access: "org", tags: "ops" });
    expect(created).toMatchObject({ success: true, group: { title: "Pipeline crew", owner: "groups-admin" } });
    const groupId = (created.group as { id: string }).id;
    expect(await run("getGroup", { groupId })).toMatchObject({
      id: groupId,
      userMembership: { username: "groups-admin", memberType: "owner", applications: 0 },
    });
    expect(await run("updateGroup", { groupId, snippet: "Nightly maps" })).toEqual({ success: true, groupId });
    expect(await run("searchGroups", { q: "tags:ops" })).toMatchObject({
      total: 1,
      results: [{ id: groupId, snippet: "Nightly maps" }],
    });
    expect(await run("addGroupUsers", { groupId, users: "crew-one,crew-two" })).toEqual({ notAdded: [] });
    expect(await run("removeGroupUsers", { groupId, users: "crew-two" })).toEqual({ notRemoved: [] });
    expect(await run("getGroupUsers", { groupId })).toEqual({
      owner: "groups-admin",
      admins: ["groups-admin"],
      users: ["crew-one"],
    });
    expect(await run("shareItem", { itemId, groups: groupId })).toEqual({ notSharedWith: [], itemId });
    expect(await run("getGroupContent", { groupId })).toMatchObject({ total: 1, items: [{ id: itemId }] });
    expect(await run("unshareItem", { itemId, groups: groupId })).toEqual({ notUnsharedFrom: [], itemId });
    expect(await run("getGroupContent", { groupId })).toMatchObject({ total: 0, items: [] });
    // Refusals come back as the REST operation answers them; the path's id is required.
    expect(await run("createGroup", { title: "PIPELINE CREW" })).toMatchObject({
      error: { code: 400, details: ["You already have a group named 'PIPELINE CREW'. Try a different name."] },
    });
    expect(await run("getGroup")).toMatchObject({
      error: { code: 400, message: "Invalid invocation.", details: ["'params.groupId' must be specified."] },
    });
    expect(await run("deleteGroup", { groupId })).toEqual({ success: true, groupId });
    expect(await run("getGroup", { groupId })).toMatchObject({ error: { code: 400 } });
  });
});
