// A request's edits as either hosted store makes them inside its transaction: each layer's adds (INSERT, its new
// object id answered), updates (UPDATE by object id: a row that is not there is ArcGIS's 1019) and deletes (one
// DELETE of the ids, each id not removed a 1019), in the request's order, then each edited layer's editing record
// (mapgate_editing) moved to the edit's moment, and, when rows changed, the edit's id in the edit log
// (mapgate_edit_log) that tells a crash's survivor whether the edit was kept. The statements are the emitters'
// (shared/features/sql/write.ts); the store gives the statement runner and its transaction. A layer read by reference
// from a registered database has its rows written by the same code (writeEdits) and nothing else: mapgate makes no
// table in a database it does not own (shared/hosted/byref-edit.ts).
import type { EmittedQuery } from "#shared/features/sql.ts";
import type { SqlEmitter } from "#shared/features/sql/emitter.ts";
import {
  deleteRows,
  editingTableDdl,
  editLogDdl,
  insertRow,
  logEdit,
  pruneEditLog,
  recordEdit,
  updateRow,
  type WriteTarget,
} from "#shared/features/sql/write.ts";
import { OUTBOX_RETENTION_SECONDS } from "#shared/stores/events.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import type { EditError, EditOutcome, EditRequest, EditResult, LayerEditResults } from "#shared/hosted/store.ts";

/** ArcGIS's answer for an update or delete of an object id the layer does not hold. */
export const missingObject = (verb: "Update" | "Delete") => ({
  code: 1019,
  description: `${verb} for the object was not attempted. Object may not exist.`,
});

/** A layer's table, key and geometry column as its schema names them. */
export function targetOf(schema: LayerSchema): WriteTarget {
  const oid = schema.fields.find((f) => f.name === schema.objectIdField);
  return {
    table: schema.table,
    idColumn: oid?.column ?? schema.objectIdField,
    ...(schema.geometry ? { geometry: { column: schema.geometry.column, srid: schema.geometry.srid } } : {}),
  };
}

/** Thrown inside the transaction to roll a request back when one of its edits failed (rollbackOnFailure). */
export class EditsRolledBack extends Error {
  readonly outcome: EditOutcome;
  constructor(outcome: EditOutcome) {
    super("edits rolled back");
    // The stores know it by name (they load this module only when they edit).
    this.name = "EditsRolledBack";
    this.outcome = outcome;
  }
}

const failedResult = (f: { failed: EditResult["error"]; objectId: number | null; globalId?: string | null }) => ({
  objectId: f.objectId,
  ...(f.globalId !== undefined ? { globalId: f.globalId } : {}),
  success: false,
  ...(f.failed ? { error: f.failed } : {}),
});

/**
 * A row the database refused (a by-reference table's own constraint, trigger or type): that edit's error, thrown by a
 * statement runner that can undo one statement alone (a savepoint), so the request's other edits go on.
 */
export class RowRefused extends Error {
  readonly error: EditError;
  constructor(error: EditError) {
    super(error.description);
    this.name = "RowRefused";
    this.error = error;
  }
}

/** Known by name, as EditsRolledBack: the runner's module may be another bundle's copy. */
const refused = (err: unknown): err is RowRefused => err instanceof Error && err.name === "RowRefused";

/** What a request's rows did: each layer's results, whether any edit failed, and which layers' rows changed. */
export interface WrittenEdits {
  readonly layers: LayerEditResults[];
  readonly failed: boolean;
  /** The edited layers' tables' names (their last part), in request order. */
  readonly changedTables: string[];
}

/**
 * Writes a request's rows with `run` (inside the caller's transaction) and answers each edit's result; nothing else is
 * written (the caller keeps its own records of the edit).
 */
