// Where hosted layers' data lives, behind one interface: a GeoPackage per service (shared/hosted/geopackage-store.ts,
// the embedded default: a folder of the data folder, or `hosted/` of the item-files bucket) or a schema per service in
// a PostgreSQL + PostGIS database mapgate owns (shared/hosted/postgis-store.ts: Aurora behind RDS Proxy on AWS, or a
// database the local engine's operator names). Which one is configuration, read once at cold start: HOSTED_DATABASE
// set means PostgreSQL. Either way a service's data is made whole or not at all, and is read back by the by-reference
// reader of its kind (the GeoPackage reader, or the PostGIS reader), so every query answers alike on both.
import type {
  CellValue,
  ColumnSpec,
  Extent,
  GeometryTypeName,
  GeoPackageRow,
} from "#shared/features/geopackage-writer.ts";
import type { Geometry } from "geojson";
import type { FieldKind } from "#shared/hosted/tables.ts";
import type { HostedLayerEntry, ServiceSource } from "#shared/stores/services.ts";
import type { LayerEditing, LayerSchema } from "#shared/features/schema.ts";
import type { WriteRow } from "#shared/features/sql/write.ts";
import type { Scope } from "#shared/features/ownership.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import type { SqlEmitter } from "#shared/features/sql/emitter.ts";

export interface HostedColumn {
  /** Letters, digits and `_`, starting with a letter (shared/hosted/tables.ts fieldNames). */
  readonly name: string;
  readonly kind: FieldKind;
  /** Text columns: the declared length. */
  readonly length?: number;
  /** The field's alias: the column's name as the file wrote it, when that is not `name` (any text). */
  readonly title?: string;
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
  /** Its global id and tracking fields (among `columns`), recorded with the data as its editing record. */
  readonly editing?: LayerEditing;
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
  /** Its global id and tracking fields (among `columns`), recorded with the data as its editing record. */
  readonly editing?: LayerEditing;
  /** It keeps attachments from the start (its attachment table made with it). */
  readonly attachments?: boolean;
}

/**
 * A change of a hosted service's definition or data as the store makes it: `settle`, told the data's new size (and,
 * for a change of rows, the changed layers' extent), records it (the quota, the service record's layers and revision,
 * the item's extent) or throws, and the data then stays as it was; `revision` is the service's revision once the
 * change is kept, which a store whose readers cache a layer's schema keeps beside the data (PostgreSQL: a reader
 * elsewhere that sees the new revision in the service record waits for the data to reach it).
 */
export interface DefinitionChange {
  readonly revision: number;
  settle(bytes: number, extent?: Extent): Promise<void>;
}

/** One row an append brings: values by the layer's column names (converted to its fields' types), its geometry. */
export interface AppendRow {
  readonly values: Readonly<Record<string, CellValue>>;
  readonly geometry: Geometry | null;
}
/**
 * Rows added to (and, with a key, matched and updated in) one layer of a service (append). The rows' values fit the
 * layer's fields already (shared/hosted/change-data.ts converts them); the store only writes them.
 */
export interface LayerAppend {
  /** The layer's table, as the service record's `layers` names it. */
  readonly table: string;
  /** The layer's declared geometry type (absent: a table); single parts are kept as the layer's multi type. */
  readonly geometryType?: GeometryTypeName;
  /** The layer's columns an added row writes (any other is NULL in it). */
  readonly columns: readonly string[];
  /** What each of `columns` holds (a database binds its values so). */
  readonly kinds: Readonly<Record<string, FieldKind>>;
  readonly rows: Iterable<AppendRow>;
  /** Upsert: a row whose `column` value matches one row of the layer updates it; any other is added. */
  readonly key?: {
    readonly column: string;
    /** The columns an update writes (the others keep their values). */
    readonly columns: readonly string[];
    readonly updateGeometry: boolean;
    readonly skipInserts: boolean;
    readonly skipUpdates: boolean;
  };
}

export interface AppendCounts {
  readonly added: number;
  readonly updated: number;
}

/**
 * Changes of a hosted service's definition, each whole or (throwing) none, `settle` run before the change is kept.
 * Callers check a change against the service's current layers and fields first, and hold the service's lock
 * (shared/hosted/define.ts), so changes of one service never overlap.
 */
