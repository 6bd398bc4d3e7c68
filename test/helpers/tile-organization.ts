// An organization for in-process tests and benchmarks: its administrator, a hosted server, and a folder data
// store holding a real tile cache at `/Basemap` (Web Mercator PNG tiles). Needs the in-process store started.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export async function tileOrganization(name: string, maxLevel = 1) {
  const ops = await import("#infra/admin/operations.ts");
  const { writeTileCache } = await import("#infra/local/demo/tile-cache.ts");
  const folder = mkdtempSync(join(tmpdir(), `mapgate-${name}-`));
  await writeTileCache(join(folder, "Basemap"), {
    format: "PNG",
    maxLevel,
    extent: { xmin: -2e7, ymin: -2e7, xmax: 2e7, ymax: 2e7 },
    paint: "basemap",
  });
  const admin = `${name}-admin`;
  const password = `${name}-admin-pass-1`;
  const { portal } = await ops.bootstrapOrganization({ name, admin: { username: admin, password } });
  const server = await ops.registerServer(portal.portalId, { name, role: "HOSTING_SERVER" });
  const store = await ops.registerDataStore(portal.portalId, {
    title: name,
    owner: admin,
    kind: "folder",
    serverIds: [server.serverId],
    datasets: [],
    location: { folder },
  });
  return { portal, server, store, folder, admin, password };
}
