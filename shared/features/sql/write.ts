// The statements that write a layer's rows, for either dialect from its emitter: an INSERT answering the new row's
// object id, an UPDATE by object id answering it when the row exists, a DELETE of a list of ids answering those it
// removed, and the upsert of a layer's editing record (mapgate_editing). Every value is bound (the emitter's
// placeholders and the driver's values); identifiers are the layer's own columns, quoted. The caller runs them in
// one transaction (shared/hosted/edit-apply.ts).
import type { Geometry } from "geojson";
import type { EmittedQuery } from "#shared/features/sql.ts";
import { type BindType, type Clauses, quoteIdentifier, type SqlEmitter } from "#shared/features/sql/emitter.ts";
import { EDITING_TABLE } from "#shared/features/schema.ts";
import type { Scope } from "#shared/features/ownership.ts";

/** The features a statement may reach by their creator (ownership-based access control): its column and scope. */
export interface OwnerRule {
  readonly column: string;
  readonly scope: Scope;
}

/** What a written value is, as the statement binds it. */
export type WriteKind = "integer" | "double" | "string" | "date";

/** The table a statement writes, its key and its geometry column. */
export interface WriteTarget {
  /** The table as the dialect names it (a GeoPackage table; a schema and a table in PostgreSQL). */
  readonly table: readonly string[];
  readonly idColumn: string;
  readonly geometry?: { readonly column: string; readonly srid: number };
}

/** A row's values by column (dates as epoch ms), each column's kind, and its geometry (undefined: not written). */
export interface WriteRow {
  readonly values: Readonly<Record<string, string | number | null>>;
  readonly kinds: Readonly<Record<string, WriteKind>>;
  readonly geometry?: Geometry | null;
}

const BIND: Readonly<Record<Exclude<WriteKind, "date">, BindType>> = {
  integer: "bigint",
  double: "double",
  string: "text",
};

