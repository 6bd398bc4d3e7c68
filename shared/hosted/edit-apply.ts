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
  columnsOf,
  deleteRows,
  editingTableDdl,
  editLogDdl,
  insertRow,
  insertRows,
  MAX_ROWS_PER_INSERT,
  MAX_VALUES_PER_INSERT,
  logEdit,
  type OwnerRule,
  pruneEditLog,
  reachableByGlobalId,
  reachableIds,
  recordEdit,
  updateRow,
  type WriteTarget,
} from "#shared/features/sql/write.ts";
import {
  attachmentOf,
  deleteAttachments,
  deleteAttachmentsOf,
  findAttachment,
  insertAttachment,
  updateAttachment,
} from "#shared/features/sql/attachments.ts";
import { OUTBOX_RETENTION_SECONDS } from "#shared/stores/events.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
import type {
  AttachmentEdits,
  EditError,
  EditOutcome,
  EditRequest,
  EditResult,
  EditRow,
  LayerEdit,
  LayerEditResults,
} from "#shared/hosted/store.ts";

/** ArcGIS's answer for an update or delete of an object id the layer does not hold. */
export const missingObject = (verb: "Update" | "Delete") => ({
  code: 1019,
  description: `${verb} for the object was not attempted. Object may not exist.`,
});

