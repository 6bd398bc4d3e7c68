// Which hosted-data store this deployment keeps its hosted layers in (shared/hosted/store.ts describes both): read
// from configuration once, each store's module (and node-postgres) loaded only where it is chosen. Apart from the
// interface, so the stores import the interface and nothing imports them back.
import { config } from "#shared/config.ts";
import type { HostedStore } from "#shared/hosted/store.ts";

let chosen: Promise<HostedStore> | undefined;

/** The deployment's hosted-data store (each module, and node-postgres, loaded only where it is chosen). */
export function hostedStore(): Promise<HostedStore> {
  chosen ??= config().hostedDatabase
    ? import("#shared/hosted/postgis-store.ts").then((m) => m.postGisStore())
    : import("#shared/hosted/geopackage-store.ts").then((m) => m.geoPackageStore);
  return chosen;
}

/**
 * Drops a service's data wherever this deployment may have kept it: in its store, and (a deployment that moved to
 * a database) a GeoPackage kept before the move.
 */
export async function dropHostedData(serviceItemId: string): Promise<void> {
  const store = await hostedStore();
  await store.drop(serviceItemId);
  if (store.kind === "postgis" && config().hostedData) {
    const { geoPackageStore } = await import("#shared/hosted/geopackage-store.ts");
    await geoPackageStore.drop(serviceItemId);
  }
}
