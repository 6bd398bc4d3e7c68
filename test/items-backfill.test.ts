// A data folder from before portal items existed: its services, layers and data stores gain their items from
// `npm run admin -- backfill-items` (and at the local engine's start), against a real in-memory dynalite. The
// "older" state is made by removing items the current code wrote, which is exactly what such a folder lacks.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, describe, expect, it } from "vitest";
import { inProcessStore } from "./helpers/in-process.ts";

const store = await inProcessStore();
const { ddb } = await import("#shared/stores/dynamo.ts");
const { tableName } = await import("#shared/config.ts");
const ops = await import("#infra/admin/operations.ts");
const { getItem } = await import("#shared/stores/items.ts");

afterAll(async () => {
  await store.close();
});

describe("backfill-items", () => {
  it("makes the missing items of services and data stores as publishing makes them, once", async () => {
    const { portal } = await ops.bootstrapOrganization({
      name: "Older",
      admin: { username: "older-admin", password: "older-admin-pass-1" },
    });
    const server = await ops.registerServer(portal.portalId, { name: "older", role: "HOSTING_SERVER" });
    const datastore = await ops.registerDataStore(portal.portalId, {
      title: "Older store",
      owner: "older-admin",
      kind: "folder",
      serverIds: [server.serverId],
      datasets: [],
      location: { folder: mkdtempSync(join(tmpdir(), "mapgate-older-")) },
    });
    const service = await ops.registerService(server.serverId, {
      name: "Older_Map",
      type: "MapServer",
      owner: "older-admin",
      access: "org",
      description: "From before items",
    });
    for (const itemId of [service.itemId, datastore.datastoreId]) {
      await ddb.send(new DeleteCommand({ TableName: tableName("items"), Key: { itemId } }));
    }
    expect(await getItem(service.itemId)).toBeUndefined();

    expect(await ops.backfillItems()).toEqual({ created: 2 });
    expect(await getItem(service.itemId)).toMatchObject({
      owner: "older-admin",
      portalId: portal.portalId,
      title: "Older_Map",
      type: "Map Service",
      url: "/older/rest/services/Older_Map/MapServer",
      access: "org",
      description: "From before items",
      service: { serverId: server.serverId, folder: "", name: "Older_Map", type: "MapServer" },
    });
    expect(await getItem(datastore.datastoreId)).toMatchObject({ type: "Data Store", title: "Older store" });
    expect(await ops.backfillItems()).toEqual({ created: 0 });
  });
});