export interface HostedDefinitions {
  /** Adds empty layers and tables, with their fields. */
  addLayers(serviceItemId: string, layers: readonly DefinedLayer[], change: DefinitionChange): Promise<void>;
  /** Drops layers' tables, with their rows (by table name). */
  deleteLayers(serviceItemId: string, tables: readonly string[], change: DefinitionChange): Promise<void>;
  /** Adds fields to a layer, empty in every row. */
  addFields(
    serviceItemId: string,
    table: string,
    columns: readonly ColumnSpec[],
    change: DefinitionChange,
  ): Promise<void>;
  /** Drops fields of a layer, with their values. */
  deleteFields(serviceItemId: string, table: string, names: readonly string[], change: DefinitionChange): Promise<void>;
  /** Sets fields' aliases. */
  setTitles(
    serviceItemId: string,
    table: string,
    titles: readonly { readonly name: string; readonly title: string }[],
    change: DefinitionChange,
  ): Promise<void>;
  /** Deletes every row of a layer (its fields stay), and its attachments. */
  truncate(serviceItemId: string, table: string, change: DefinitionChange): Promise<void>;
  /** Gives layers an attachment table (shared/features/sql/attachments.ts), empty (by table name). */
  addAttachments(serviceItemId: string, tables: readonly string[], change: DefinitionChange): Promise<void>;
}

/** Runs a statement in a store's open transaction: its rows as arrays. */
export type RunStatement = (q: EmittedQuery) => Promise<unknown[][]>;

/** A store's open transaction as a change of attachments sees it: its runner, dialect, and the layers' container. */
export interface Transaction {
  readonly run: RunStatement;
  readonly emitter: SqlEmitter;
  /** The container of the editing record (a PostgreSQL service's schema; none in a GeoPackage). */
  readonly container: string | undefined;
}

/** A feature's edit that failed, as ArcGIS answers it per feature (shared/hosted/edit.ts names the codes). */
export interface EditError {
  readonly code: number;
  readonly description: string;
}

/** One edit's result, as `addResults`, `updateResults` and `deleteResults` list them. */
export interface EditResult {
  /** The feature's object id (-1 for an add that failed; null when the request named none). */
  readonly objectId: number | null;
  /** The feature's global id, where the layer has them. */
  readonly globalId?: string | null;
  readonly success: boolean;
  readonly error?: EditError;
}

/** An edit checked before the transaction (shared/hosted/edit.ts): what to write, or why it cannot be written. */
export type Checked<T> =
  | { readonly ok: T }
  | { readonly failed: EditError; readonly objectId: number | null; readonly globalId?: string | null };

/** A row to add or update: its values fitted to the layer (tracking and global id filled), and its global id. */
export type EditRow = WriteRow & { readonly globalId?: string };

/** One layer's edits, each checked: rows to add, rows to update and ids to delete (by object id), in order. */
export interface LayerEdit {
  readonly layerId: number;
  /** The layer as read when the edit was checked: its table, object id, geometry column and editing record. */
  readonly schema: LayerSchema;
  readonly adds: readonly Checked<EditRow>[];
  readonly updates: readonly Checked<EditRow & { readonly id: number }>[];
  readonly deletes: readonly Checked<{ readonly id: number; readonly globalId?: string }>[];
  /**
   * The caller's ownership rules on the layer (shared/features/ownership.ts), checked by the statements that write:
   * the creator's column and which features the caller may see, update and delete. Absent: every feature.
   */
  readonly ownership?: {
    readonly column: string;
    readonly query: Scope;
    readonly update: Scope;
    readonly delete: Scope;
  };
  /** applyEdits' attachments (by global id), their bytes already kept under fresh keys. */
  readonly attachments?: AttachmentEdits;
}

/** A file an attachment edit writes: its name and type (from its bytes), size, and the key its bytes are kept under. */
export interface AttachmentFile {
  readonly name: string;
  readonly contentType: string;
  readonly size: number;
  readonly key: string;
}

/** applyEdits' `attachments` of one layer, by global id (useGlobalIds). */
export interface AttachmentEdits {
  readonly adds: readonly (AttachmentFile & { readonly globalId: string; readonly parentGlobalId: string })[];
  readonly updates: readonly (AttachmentFile & { readonly globalId: string })[];
  readonly deletes: readonly string[];
}

/** The edits of one request (one layer, or a service's layers) made in one transaction. */
export interface EditRequest {
  readonly layers: readonly LayerEdit[];
  /** A failed edit fails them all (nothing is written); false: the others are written. */
  readonly rollbackOnFailure: boolean;
  /** The edit's time (ms): each layer's last edit, as its editing record keeps it. */
  readonly moment: number;
  /** The edit's id, logged with its rows when they changed (the id of the event it raises). */
  readonly editId: string;
}