/** ArcGIS's answer for an update or delete of a feature the caller sees but its ownership rules keep them from. */
export const deniedByOwnership = () => ({
  code: 1007,
  description: "Edit denied due to ownership-based access control.",
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

/**
 * Whether the caller's ownership rules let them change a feature's attachments, which ArcGIS counts as an update of
 * the feature: `ok` (no rules, or the feature is theirs to update), `denied` (they see it, may not update it: 1007),
 * `missing` (not there, or hidden from them, so it is not told to exist). Asked inside the edit's transaction.
 */
export async function attachmentAccess(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  schema: LayerSchema,
  ownership: LayerEdit["ownership"],
  parent: { readonly objectId: number } | { readonly globalId: string },
): Promise<"ok" | "denied" | "missing"> {
  if (!ownership) return "ok";
  const target = targetOf(schema);
  const gid = schema.editing?.globalIdField?.toLowerCase();
  const gidColumn = gid === undefined ? undefined : schema.fields.find((f) => f.name.toLowerCase() === gid)?.column;
  const reach = async (scope: "query" | "update") => {
    const rule: OwnerRule = { column: ownership.column, scope: ownership[scope] };
    if ("objectId" in parent) return (await run(reachableIds(emitter, target, [parent.objectId], rule))).length > 0;
    if (gidColumn === undefined) return false;
    return (await run(reachableByGlobalId(emitter, target, gidColumn, parent.globalId, rule))).length > 0;
  };
  if (!(await reach("query"))) return "missing";
  return (await reach("update")) ? "ok" : "denied";
}

/**
 * PostgreSQL's answers to a CREATE TABLE IF NOT EXISTS that met the same table made by a concurrent transaction which
 * committed while this one waited for it: the catalog's unique index refused the second row (23505), or the name
 * was taken (42P07). Either way the table now exists.
 */
const MADE_MEANWHILE = new Set(["23505", "42P07"]);

/**
 * Makes one of mapgate's tables where a container has none yet (a service made before editing was recorded), inside
 * the edit's transaction: under a savepoint, so that when concurrent first edits race to make it, the one that
 * waited rolls back only its attempt and goes on with the table the other made.
 */
async function makeTable(run: (q: EmittedQuery) => Promise<unknown[][]>, ddl: string): Promise<void> {
  const plain = (sql: string) => run({ sql, params: [], columns: [] });
  await plain("SAVEPOINT mapgate_make_table");
  try {
    await plain(ddl);
  } catch (err) {
    if (!MADE_MEANWHILE.has(String((err as { code?: unknown }).code))) throw err;
    await plain("ROLLBACK TO SAVEPOINT mapgate_make_table");
  }
  await plain("RELEASE SAVEPOINT mapgate_make_table");
}

/**
 * Moves the last edit of the layers whose tables changed (their editing record, made where a container has none yet,
 * safely against a concurrent first edit making it too).
 */
export async function recordEdits(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  container: string | undefined,
  tables: readonly string[],
  moment: number,
): Promise<void> {
  if (tables.length === 0) return;
  await makeTable(run, editingTableDdl(container));
  for (const table of tables) await run(recordEdit(emitter, container, table, moment));
}

/**
 * An edit that changed rows raises an event: its id is logged with its rows, inside its transaction, which is what
 * tells a crash's survivor that it committed (the log's own rows kept as long as the outbox keeps an event, pruned here).
 */
export async function logEditId(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  container: string | undefined,
  editId: string,
  moment: number,
): Promise<void> {
  await makeTable(run, editLogDdl(container));
  await run(pruneEditLog(emitter, container, moment - OUTBOX_RETENTION_SECONDS * 1000));
  await run(logEdit(emitter, container, editId, moment));
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
const rowRefused = (err: unknown): err is RowRefused => err instanceof Error && err.name === "RowRefused";

/** What a request's rows did: each layer's results, whether any edit failed, and which layers' rows changed. */
export interface WrittenEdits {
  readonly layers: LayerEditResults[];
  readonly failed: boolean;
  /** The edited layers' tables' names (their last part), in request order. */
  readonly changedTables: string[];
  /** Attachments' bytes the edits let go of (removed once the edit committed). */
  readonly removedKeys: string[];
}

/** How a store's tables take rows. */
export interface WriteOptions {
  /**
   * The layers' tables number new rows in ascending order of their writing, as the tables mapgate makes do (SQLite's
   * AUTOINCREMENT key, PostgreSQL's identity): adds are then written many rows to an INSERT, each row's id told by
   * the ids' order. A table another owns may number rows any way (a trigger, a view's rule, a sequence counting
   * down): each of its adds is its own INSERT.
   */
  readonly numbersInOrder?: boolean;
}

/**
 * A layer's checked adds as their INSERTs: runs of consecutive adds that write the same columns in the same order, in
 * request order (so their ids ascend as the request lists them), each of at most MAX_ROWS_PER_INSERT rows and
 * MAX_VALUES_PER_INSERT values; every add alone unless the table numbers rows in order, and a row writing no column
 * (its table's defaults) always alone.
 */
function addBatches(
  target: WriteTarget,
  adds: LayerEdit["adds"],
  together: boolean,
): { readonly index: number; readonly row: EditRow }[][] {
  const batches: { index: number; row: EditRow }[][] = [];
  let current: { index: number; row: EditRow }[] = [];
  let key = "";
  let limit = 1;
  for (const [index, add] of adds.entries()) {
    if (!("ok" in add)) continue;
    const columns = columnsOf(target, add.ok);
    // The columns in the row's order (the checks write them in the request's order, then the server's fields): rows
    // that list the same columns in another order only start another INSERT. Column names hold no NUL.
    const k = columns.join("\u0000");
    if (current.length === 0 || k !== key || current.length >= limit) {
      if (current.length > 0) batches.push(current);
      current = [];
      key = k;
      limit =
        together && columns.length > 0
          ? Math.max(1, Math.min(MAX_ROWS_PER_INSERT, Math.floor(MAX_VALUES_PER_INSERT / (columns.length + 1))))
          : 1;
    }
    current.push({ index, row: add.ok });
  }
  if (current.length > 0) batches.push(current);
  return batches;
}

/**
 * Writes a request's rows with `run` (inside the caller's transaction) and answers each edit's result: features, with
 * the caller's ownership rules in the statements, and a layer's attachments; nothing else is written (the caller
 * keeps its own records of the edit).
 */
export async function writeEdits(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  request: EditRequest,
  options: WriteOptions = {},
): Promise<WrittenEdits> {
  const layers: LayerEditResults[] = [];
  const changedTables: string[] = [];
  const removedKeys: string[] = [];
  let failed = false;
  for (const layer of request.layers) {
    const target = targetOf(layer.schema);
    const gid = layer.schema.editing?.globalIdField !== undefined;
    const withGid = (g: string | undefined) => (gid ? { globalId: g ?? null } : {});
    let written = 0;
    const o = layer.ownership;
    const rule = (scope: "query" | "update" | "delete"): OwnerRule | undefined =>
      o ? { column: o.column, scope: o[scope] } : undefined;
    /**
     * Of the ids an update or delete did not reach, those the caller sees (refused by ownership, 1007); any other
     * (not there, or hidden from them) answers as missing, so a hidden feature is not told to exist.
     */
    const seen = async (missed: readonly number[]): Promise<Set<number>> =>
      o && missed.length > 0
        ? new Set((await run(reachableIds(emitter, target, missed, rule("query")))).map((r) => Number(r[0])))
        : new Set();
    const addResults: EditResult[] = [];
    /** One add's INSERT alone: its id, or (a row the database refused) its error. */
    const addOne = async (index: number, row: EditRow) => {
      try {
        const [inserted] = await run(insertRow(emitter, target, row));
        addResults[index] = { objectId: Number(inserted?.[0]), ...withGid(row.globalId), success: true };
        written++;
      } catch (err) {
        if (!rowRefused(err)) throw err;
        addResults[index] = { objectId: -1, ...withGid(undefined), success: false, error: err.error };
        failed = true;
      }
    };
    for (const [index, add] of layer.adds.entries()) {
      if (!("failed" in add)) continue;
      addResults[index] = failedResult(add);
      failed = true;
    }
    for (const batch of addBatches(target, layer.adds, options.numbersInOrder === true)) {
      if (batch.length === 1) {
        const [only] = batch;
        if (only) await addOne(only.index, only.row);
        continue;
      }
      let ids: number[];
      try {
        ids = (
          await run(
            insertRows(
              emitter,
              target,
              batch.map((b) => b.row),
            ),
          )
        ).map((r) => Number(r[0]));
      } catch (err) {
        if (!rowRefused(err)) throw err;
        // The database refused a row of the batch (its statement undone alone): each row again by itself, so the
        // refused one is that feature's error and the others are written.
        for (const b of batch) await addOne(b.index, b.row);
        continue;
      }
      if (ids.length !== batch.length) throw new Error(`an INSERT of ${batch.length} rows answered ${ids.length} ids`);
      // The table numbered its new rows in the order it wrote them (numbersInOrder): the ids sorted are the rows'.
      ids.sort((a, b) => a - b);
      for (const [i, b] of batch.entries()) {
        addResults[b.index] = { objectId: ids[i] ?? -1, ...withGid(b.row.globalId), success: true };
        written++;
      }
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
        rows = await run(updateRow(emitter, target, update.ok.id, update.ok, rule("update")));
      } catch (err) {
        if (!rowRefused(err)) throw err;
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
        const denied = (await seen([update.ok.id])).has(update.ok.id);
        updateResults.push({
          objectId: update.ok.id,
          ...withGid(update.ok.globalId),
          success: false,
          error: denied ? deniedByOwnership() : missingObject("Update"),
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
      if (ids.length > 0)
        removed = new Set((await run(deleteRows(emitter, target, ids, rule("delete")))).map((r) => Number(r[0])));
    } catch (err) {
      // One DELETE of them all: what refused it (a reference to a row) is every one's error.
      if (!rowRefused(err)) throw err;
      deleteRefused = err.error;
    }
    const deniedDeletes = deleteRefused ? new Set<number>() : await seen(ids.filter((id) => !removed.has(id)));
    const deleteResults: EditResult[] = layer.deletes.map((d) => {
      if ("failed" in d) {
        failed = true;
        return failedResult(d);
      }
      if (!removed.has(d.ok.id)) {
        failed = true;
        const error = deleteRefused ?? (deniedDeletes.has(d.ok.id) ? deniedByOwnership() : missingObject("Delete"));
        return { objectId: d.ok.id, ...withGid(d.ok.globalId), success: false, error };
      }
      return { objectId: d.ok.id, ...withGid(d.ok.globalId), success: true };
    });
    written += removed.size;
    // A deleted feature's attachments go with it; their bytes once the edit committed.
    if (layer.schema.attachments && removed.size > 0)
      for (const [key] of await run(deleteAttachmentsOf(emitter, layer.schema.table, [...removed])))
        removedKeys.push(String(key));
    const attachments = layer.attachments
      ? await applyAttachments(run, emitter, layer, layer.attachments, removedKeys)
      : undefined;
    if (attachments) {
      written += attachments.written;
      if (attachments.failed) failed = true;
    }
    if (written > 0) changedTables.push(layer.schema.table.at(-1) ?? "");
    layers.push({
      layerId: layer.layerId,
      addResults,
      updateResults,
      deleteResults,
      ...(attachments ? { attachments: attachments.results } : {}),
    });
  }
  return { layers, failed, changedTables, removedKeys };
}

/**
 * Writes a request's edits with `run` (inside the caller's transaction; `container` names the container of the
 * editing record: a PostgreSQL service's schema, none in a GeoPackage) and answers each edit's result. With
 * rollbackOnFailure, a failed edit throws EditsRolledBack after every edit was tried, so its results are all told.
 */
export async function applyEdits(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  request: EditRequest,
  container: string | undefined,
): Promise<EditOutcome> {
  // Hosted layers' tables are mapgate's: each numbers its rows in order (an AUTOINCREMENT key, an identity).
  const { layers, failed, changedTables, removedKeys } = await writeEdits(run, emitter, request, {
    numbersInOrder: true,
  });
  await recordEdits(run, emitter, container, changedTables, request.moment);
  const changed = changedTables.length > 0;
  if (failed && request.rollbackOnFailure) throw new EditsRolledBack({ committed: false, layers });
  if (changed) await logEditId(run, emitter, container, request.editId, request.moment);
  return { committed: true, layers, changed, ...(removedKeys.length > 0 ? { removedKeys } : {}) };
}

/**
 * A layer's applyEdits attachments (by global id, after its features' edits, so an attachment may belong to a feature
 * the same request adds): each added to its parent feature found by its global id, updated or deleted by its own;
 * the bytes a change lets go of are put in `removedKeys` (removed once the edit committed).
 */
async function applyAttachments(
  run: (q: EmittedQuery) => Promise<unknown[][]>,
  emitter: SqlEmitter,
  { schema, ownership }: Pick<LayerEdit, "schema" | "ownership">,
  edits: AttachmentEdits,
  removedKeys: string[],
) {
  const table = schema.table;
  // A feature's attachments change as the feature would: its ownership rules apply (1007, or missing when hidden).
  const access = (parent: { readonly objectId: number } | { readonly globalId: string }) =>
    attachmentAccess(run, emitter, schema, ownership, parent);
  const column = (name: string | undefined) =>
    name === undefined ? undefined : schema.fields.find((f) => f.name.toLowerCase() === name.toLowerCase())?.column;
  const gid = column(schema.editing?.globalIdField);
  const layer = { table, idColumn: targetOf(schema).idColumn, ...(gid ? { globalIdColumn: gid } : {}) };
  let written = 0;
  let failed = false;
  const fail = (globalId: string, error: EditResult["error"]): EditResult => {
    failed = true;
    return { objectId: -1, globalId, success: false, ...(error ? { error } : {}) };
  };
  const find = async (globalId: string) => {
    const [row] = await run(findAttachment(emitter, table, { globalId }, true));
    return row ? attachmentOf(row) : undefined;
  };
  const addResults: EditResult[] = [];
  for (const a of edits.adds) {
    if (await find(a.globalId)) {
      addResults.push(
        fail(a.globalId, { code: 1000, description: `An attachment with global id ${a.globalId} exists.` }),
      );
      continue;
    }
    const reach = await access({ globalId: a.parentGlobalId });
    if (reach === "denied") {
      addResults.push(fail(a.globalId, deniedByOwnership()));
      continue;
    }
    const [row] =
      gid && reach === "ok"
        ? await run(insertAttachment(emitter, layer, { globalId: a.parentGlobalId }, { ...a, keywords: null }))
        : [];
    if (!row) {
      addResults.push(
        fail(a.globalId, {
          code: 1000,
          description: `The layer has no feature with global id ${a.parentGlobalId} to attach it to.`,
        }),
      );
      continue;
    }
    addResults.push({ objectId: Number(row[0]), globalId: a.globalId, success: true });
    written++;
  }
  const updateResults: EditResult[] = [];
  for (const u of edits.updates) {
    const before = await find(u.globalId);
    const reach = before ? await access({ objectId: before.parentId }) : "missing";
    if (!before || reach !== "ok") {
      updateResults.push(fail(u.globalId, reach === "denied" ? deniedByOwnership() : missingObject("Update")));
      continue;
    }
    await run(updateAttachment(emitter, table, before.id, { ...u, keywords: null }));
    removedKeys.push(before.key);
    updateResults.push({ objectId: before.id, globalId: u.globalId, success: true });
    written++;
  }
  const deleteResults: EditResult[] = [];
  for (const g of edits.deletes) {
    const before = await find(g);
    const reach = before ? await access({ objectId: before.parentId }) : "missing";
    if (!before || reach !== "ok") {
      deleteResults.push(fail(g, reach === "denied" ? deniedByOwnership() : missingObject("Delete")));
      continue;
    }
    await run(deleteAttachments(emitter, table, [before.id]));
    removedKeys.push(before.key);
    deleteResults.push({ objectId: before.id, globalId: g, success: true });
    written++;
  }
  return { results: { addResults, updateResults, deleteResults }, written, failed };
}
