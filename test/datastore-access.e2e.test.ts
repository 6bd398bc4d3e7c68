// Who may do what with a data store, every operation by every kind of caller, against the real engine: the
// store's owner and an administrator may; another publisher and a member of a group the owner tried to share
// the store's item with may not (403, and nothing happens: no job, no service, no layer). A store holds its
// owner's credentials, and whatever is published from it reads with them.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { adminCommand, demoOrganization, type DemoOrganization } from "./helpers/admin.ts";
import { PASSWORDS, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";
import { waitForJob } from "./helpers/publish.ts";

let engine: RunningEngine;
let org: DemoOrganization;
const tokens: Record<string, string> = {};
let groupId = "";
const OTHER_PASSWORD = "other-Pass-1234";

const rest = () => `${engine.ready.https}/portal/sharing/rest`;
const post = async (path: string, token: string, fields: Record<string, string>) =>
  (await call(`${rest()}/${path}`, { ca: engine.ca, body: form({ f: "json", token, ...fields }) })).json<
    Record<string, unknown>
  >();
const get = async (path: string, token: string) =>
  (await call(`${rest()}/${path}${path.includes("?") ? "&" : "?"}f=json&token=${token}`, { ca: engine.ca })).json<
    Record<string, unknown>
  >();

/** Every data store operation, with the fields that make it a valid request on the demo's stores. */
const OPERATIONS: Record<string, () => [path: string, fields: Record<string, string>]> = {
  describe: () => ["portals/self/datastores/describe", { datastoreId: org.worldStore, serverId: org.serverId }],
  publish: () => [
    "portals/self/datastores/publish",
    {
      serverId: org.serverId,
      serverFolder: "Access",
      serviceConfiguration: JSON.stringify({
        type: "MapServer",
        serviceName: `Tiles_${Math.random().toString(36).slice(2, 8)}`,
        properties: { cacheStoreId: org.folderStore, pathInCachedStore: "/caches/tiles/Basemap" },
      }),
    },
  ],
  publishLayers: () => [
    "portals/self/datastores/allDatasets/publishLayers",
    { datastoreId: org.worldStore, serverId: org.serverId, serverFolder: "Access" },
  ],
  validate: () => ["portals/self/datastores/validate", { datastoreId: org.worldStore, serverId: org.serverId }],
  addToServer: () => ["portals/self/datastores/addToServer", { datastoreId: org.worldStore, serverId: org.serverId }],
  getServers: () => ["portals/self/datastores/getServers", { datastoreId: org.worldStore }],
  refreshServer: () => [
    "portals/self/datastores/refreshServer",
    { datastoreId: org.worldStore, serverId: org.serverId },
  ],
  removeFromServer: () => [
    "portals/self/datastores/removeFromServer",
    { datastoreId: org.worldStore, serverId: org.serverId },
  ],
  getLayers: () => ["portals/self/datastores/getLayers", { datastoreId: org.worldStore }],
  "allDatasets/getLayers": () => ["portals/self/datastores/allDatasets/getLayers", { datastoreId: org.worldStore }],
  deleteLayers: () => ["portals/self/datastores/allDatasets/deleteLayers", { datastoreId: org.folderStore }],
};

const layersOf = async (token: string) =>
  ((await post("portals/self/datastores/getLayers", token, { datastoreId: org.worldStore })).layerAndDatasets ??
    []) as { layer: { id: string } }[];

beforeAll(async () => {
  engine = await startEngine();
  org = demoOrganization(engine.dataDir);
  for (const username of ["other", "crew"]) {
    adminCommand(
      engine.dataDir,
      ["add-user", "--portal", org.portalId, "--username", username, "--role", "org_publisher"],
      { MAPGATE_USER_PASSWORD: OTHER_PASSWORD },
    );
  }
  const passwords: Record<string, string> = { ...PASSWORDS, other: OTHER_PASSWORD, crew: OTHER_PASSWORD };
  for (const username of ["admin", "publisher", "other", "crew"]) {
    const answer = await post("generateToken", "", { username, password: passwords[username] ?? "" });
    tokens[username] = String(answer.token);
  }
  // The owner's group with `crew` in it, and an attempt to share the store's item with it: refused.
  const created = await post("community/createGroup", tokens.publisher ?? "", { title: "Crew", access: "org" });
  groupId = String((created.group as { id?: string } | undefined)?.id);
  await post(`community/groups/${groupId}/addUsers`, tokens.publisher ?? "", { users: "crew" });
}, 120_000);

afterAll(async () => {
  await engine?.stop();
});

describe("the data store access rule", () => {
  it("a store's item cannot be shared, so sharing opens no way in", async () => {
    const members = await get(`community/groups/${groupId}/users`, tokens.publisher ?? "");
    expect(members.users).toContain("crew");
    for (const store of [org.worldStore, org.folderStore]) {
      const shared = await post(`content/users/publisher/items/${store}/share`, tokens.publisher ?? "", {
        groups: groupId,
        org: "true",
      });
      expect(shared).toMatchObject({ error: { code: 400 } });
      const item = await get(`content/items/${store}`, tokens.publisher ?? "");
      expect(item).toMatchObject({ access: "private", owner: "publisher" });
    }
  });

  it.each(["other", "crew"])(
    "%s (a publisher, not the owner) is refused every operation, and nothing happens",
    async (who) => {
      const token = tokens[who] ?? "";
      const layersBefore = await layersOf(tokens.publisher ?? "");
      expect(layersBefore.length).toBeGreaterThan(0);
      for (const [name, request] of Object.entries(OPERATIONS)) {
        const [path, fields] = request();
        const answer = await post(path, token, fields);
        expect({ name, answer }).toMatchObject({ name, answer: { error: { code: 403 } } });
        expect(answer).not.toHaveProperty("jobId");
      }
      // Nothing was published, removed or read on the caller's behalf.
      const mine = await get(`content/users/${who}?num=100`, token);
      expect(mine.items).toEqual([]);
      expect((await layersOf(tokens.publisher ?? "")).map((p) => p.layer.id)).toEqual(
        layersBefore.map((p) => p.layer.id),
      );
      const servers = await post("portals/self/datastores/getServers", tokens.publisher ?? "", {
        datastoreId: org.worldStore,
      });
      expect(servers.servers).toHaveLength(1);
      // Nor are the stores offered to them on the forms, by id or title.
      const formPage = await call(`${rest()}/portals/self/datastores/describe?f=html&token=${token}`, {
        ca: engine.ca,
      });
      expect(formPage.text).not.toContain(org.worldStore);
      expect(formPage.text).not.toContain("World Data");
      const directory = await call(`${rest()}?f=html&token=${token}`, { ca: engine.ca });
      expect(directory.status).toBe(200);
      expect(directory.text).not.toContain(org.worldStore);
      expect(directory.text).not.toContain(org.folderStore);
    },
  );

  it.each(["publisher", "admin"])("%s (the owner, an administrator) may use every operation", async (who) => {
    const token = tokens[who] ?? "";
    const expected: Record<string, (answer: Record<string, unknown>) => Promise<void> | void> = {
      describe: async (a) => {
        const result = await waitForJob<{ children: unknown[] }>(engine, token, String(a.jobId), String(a.key));
        expect(result.children.length).toBeGreaterThan(0);
      },
      publish: async (a) => {
        const result = await waitForJob<{ services: unknown[] }>(engine, token, String(a.jobId), String(a.key));
        expect(result.services).toHaveLength(1);
      },
      publishLayers: async (a) => {
        await waitForJob(engine, token, String(a.jobId), String(a.key));
      },
      validate: (a) => expect(a).toEqual({ status: "success" }),
      addToServer: (a) => expect(a).toEqual({ success: true }),
      getServers: (a) => expect(a.servers).toHaveLength(1),
      refreshServer: (a) => expect(a).toEqual({ success: true }),
      // Refused while layers published from it exist there: a 400 saying so, not a 403.
      removeFromServer: (a) => expect(a).toMatchObject({ error: { code: 400 } }),
      getLayers: (a) => expect((a.layerAndDatasets as unknown[]).length).toBeGreaterThan(0),
      "allDatasets/getLayers": (a) => expect((a.layerAndDatasets as unknown[]).length).toBeGreaterThan(0),
      deleteLayers: (a) => expect(a).toMatchObject({ success: true, more: false }),
    };
    // The directory and the forms list the stores for them (so the refusals above are not an empty page).
    const directory = await call(`${rest()}?f=html&token=${token}`, { ca: engine.ca });
    expect(directory.text).toContain(org.worldStore);
    const formPage = await call(`${rest()}/portals/self/datastores/describe?f=html&token=${token}`, { ca: engine.ca });
    expect(formPage.text).toContain(org.worldStore);
    for (const [name, request] of Object.entries(OPERATIONS)) {
      const [path, fields] = request();
      const answer = await post(path, token, fields);
      expect({ name, answer }).not.toMatchObject({ answer: { error: { code: 403 } } });
      await expected[name]?.(answer);
    }
  });
});
