// The demo organization the local engine creates on its first start, built with the same operator
// actions `npm run admin` uses.
import type { CachedLayer, Dataset } from "#shared/stores/datastores.ts";
import { getDefaultPortalId } from "#shared/stores/portals.ts";
import { addUser, bootstrapOrganization, type CreatedUser, registerDataStore, registerServer } from "./operations.ts";

export interface DemoOptions {
  readonly allSSL?: boolean;
  readonly passwords: { readonly admin?: string; readonly publisher?: string; readonly user?: string };
}

export interface DemoResult {
  readonly portalId: string;
  readonly users: readonly CreatedUser[];
  readonly serverId: string;
  readonly datastoreId: string;
}

export const DEMO_DATASETS: readonly Dataset[] = [
  { name: "demo.Parcels", displayName: "Parcels", type: "featureClass", path: "/demo.gdb/Parcels" },
  { name: "demo.Roads", displayName: "Roads", type: "featureClass", path: "/demo.gdb/Roads" },
  { name: "demo.Hydrants", displayName: "Fire Hydrants", type: "featureClass", path: "/demo.gdb/Hydrants" },
  { name: "demo.Owners", displayName: "Owners", type: "table", path: "/demo.gdb/Owners" },
  { name: "demo.Inspections", displayName: "Inspections", type: "table", path: "/demo.gdb/Inspections" },
  {
    name: "demo.ParcelOwners",
    displayName: "Parcel Owners",
    type: "relationshipClass",
    path: "/demo.gdb/ParcelOwners",
  },
];

export const DEMO_CACHES: readonly CachedLayer[] = [
  { name: "Buildings3D", type: "sceneLayerCache", path: "/caches/scene/Buildings3D" },
  { name: "Basemap", type: "tileCache", path: "/caches/tiles/Basemap" },
  { name: "Streets", type: "vectorTileCache", path: "/caches/vectortiles/Streets" },
];

/** Creates the demo organization unless a default organization exists already (answers undefined then). */
export async function bootstrapDemo(options: DemoOptions): Promise<DemoResult | undefined> {
  if (await getDefaultPortalId()) return undefined;
  const { portal, admin } = await bootstrapOrganization({
    name: "mapgate Demo",
    allSSL: options.allSSL ?? false,
    admin: { username: "admin", fullName: "Demo Administrator", password: options.passwords.admin },
  });
  const publisher = await addUser(portal.portalId, {
    username: "publisher",
    role: "org_publisher",
    fullName: "Demo Publisher",
    password: options.passwords.publisher,
  });
  const user = await addUser(portal.portalId, {
    username: "user",
    role: "org_user",
    fullName: "Demo User",
    password: options.passwords.user,
  });
  const server = await registerServer(portal.portalId, { name: "arcgis", role: "HOSTING_SERVER" });
  const store = await registerDataStore(portal.portalId, {
    title: "Demo Data Store",
    owner: publisher.username,
    kind: "database",
    serverIds: [server.serverId],
    datasets: DEMO_DATASETS,
    cachedLayers: DEMO_CACHES,
  });
  return {
    portalId: portal.portalId,
    users: [admin, publisher, user],
    serverId: server.serverId,
    datastoreId: store.datastoreId,
  };
}
