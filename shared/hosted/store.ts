// Where hosted layers' data lives, behind one interface: a GeoPackage per service (shared/hosted/geopackage-store.ts,
// the embedded default: a folder of the data folder, or `hosted/` of the item-files bucket) or a schema per service in
// a PostgreSQL + PostGIS database mapgate owns (shared/hosted/postgis-store.ts: Aurora behind RDS Proxy on AWS, or a
// database the local engine's operator names). Which one is configuration, read once at cold start: HOSTED_DATABASE
// set means PostgreSQL. Either way a service's data is made whole or not at all, and is read back by the by-reference
// reader of its kind (the GeoPackage reader, or the PostGIS reader), so every query answers alike on both.
import { config } from "#shared/config.ts";
import type { ColumnSpec, Extent, GeometryTypeName, GeoPackageRow } from "#shared/features/geopackage-writer.ts";
import type { FieldKind } from "#shared/hosted/tables.ts";
import type { HostedLayerEntry, ServiceSource } from "#shared/stores/services.ts";

export interface HostedColumn {
  /** Letters, digits and `_`, starting with a letter (shared/hosted/tables.ts fieldNames). */
  readonly name: string;
  readonly kind: FieldKind;
  /** Text columns: the declared length. */
  readonly length?: number;
}

/** One layer (or table) of a service to make: its columns, geometry and rows (object ids are numbered from 1). */
export interface HostedLayer {
  /** The layer's name, as the service shows it: 1–120 letters, digits and `_`. */
  readonly name: string;
  /** A longer human name (the file item's title). */
  readonly title: string;
  /** Absent: a table. Geometry is WGS 84 (EPSG:4326). */
  readonly geometryType?: GeometryTypeName;
  readonly columns: readonly HostedColumn[];
  /** Read once, as the store writes them (a batch at a time): never all in memory. */
  readonly rows: AsyncIterable<GeoPackageRow>;
}

export interface KeptService {
  /** What the data takes, counted against its owner's quota. */
  readonly bytes: number;
  /** Each layer as serving opens it, in the order given, with its rows' extent (none without geometry or rows). */
  readonly layers: readonly { readonly source: ServiceSource; readonly extent?: Extent }[];
}

/** A layer or table a definition adds to a service (addToDefinition): empty, with its fields. */
export interface DefinedLayer {
  /** Its table's name, as the service's `layers` names it. */
  readonly name: string;
  /** Absent: a table. Geometry is WGS 84 (EPSG:4326). */
  readonly geometryType?: GeometryTypeName;
  /** The object id's column (the client names it: OBJECTID, as ArcGIS makes it). */
  readonly idColumn: string;
  /** The fields (a title is the field's alias). */
  readonly columns: readonly ColumnSpec[];
}

/**
 * Keeps a definition change, before the changed data takes the kept data's place: told the data's new size, it
 * records it (the quota, the service record's layers) or throws, and the data then stays as it was.
 */
export type SettleChange = (bytes: number) => Promise<void>;

/**
 * Changes of a hosted service's definition, each whole or (throwing) none, `settle` run before the change is kept.
 * Callers check a change against the service's current layers and fields first, and hold the service's lock
 * (shared/hosted/define.ts), so changes of one service never overlap.
 */
export interface HostedDefinitions {
  /** Adds empty layers and tables, with their fields. */
  addLayers(serviceItemId: string, layers: readonly DefinedLayer[], settle: SettleChange): Promise<void>;
  /** Drops layers' tables, with their rows (by table name). */
  deleteLayers(serviceItemId: string, tables: readonly string[], settle: SettleChange): Promise<void>;
  /** Adds fields to a layer, empty in every row. */
  addFields(serviceItemId: string, table: string, columns: readonly ColumnSpec[], settle: SettleChange): Promise<void>;
  /** Drops fields of a layer, with their values. */
  deleteFields(serviceItemId: string, table: string, names: readonly string[], settle: SettleChange): Promise<void>;
  /** Sets fields' aliases. */
  setTitles(
    serviceItemId: string,
    table: string,
    titles: readonly { readonly name: string; readonly title: string }[],
    settle: SettleChange,
  ): Promise<void>;
  /** Deletes every row of a layer (its fields stay). */
  truncate(serviceItemId: string, table: string, settle: SettleChange): Promise<void>;
}

export interface HostedStore {
  readonly kind: "geopackage" | "postgis";
  /**
   * The source of a service whose layers are `layers` (createService's: none yet), as publishing names a service of
   * several layers.
   */
  sourceOf(serviceItemId: string, layers: readonly HostedLayerEntry[]): ServiceSource;
  /** Definition changes (the admin wire); absent where they are not made yet (PostgreSQL hosting). */
  readonly definitions?: HostedDefinitions;
  /**
   * Makes a service's data, all of its layers or (throwing) nothing. The service record that names it is written
   * after: a refused record drops it again, a crash in between leaves data no service names.
   */
  create(serviceItemId: string, layers: readonly HostedLayer[]): Promise<KeptService>;
  /** Drops a service's data (after its item and service are gone); nothing happens when there is none. */
  drop(serviceItemId: string): Promise<void>;
}

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