export async function writeEdits(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  request: EditRequest,
): Promise<WrittenEdits> {
  const layers: LayerEditResults[] = [];
  const changedTables: string[] = [];
  let failed = false;
  for (const layer of request.layers) {
    const target = targetOf(layer.schema);
    const gid = layer.schema.editing?.globalIdField !== undefined;
    const withGid = (g: string | undefined) => (gid ? { globalId: g ?? null } : {});
    let written = 0;
    const addResults: EditResult[] = [];
    for (const add of layer.adds) {
      if ("failed" in add) {
        addResults.push(failedResult(add));
        failed = true;
        continue;
      }
      let row: unknown[] | undefined;
      try {
        [row] = await run(insertRow(emitter, target, add.ok));
      } catch (err) {
        if (!refused(err)) throw err;
        addResults.push({ objectId: -1, ...withGid(undefined), success: false, error: err.error });
        failed = true;
        continue;
      }
      addResults.push({ objectId: Number(row?.[0]), ...withGid(add.ok.globalId), success: true });
      written++;
    }
    const updateResults: EditResult[] = [];
    for (const update of layer.updates) {
      if ("failed" in update) {
        updateResults.push(failedResult(update));
        failed = true;
        continue;
      }
      let rows: unknown[][];
      try {
        rows = await run(updateRow(emitter, target, update.ok.id, update.ok));
      } catch (err) {
        if (!refused(err)) throw err;
        updateResults.push({
          objectId: update.ok.id,
          ...withGid(update.ok.globalId),
          success: false,
          error: err.error,
        });
        failed = true;
        continue;
      }
      if (rows.length === 0) {
        updateResults.push({
          objectId: update.ok.id,
          ...withGid(update.ok.globalId),
          success: false,
          error: missingObject("Update"),
        });
        failed = true;
      } else {
        updateResults.push({ objectId: update.ok.id, ...withGid(update.ok.globalId), success: true });
        written++;
      }
    }
    const ids = layer.deletes.flatMap((d) => ("ok" in d ? [d.ok.id] : []));
    let removed = new Set<number>();
    let deleteRefused: EditError | undefined;
    try {
      if (ids.length > 0) removed = new Set((await run(deleteRows(emitter, target, ids))).map((r) => Number(r[0])));
    } catch (err) {
      // One DELETE of them all: what refused it (a reference to a row) is every one's error.
      if (!refused(err)) throw err;
      deleteRefused = err.error;
    }
    const deleteResults: EditResult[] = layer.deletes.map((d) => {
      if ("failed" in d) {
        failed = true;
        return failedResult(d);
      }
      if (!removed.has(d.ok.id)) {
        failed = true;
        return {
          objectId: d.ok.id,
          ...withGid(d.ok.globalId),
          success: false,
          error: deleteRefused ?? missingObject("Delete"),
        };
      }
      return { objectId: d.ok.id, ...withGid(d.ok.globalId), success: true };
    });
    written += removed.size;
    if (written > 0) changedTables.push(layer.schema.table.at(-1) ?? "");
    layers.push({ layerId: layer.layerId, addResults, updateResults, deleteResults });
  }
  return { layers, failed, changedTables };
}

/**
 * Writes a request's edits with `run` (inside the caller's transaction; `schema` names the container of the editing
 * record: a PostgreSQL service's schema, none in a GeoPackage) and answers each edit's result. With
 * rollbackOnFailure, a failed edit throws EditsRolledBack after every edit was tried, so its results are all told.
 */
export async function applyEdits(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  request: EditRequest,
  container: string | undefined,
): Promise<EditOutcome> {
  const { layers, failed, changedTables } = await writeEdits(run, emitter, request);
  if (changedTables.length > 0) {
    await run({ sql: editingTableDdl(container), params: [], columns: [] });
    for (const table of changedTables) await run(recordEdit(emitter, container, table, request.moment));
  }
  const changed = changedTables.length > 0;
  if (failed && request.rollbackOnFailure) throw new EditsRolledBack({ committed: false, layers });
  // An edit that changed rows raises an event: its id is logged with its rows (the log's own rows kept as long as the
  // outbox keeps an event, pruned here).
  if (changed) {
    await run({ sql: editLogDdl(container), params: [], columns: [] });
    await run(pruneEditLog(emitter, container, request.moment - OUTBOX_RETENTION_SECONDS * 1000));
    await run(logEdit(emitter, container, request.editId, request.moment));
  }
  return { committed: true, layers, changed };
}