export interface LayerEditResults {
  readonly layerId: number;
  readonly addResults: readonly EditResult[];
  readonly updateResults: readonly EditResult[];
  readonly deleteResults: readonly EditResult[];
  /** The results of applyEdits' attachments, when it had any. */
  readonly attachments?: {
    readonly addResults: readonly EditResult[];
    readonly updateResults: readonly EditResult[];
    readonly deleteResults: readonly EditResult[];
  };
}

/** What a request's edits did: committed (with each edit's result), or rolled back whole. */
export interface EditOutcome {
  readonly committed: boolean;
  readonly layers: readonly LayerEditResults[];
  /** Rows were written (and the edit's id logged): the edit raises its event. */
  readonly changed?: boolean;
  /** The bytes' keys of attachments deleted with their features: removed once the edit committed. */
  readonly removedKeys?: readonly string[];
  /** The service's data size as the committed edit left it (when its rows changed), which its item then records. */
  readonly bytes?: number;
}

/**
 * Runs inside the edit's transaction once its rows are written and before it commits (where the edit's event is put
 * in an outbox, so it is kept exactly when the edit is); a throw rolls the edit back.
 */
export type BeforeCommit = (outcome: EditOutcome) => Promise<void>;

export interface HostedStore {
  readonly kind: "geopackage" | "postgis";
  /**
   * The source of a service whose layers are `layers` (createService's: none yet), as publishing names a service of
   * several layers.
   */
  sourceOf(serviceItemId: string, layers: readonly HostedLayerEntry[]): ServiceSource;
  /** Definition changes (createService's services, the admin wire). */
  readonly definitions: HostedDefinitions;
  /**
   * Makes a service's data, all of its layers or (throwing) nothing. The service record that names it is written
   * after: a refused record drops it again, a crash in between leaves data no service names.
   */
  create(serviceItemId: string, layers: readonly HostedLayer[]): Promise<KeptService>;
  /**
   * Adds (and, with a key, updates) rows of one layer in one transaction, `settle` told the data's new size and the
   * layer's extent before the change is kept: all of it, or (throwing) none. The caller holds the service's lock.
   */
  append(serviceItemId: string, rows: LayerAppend, change: DefinitionChange): Promise<AppendCounts>;
  /**
   * Replaces the rows and fields of a service's layers (publishing again with overwrite=true): the new data is made
   * whole beside the kept data, `settle` is told its size and extent, then it takes the kept data's place at once, so
   * a failure at any step leaves the old data serving. Each layer keeps its table name (the service record's).
   */
  replace(serviceItemId: string, layers: readonly HostedLayer[], change: DefinitionChange): Promise<void>;
  /**
   * Makes a request's edits of a service's layers in one transaction: every row written, the layers' editing records
   * moved to the request's moment, `beforeCommit` run, then committed; with rollbackOnFailure and a failed edit,
   * nothing is kept and the outcome says so. A GeoPackage is written in place: the caller holds the service's lock.
   */
  edit(serviceItemId: string, request: EditRequest, beforeCommit: BeforeCommit): Promise<EditOutcome>;
  /**
   * Whether an edit's id is in a service's edit log (it committed and its rows changed), read from the data; undefined
   * when the service has no data any more.
   */
  committed(serviceItemId: string, editId: string): Promise<boolean | undefined>;
  /**
   * Runs `work` in one write transaction of a service's data (a GeoPackage written in place: the caller holds the
   * service's lock), committed when it answers, rolled back when it throws.
   */
  transact<T>(serviceItemId: string, work: (tx: Transaction) => Promise<T>): Promise<T>;
  /** Drops a service's data and its attachments' bytes (after its item and service are gone); nothing happens when there is none. */
  drop(serviceItemId: string): Promise<void>;
  /**
   * Every service's data kept, with when it was made (ms) and what it takes, for the sweeper of data no service names
   * (shared/hosted/sweep.ts). Data whose making was not recorded is recorded as made now.
   */
  inventory(): Promise<KeptData[]>;
  /**
   * Removes what a crash left while data was being written (a GeoPackage's staging file last written before `before`),
   * answering what it removed; a store whose writes leave nothing behind has none.
   */
  sweepStaging?(before: number): Promise<readonly { readonly name: string; readonly bytes: number }[]>;
}

export interface KeptData {
  readonly serviceItemId: string;
  /** When it was made, or last written (ms): data younger than an hour may belong to a publish still running. */
  readonly created: number;
  readonly bytes: number;
}
