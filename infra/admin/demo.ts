// The demo organization the local engine creates on its first start, built with the same operator
// actions `npm run admin` uses.
import { join } from "node:path";
import { getDefaultPortalId } from "#shared/stores/portals.ts";
import { ensureFolder } from "#shared/stores/services.ts";
import { stableItemId } from "#shared/publishing.ts";
import { changeItemAccess, getItem } from "#shared/stores/items.ts";
import {
  addUser,
  bootstrapOrganization,
  type CreatedUser,
  type NewService,
  registerDataStore,
  registerServer,
  registerService,
} from "./operations.ts";

export interface DemoOptions {
  readonly allSSL?: boolean;
  /** The folder holding the demo caches (DEMO_CACHE_PATHS), registered as the demo's folder data store. */
  readonly storeFolder: string;
  /** The engine's HTTPS origin, for the URLs bulk publishing records with each layer. */
  readonly origin: string;
  /** A bucket holding the same caches, registered as a cloud data store too (when the engine serves S3). */
  readonly cloud?: { readonly bucket: string; readonly prefix: string };
  readonly passwords: { readonly admin?: string; readonly publisher?: string; readonly user?: string };
}

export interface DemoResult {
  readonly portalId: string;
  readonly users: readonly CreatedUser[];
  readonly serverId: string;
  readonly datastoreId: string;
  readonly cloudDatastoreId: string | undefined;
}

/** A few services in the root and in two folders (one with a FeatureServer extension), plus an empty folder. */
export const DEMO_SERVICES: readonly NewService[] = [
  {
    name: "World_Basemap",
    type: "MapServer",
    capabilities: "Map,TilesOnly",
    description: "Demo basemap",
    owner: "admin",
  },
  {
    name: "Parcels",
    type: "MapServer",
    capabilities: "Map,Query,Data",
    description: "Parcels & owners",
    owner: "publisher",
    access: "org",
    extensions: [{ type: "FeatureServer", capabilities: "Query,Editing" }],
  },
  {
    folder: "Utilities",
    name: "Water_Network",
    type: "MapServer",
    capabilities: "Map,Query",
    description: "",
    owner: "publisher",
  },
  {
    folder: "Utilities",
    name: "Hydrant_Inspections",
    type: "FeatureServer",
    capabilities: "Query,Create,Update",
    description: "Field edits",
    owner: "publisher",
    access: "private",
  },
  {
    folder: "Imagery",
    name: "Ortho_2024",
    type: "ImageServer",
    capabilities: "Image,TilesOnly",
    description: "2024 orthophotos",
    owner: "admin",
  },
];
export const DEMO_EMPTY_FOLDER = "Staging";
/** The server folder the demo's feature layers are published into. */
export const DEMO_LAYERS_FOLDER = "World";

/** The folder of the demo store holding the demo GeoPackage (store-relative). */
export const DEMO_DATA_FOLDER = "/data";
export const DEMO_GEOPACKAGE_PATH = `${DEMO_DATA_FOLDER}/world.gpkg`;
/**
 * The "World Data" store is that folder alone: its GeoPackage's tables are bulk-published into World and public
 * at first start. The demo store holds the same file deeper (so a user's own publishLayers has data too).
 */
export const WORLD_STORE_TITLE = "World Data";
export const WORLD_DATASETS = ["attribution", "countries", "places"].map((t) => `/world.gpkg/${t}`);

/** Where each demo cache lies in the demo store (store-relative); infra/local/demo writes them. */
export const DEMO_CACHE_PATHS = {
  scene: "/caches/scene/Buildings3D",
  tiles: "/caches/tiles/Basemap",
  vectorTiles: "/caches/vectortiles/Streets",
  imagery: "/caches/imagery/Ortho2024",
} as const;

/** Listed services that serve a demo cache (the others are listed only). */
const SERVED_FROM: Readonly<Record<string, string>> = {
  World_Basemap: DEMO_CACHE_PATHS.tiles,
  Ortho_2024: DEMO_CACHE_PATHS.imagery,
};

/**
 * The demo GeoPackage's tables as feature layers, shared with everyone: bulk publishing's own pages, run one after
 * another as the workflow runs them, so a first start has layers to query and draw.
 */
async function publishDemoLayers(
  who: { portalId: string; owner: string; origin: string },
  datastoreId: string,
  serverId: string,
) {
  // Loaded when a first start needs it: the GeoPackage and PostGIS readers are not the admin command's to load.
  const { publishAllLayers } = await import("#shared/publish-layers.ts");
  await publishAllLayers({
    ...who,
    jobId: stableItemId("demo", datastoreId),
    operation: "publishLayers",
    params: { datastoreId, serverId, serverFolder: DEMO_LAYERS_FOLDER },
  });
  for (const path of WORLD_DATASETS) {
    const item = await getItem(stableItemId("layer", datastoreId, path));
    if (item) await changeItemAccess(item, () => "public");
  }
}

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
    kind: "folder",
    serverIds: [server.serverId],
    datasets: [],
    location: { folder: options.storeFolder },
  });
  const cloud = options.cloud
    ? await registerDataStore(portal.portalId, {
        title: "Demo Cloud Store",
        owner: publisher.username,
        kind: "cloudStore",
        serverIds: [server.serverId],
        datasets: [],
        location: options.cloud,
      })
    : undefined;
  for (const service of DEMO_SERVICES) {
    const path = SERVED_FROM[service.name];
    await registerService(server.serverId, { ...service, ...(path ? { cache: { store, path } } : {}) });
  }
  await ensureFolder(server.serverId, DEMO_EMPTY_FOLDER);
  const world = await registerDataStore(portal.portalId, {
    title: WORLD_STORE_TITLE,
    owner: publisher.username,
    kind: "folder",
    serverIds: [server.serverId],
    datasets: [],
    location: { folder: join(options.storeFolder, DEMO_DATA_FOLDER) },
  });
  await publishDemoLayers(
    { portalId: portal.portalId, owner: publisher.username, origin: options.origin },
    world.datastoreId,
    server.serverId,
  );
  return {
    portalId: portal.portalId,
    users: [admin, publisher, user],
    serverId: server.serverId,
    datastoreId: store.datastoreId,
    cloudDatastoreId: cloud?.datastoreId,
  };
}