/** A statement's parameters as they are bound (only `bind` is asked of it here: the id list's). */
export class Binder implements Clauses {
  readonly params: unknown[] = [];
  readonly #emitter: SqlEmitter;
  constructor(emitter: SqlEmitter) {
    this.#emitter = emitter;
  }
  bind(value: unknown, type?: BindType): string {
    this.params.push(this.#emitter.parameter(value, type));
    return this.#emitter.placeholder(this.params.length, type);
  }
  number(value: number): string {
    return this.bind(value, Number.isSafeInteger(value) ? "bigint" : "double");
  }
  text(value: string): string {
    return this.bind(value, "text");
  }
  expr(): string {
    throw new Error("a write statement holds no expression");
  }
  typed(): string {
    throw new Error("a write statement holds no expression");
  }
  /** The last date converted: a request's rows share their tracking dates (the edit's moment). */
  #date: { readonly ms: number; readonly value: unknown } | undefined;
  /** A column's value, bound as its kind says (a date as the dialect keeps dates). */
  value(v: string | number | null, kind: WriteKind): string {
    if (v === null) return "NULL";
    if (kind === "date") {
      const ms = Number(v);
      if (this.#date?.ms !== ms) this.#date = { ms, value: this.#emitter.dateValue(ms) };
      return this.bind(this.#date.value);
    }
    return this.bind(v, BIND[kind]);
  }
  geometry(g: Geometry | null, srid: number): string {
    if (g === null) return "NULL";
    return this.#emitter.geometryInput(this.bind(this.#emitter.geometryValue(g, srid)), () =>
      this.bind(srid, "integer"),
    );
  }
}

/**
 * The condition an owner rule sets, joined to the statement's own (an empty creator is an anonymous caller's
 * feature); an empty string when the rule reaches every feature.
 */
function ownedBy(b: Binder, rule: OwnerRule | undefined): string {
  if (!rule || rule.scope.all) return "";
  const column = quoteIdentifier(rule.column);
  const parts: string[] = [];
  if (rule.scope.username !== undefined) parts.push(`${column} = ${b.bind(rule.scope.username, "text")}`);
  if (rule.scope.anonymous) parts.push(`${column} IS NULL`, `${column} = ${b.bind("", "text")}`);
  return ` AND ${parts.length === 0 ? "1 = 0" : `(${parts.join(" OR ")})`}`;
}

const qualifiedTable = (t: WriteTarget) => t.table.map(quoteIdentifier).join(".");
const emitted = (sql: string, b: Binder): EmittedQuery => ({ sql, params: b.params, columns: [] });

/** The columns a row writes, and their values' SQL, in the row's order (its geometry last when written). */
function assignments(b: Binder, target: WriteTarget, row: WriteRow): [string, string][] {
  const out: [string, string][] = Object.entries(row.values).map(([column, v]) => [
    quoteIdentifier(column),
    b.value(v, row.kinds[column] ?? "string"),
  ]);
  if (target.geometry && row.geometry !== undefined)
    out.push([quoteIdentifier(target.geometry.column), b.geometry(row.geometry, target.geometry.srid)]);
  return out;
}

/** INSERT of one row, answering its object id (the table numbers it). */
export function insertRow(emitter: SqlEmitter, target: WriteTarget, row: WriteRow): EmittedQuery {
  const b = new Binder(emitter);
  const set = assignments(b, target, row);
  const id = quoteIdentifier(target.idColumn);
  const sql =
    set.length === 0
      ? `INSERT INTO ${qualifiedTable(target)} DEFAULT VALUES RETURNING ${id}`
      : `INSERT INTO ${qualifiedTable(target)} (${set.map(([c]) => c).join(", ")}) VALUES (${set.map(([, v]) => v).join(", ")}) RETURNING ${id}`;
  return emitted(sql, b);
}

/**
 * The most rows and bound values one multi-row INSERT takes: SQLite's default limit is 32,766 values, PostgreSQL's
 * 65,535; rows beyond go in the next INSERT (a request's 2,000 edits are a few statements).
 */
export const MAX_ROWS_PER_INSERT = 100;
export const MAX_VALUES_PER_INSERT = 30_000;

/** The columns a row writes, in its order (its geometry last when written): what a multi-row INSERT's rows share. */
export function columnsOf(target: WriteTarget, row: WriteRow): string[] {
  const columns = Object.keys(row.values);
  if (target.geometry && row.geometry !== undefined) columns.push(target.geometry.column);
  return columns;
}

/**
 * One INSERT of several rows that write the same columns (columnsOf; at least one), answering their object ids. The
 * rows' order in the statement is theirs, so a table that numbers new rows in the order it writes them (what mapgate
 * makes: SQLite's AUTOINCREMENT, PostgreSQL's identity) gives them ascending ids in that order. The srid is bound once.
 */
export function insertRows(emitter: SqlEmitter, target: WriteTarget, rows: readonly WriteRow[]): EmittedQuery {
  const [first] = rows;
  if (!first) throw new Error("an INSERT of no rows");
  const columns = columnsOf(target, first);
  if (columns.length === 0) throw new Error("a multi-row INSERT of rows without columns");
  const b = new Binder(emitter);
  const geometry = target.geometry && first.geometry !== undefined ? target.geometry : undefined;
  const names = geometry ? columns.slice(0, -1) : columns;
  let srid: string | undefined;
  const sridOnce = () => (srid ??= b.bind(geometry?.srid, "integer"));
  let tuples = "";
  for (const row of rows) {
    if ((target.geometry !== undefined && row.geometry !== undefined) !== (geometry !== undefined))
      throw new Error("rows of a multi-row INSERT differ");
    let written = 0;
    let tuple = "";
    for (const c of names) {
      const v = row.values[c];
      if (v === undefined) throw new Error("rows of a multi-row INSERT differ");
      tuple += `${written++ === 0 ? "" : ", "}${b.value(v, row.kinds[c] ?? "string")}`;
    }
    for (const c in row.values) if (--written < 0) throw new Error(`rows of a multi-row INSERT differ (${c})`);
    if (geometry) {
      const g = row.geometry ?? null;
      const cell =
        g === null ? "NULL" : emitter.geometryInput(b.bind(emitter.geometryValue(g, geometry.srid)), sridOnce);
      tuple += names.length === 0 ? cell : `, ${cell}`;
    }
    tuples += `${tuples === "" ? "" : ", "}(${tuple})`;
  }
  const sql = `INSERT INTO ${qualifiedTable(target)} (${columns.map(quoteIdentifier).join(", ")}) VALUES ${tuples} RETURNING ${quoteIdentifier(target.idColumn)}`;
  return emitted(sql, b);
}

/**
 * UPDATE of one row by object id, answering its id when it exists and `owner` lets the caller reach it (no row:
 * nothing updated). The ownership rule is checked by the statement that writes, so no edit between a check and the
 * write can change what it reaches.
 */
export function updateRow(
  emitter: SqlEmitter,
  target: WriteTarget,
  id: number,
  row: WriteRow,
  owner?: OwnerRule,
): EmittedQuery {
  const b = new Binder(emitter);
  const set = assignments(b, target, row);
  const key = quoteIdentifier(target.idColumn);
  // Nothing to change: the row's existence is still what the answer says.
  if (set.length === 0)
    return emitted(
      `SELECT ${key} FROM ${qualifiedTable(target)} WHERE ${key} = ${b.bind(id, "bigint")}${ownedBy(b, owner)}`,
      b,
    );
  const sql = `UPDATE ${qualifiedTable(target)} SET ${set.map(([c, v]) => `${c} = ${v}`).join(", ")} WHERE ${key} = ${b.bind(id, "bigint")}${ownedBy(b, owner)} RETURNING ${key}`;
  return emitted(sql, b);
}

/**
 * DELETE of the rows of a list of object ids (one parameter, however long) that `owner` lets the caller reach,
 * answering the ids removed.
 */
export function deleteRows(
  emitter: SqlEmitter,
  target: WriteTarget,
  ids: readonly number[],
  owner?: OwnerRule,
): EmittedQuery {
  const b = new Binder(emitter);
  const key = quoteIdentifier(target.idColumn);
  return emitted(
    `DELETE FROM ${qualifiedTable(target)} WHERE ${emitter.idsIn(b, key, ids)}${ownedBy(b, owner)} RETURNING ${key}`,
    b,
  );
}

/** The ids among `ids` of rows that exist and `owner` lets the caller reach (see: an edit refused, or missing). */
export function reachableIds(
  emitter: SqlEmitter,
  target: WriteTarget,
  ids: readonly number[],
  owner?: OwnerRule,
): EmittedQuery {
  const b = new Binder(emitter);
  const key = quoteIdentifier(target.idColumn);
  return emitted(
    `SELECT ${key} FROM ${qualifiedTable(target)} WHERE ${emitter.idsIn(b, key, ids)}${ownedBy(b, owner)}`,
    b,
  );
}

/** The object id of the row whose global id is `globalId`, when it exists and `owner` lets the caller reach it. */
export function reachableByGlobalId(
  emitter: SqlEmitter,
  target: WriteTarget,
  globalIdColumn: string,
  globalId: string,
  owner?: OwnerRule,
): EmittedQuery {
  const b = new Binder(emitter);
  const key = quoteIdentifier(target.idColumn);
  return emitted(
    `SELECT ${key} FROM ${qualifiedTable(target)} WHERE ${quoteIdentifier(globalIdColumn)} = ${b.bind(globalId, "text")}${ownedBy(b, owner)}`,
    b,
  );
}

/** The editing record's table in a container (a GeoPackage: no schema; a service's schema in PostgreSQL). */
const editingTable = (schema: string | undefined) =>
  schema === undefined
    ? quoteIdentifier(EDITING_TABLE)
    : `${quoteIdentifier(schema)}.${quoteIdentifier(EDITING_TABLE)}`;

/**
 * The editing record's table, made where a container has none yet (a layer made before editing was recorded): its
 * layer's table name, its global id and tracking fields' names (absent: none), its last edit (ms).
 */
export function editingTableDdl(schema: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${editingTable(schema)} (table_name TEXT PRIMARY KEY, global_id_field TEXT, creator_field TEXT, creation_date_field TEXT, editor_field TEXT, edit_date_field TEXT, last_edit BIGINT NOT NULL)`;
}

/** A layer's last edit recorded (its row made, without tracking fields, when the layer has none yet). */
export function recordEdit(emitter: SqlEmitter, schema: string | undefined, table: string, ms: number): EmittedQuery {
  const b = new Binder(emitter);
  const sql = `INSERT INTO ${editingTable(schema)} (table_name, last_edit) VALUES (${b.bind(table, "text")}, ${b.bind(ms, "bigint")}) ON CONFLICT (table_name) DO UPDATE SET last_edit = excluded.last_edit`;
  return emitted(sql, b);
}

/**
 * A new layer's editing record: its global id and tracking fields' names, and its making as its last edit (a layer
 * made again under a table name a deleted one had takes the new names).
 */
export function recordLayerEditing(
  emitter: SqlEmitter,
  schema: string | undefined,
  table: string,
  fields: {
    readonly globalIdField?: string;
    readonly creatorField?: string;
    readonly creationDateField?: string;
    readonly editorField?: string;
    readonly editDateField?: string;
  },
  ms: number,
): EmittedQuery {
  const b = new Binder(emitter);
  const name = b.bind(table, "text");
  const names = [
    fields.globalIdField,
    fields.creatorField,
    fields.creationDateField,
    fields.editorField,
    fields.editDateField,
  ].map((n) => (n === undefined ? "NULL" : b.bind(n, "text")));
  const sql = `INSERT INTO ${editingTable(schema)} (table_name, global_id_field, creator_field, creation_date_field, editor_field, edit_date_field, last_edit) VALUES (${name}, ${names.join(", ")}, ${b.bind(ms, "bigint")}) ON CONFLICT (table_name) DO UPDATE SET global_id_field = excluded.global_id_field, creator_field = excluded.creator_field, creation_date_field = excluded.creation_date_field, editor_field = excluded.editor_field, edit_date_field = excluded.edit_date_field, last_edit = excluded.last_edit`;
  return emitted(sql, b);
}

/**
 * The edit log: the id of every committed edit that raised an event, written in the edit's own transaction, so whoever
 * finds the event's outbox record still awaiting its commit (a crash between the commit and the bus) learns from the
 * data itself whether the edit was kept (shared/hosted/edit-events.ts). Rows older than the outbox keeps an event are
 * pruned by each edit.
 */
export const EDIT_LOG_TABLE = "mapgate_edit_log";

const editLogTable = (schema: string | undefined) =>
  schema === undefined
    ? quoteIdentifier(EDIT_LOG_TABLE)
    : `${quoteIdentifier(schema)}.${quoteIdentifier(EDIT_LOG_TABLE)}`;

/**
 * The edit log's table, made where a container has none yet; its unique (moment, edit_id) is the index its pruning
 * reads, made with the table: a separate CREATE INDEX IF NOT EXISTS in every edit would lock the table against the
 * concurrent edits' inserts (PostgreSQL takes its lock before it sees the index is there).
 */
export function editLogDdl(schema: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${editLogTable(schema)} (edit_id TEXT PRIMARY KEY, moment BIGINT NOT NULL, UNIQUE (moment, edit_id))`;
}

/** An edit's id logged at its moment (ms). */
export function logEdit(emitter: SqlEmitter, schema: string | undefined, editId: string, ms: number): EmittedQuery {
  const b = new Binder(emitter);
  return emitted(
    `INSERT INTO ${editLogTable(schema)} (edit_id, moment) VALUES (${b.bind(editId, "text")}, ${b.bind(ms, "bigint")})`,
    b,
  );
}

/** The edit log's rows logged before `ms`. */
export function pruneEditLog(emitter: SqlEmitter, schema: string | undefined, ms: number): EmittedQuery {
  const b = new Binder(emitter);
  return emitted(`DELETE FROM ${editLogTable(schema)} WHERE moment < ${b.bind(ms, "bigint")}`, b);
}

/** Whether an edit's id is in the log (one row: found). */
export function findEdit(emitter: SqlEmitter, schema: string | undefined, editId: string): EmittedQuery {
  const b = new Binder(emitter);
  return emitted(`SELECT 1 FROM ${editLogTable(schema)} WHERE edit_id = ${b.bind(editId, "text")}`, b);
}
