// The operator command against a test engine's data folder, and what the demo organization holds.
import { execFileSync } from "node:child_process";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { DEMO_GEOPACKAGE_PATH, DEMO_LAYERS_FOLDER } from "#infra/admin/demo.ts";
import { stableItemId } from "#shared/publishing.ts";
import { ROOT, type RunningEngine, startEngine } from "./engine.ts";
import { signIn } from "./http.ts";

/** Runs `npm run admin -- …` (the same program) against a data folder; answers what it prints. */
export function adminCommand(dataDir: string, args: string[], env: Record<string, string> = {}): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", dataDir], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
}

export interface DemoOrganization {
  readonly portalId: string;
  readonly serverId: string;
  /** The demo's folder store (registered datasets and the demo caches) and its cloud store (the same caches). */
  readonly folderStore: string;
  readonly cloudStore: string;
  /** The folder store of the demo GeoPackage alone, whose layers the demo publishes at first start. */
  readonly worldStore: string;
}

export function demoOrganization(dataDir: string): DemoOrganization {
  const org = (
    JSON.parse(adminCommand(dataDir, ["list"])) as {
      portalId: string;
      servers: { serverId: string; name: string }[];
      datastores: { datastoreId: string; kind: string; title: string }[];
    }[]
  )[0];
  return {
    portalId: org?.portalId ?? "",
    // The demo's hosting server by its name: servers are listed by id, which is random, and tests add others.
    serverId: (org?.servers.find((s) => s.name === "arcgis") ?? org?.servers[0])?.serverId ?? "",
    folderStore: org?.datastores.find((d) => d.title === "Demo Data Store")?.datastoreId ?? "",
    worldStore: org?.datastores.find((d) => d.title === "World Data")?.datastoreId ?? "",
    cloudStore: org?.datastores.find((d) => d.kind === "cloudStore")?.datastoreId ?? "",
  };
}

/**
 * Registers a PostgreSQL database as a data store of the demo organization, owned by `publisher`, through the
 * operator command with the connection in MAPGATE_POSTGRES (as an operator keeps it off the command line).
 * Answers the store's id and what the command printed.
 */
export function registerPostgresStore(
  dataDir: string,
  org: DemoOrganization,
  title: string,
  uri: string,
): { datastoreId: string; printed: string } {
  const printed = adminCommand(
    dataDir,
    [
      "register-datastore",
      ...["--portal", org.portalId, "--title", title, "--owner", "publisher"],
      ...["--server", org.serverId, "--postgres", "-"],
    ],
    { MAPGATE_POSTGRES: uri },
  );
  return { datastoreId: (JSON.parse(printed) as { datastoreId: string }).datastoreId, printed };
}

/** Registers a folder of this machine as a data store of the demo organization, owned by `owner`. */
export function registerFolderStore(
  dataDir: string,
  org: DemoOrganization,
  title: string,
  folder: string,
  owner = "publisher",
): string {
  const out = adminCommand(dataDir, [
    "register-datastore",
    ...["--portal", org.portalId, "--title", title, "--owner", owner],
    ...["--server", org.serverId, "--path", folder],
  ]);
  return (JSON.parse(out) as { datastoreId: string }).datastoreId;
}

/** A demo layer's FeatureServer path (its bulk-published name: the table and six characters of its stable id). */
export function demoServicePath(worldStore: string, table: string): string {
  const name = `${table}_${stableItemId(worldStore, `/world.gpkg/${table}`).slice(0, 6)}`;
  return `/arcgis/rest/services/${DEMO_LAYERS_FOLDER}/${name}/FeatureServer`;
}

/** The demo's world GeoPackage, opened read-only: what the feature tests compare the served answers with. */
export const openDemoGeoPackage = (dataDir: string) =>
  new DatabaseSync(join(dataDir, "demo-store", DEMO_GEOPACKAGE_PATH), { readOnly: true });

/** The engine, the world store's id and its GeoPackage (the caller closes the file and stops the engine). */
export async function startWithDemoSource(): Promise<{
  engine: RunningEngine;
  datastoreId: string;
  source: DatabaseSync;
}> {
  const engine = await startEngine();
  return {
    engine,
    datastoreId: demoOrganization(engine.dataDir).worldStore,
    source: openDemoGeoPackage(engine.dataDir),
  };
}

/** A second organization on the engine ("Other GIS", bootstrapped by the operator command): its administrator's token. */
export async function otherOrganizationToken(engine: RunningEngine): Promise<string> {
  const password = "other-Admin-Pass-1234";
  adminCommand(engine.dataDir, ["bootstrap", "--name", "Other GIS", "--admin", "otheradmin"], {
    MAPGATE_ADMIN_PASSWORD: password,
  });
  return signIn(`${engine.ready.https}/portal/sharing/rest`, engine.ca, "otheradmin", password);
}
