// Hosted layers' data as one GeoPackage per hosted service, named by the service item's id, written by mapgate
// (never the upload itself) and read by the same GeoPackage reader as by-reference layers, through the same Storage
// (a folder of the data folder locally, `hosted/` of the stack's item-files bucket on AWS).
import { bucketClient, hostedDataPlace } from "#shared/hosted/data-place.ts";
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, mkdir, open, readdir, rename, rm, stat, utimes, writeFile } from "node:fs/promises";
import { DatabaseSync, type StatementSync } from "node:sqlite";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  addLayers,
  asDeclared,
  type CellValue,
  type ColumnSpec,
  ensureDataColumns,
  type Extent,
  type WrittenLayer,
  writeGeoPackageStreaming,
} from "#shared/features/geopackage-writer.ts";
import { encodeGeometry } from "#shared/features/geometry/wkb-write.ts";
import { quote, rtreeExtent } from "#shared/features/geopackage.ts";
import { boundsOf } from "#shared/features/sqlite-functions.ts";
import type { FieldKind } from "#shared/hosted/tables.ts";
import { checkedItemId, HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { AmbiguousKeyError, keyOf } from "#shared/hosted/append-keys.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import {
  EDIT_LOG_TABLE,
  editingTableDdl,
  editLogDdl,
  findEdit,
  recordLayerEditing,
} from "#shared/features/sql/write.ts";
import type { LayerEditing } from "#shared/features/schema.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import type {
  AppendCounts,
  AppendRow,
  BeforeCommit,
  EditOutcome,
  EditRequest,
  DefinedLayer,
  HostedDefinitions,
  HostedLayer,
  HostedStore,
  KeptData,
  LayerAppend,
  RunStatement,
} from "#shared/hosted/store.ts";
import type { StoreLocation } from "#shared/storage/storage.ts";
import { allAttachmentKeys, attachTableDdl, attachTableName } from "#shared/features/sql/attachments.ts";
import { removeAttachmentBytes, removeServiceAttachments } from "#shared/hosted/attachment-charges.ts";

/**
 * The GeoPackage column type of each kind. An integer kind holds 32-bit values (what esriFieldTypeInteger is):
 * GeoPackage's 32-bit type is MEDIUMINT (its INTEGER is 64-bit, which GDAL reads as Integer64).
 */
const COLUMN_TYPES: Readonly<Record<FieldKind, ColumnSpec["type"]>> = {
  integer: "MEDIUMINT",
  double: "DOUBLE",
  date: "DATETIME",
  string: "TEXT",
};

const PREFIX = "hosted";
/** The most statements an edit's connection keeps prepared (a request's statements are of a few shapes). */
const PREPARED_PER_CONNECTION = 64;

/** The file name of a hosted service's data. */
export function hostedFileName(serviceItemId: string): string {
  return `${checkedItemId(serviceItemId)}.gpkg`;
}

/** The location a hosted service's source names: what serving opens, as it opens any store's. */
function hostedLocation(): StoreLocation {
  const w = hostedDataPlace();
  return "bucket" in w ? { bucket: w.bucket, prefix: PREFIX } : { folder: w.dir };
}

/**
 * Makes a hosted service's GeoPackage: `write` writes it at the temporary path given (whole, or throws), then it
 * is moved (a folder) or uploaded (a bucket) under its final name; answers its size. Nothing is left behind on
 * failure.
 */
/**
 * Where a service's file is written before it takes its place: beside it in a folder (a rename then replaces it
 * whole), or in this machine's temporary folder before an upload to a bucket.
 */
async function staged(serviceItemId: string) {
  const name = hostedFileName(serviceItemId);
  const w = hostedDataPlace();
  const staging = "dir" in w ? w.dir : join(tmpdir(), "mapgate-hosted");
  await mkdir(staging, { recursive: true, mode: 0o700 });
  return { name, w, temporary: join(staging, `.${name}.${randomBytes(6).toString("hex")}.part`) };
}

async function keepHostedData(serviceItemId: string, write: (path: string) => Promise<void>): Promise<number> {
  const { name, w, temporary } = await staged(serviceItemId);
  try {
    await write(temporary);
    if ("dir" in w) {
      const { size } = await stat(temporary);
      await rename(temporary, join(w.dir, name));
      return size;
    }
    return await putFile(w.bucket, name, temporary);
  } finally {
    await rm(temporary, { force: true });
  }
}

/**
 * Changes a hosted service's GeoPackage: the kept file is copied to a temporary path, `change` changes the copy in
 * one SQLite transaction (whole, or throws), `settle` is told its new size, and the copy then takes the file's place
 * (a rename in a folder, an upload to a bucket), so a reader sees the old file or the new one, never one half
 * changed. Nothing is left behind on failure, and the kept file is then as it was. Callers serialize changes of one
 * service (shared/hosted/define.ts holds its item's lock).
 */
async function changeHostedData<R>(
  serviceItemId: string,
  change: (db: DatabaseSync) => R,
  settle: (bytes: number, result: R) => Promise<void>,
): Promise<R> {
  const { name, w, temporary } = await staged(serviceItemId);
  try {
    if ("dir" in w) {
      await copyFile(join(w.dir, name), temporary);
    } else {
      const { s3, client } = await bucketClient();
      const got = await client.send(new s3.GetObjectCommand({ Bucket: w.bucket, Key: `${PREFIX}/${name}` }));
      if (!got.Body) throw new Error(`hosted data ${name} has no body`);
      await writeFile(temporary, await got.Body.transformToByteArray(), { mode: 0o600 });
    }
    const db = new DatabaseSync(temporary);
    let result: R;
    try {
      db.exec("BEGIN");
      result = change(db);
      db.exec("COMMIT");
    } catch (err) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw err;
    } finally {
      db.close();
    }
    // Durable before it takes the kept file's place.
    const handle = await open(temporary, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    const { size } = await stat(temporary);
    // What must hold before the change is kept (the quota, the service's layers): refused, the file stays as it was.
    await settle(size, result);
    await putInPlace(w, name, temporary);
    return result;
  } finally {
    await rm(temporary, { force: true });
  }
}

/** The staged file takes the kept file's place: a rename in a folder (readers see one or the other), a PUT to a bucket. */
async function putInPlace(w: { readonly bucket: string } | { readonly dir: string }, name: string, temporary: string) {
  if ("dir" in w) {
    await rename(temporary, join(w.dir, name));
    return;
  }
  await putFile(w.bucket, name, temporary);
}

/** A file put in the bucket, streamed from the disk with its length: never held whole in the function's memory. */
async function putFile(bucket: string, name: string, temporary: string): Promise<number> {
  const { size } = await stat(temporary);
  const { s3, client } = await bucketClient();
  await client.send(
    new s3.PutObjectCommand({
      Bucket: bucket,
      Key: `${PREFIX}/${name}`,
      Body: createReadStream(temporary),
      ContentLength: size,
    }),
  );
  return size;
}

const hasTable = (db: DatabaseSync, name: string) =>
  db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(name) !== undefined;
const geometryColumnOf = (db: DatabaseSync, table: string) =>
  (
    db.prepare("SELECT column_name FROM gpkg_geometry_columns WHERE table_name = ?").get(table) as
      { column_name: string } | undefined
  )?.column_name;

/** Keeps fields' aliases (GeoPackage's schema extension: gpkg_data_columns.title). */
function setTitles(db: DatabaseSync, table: string, columns: readonly { name: string; title?: string }[]): void {
  const titled = columns.filter((c) => c.title !== undefined);
  if (titled.length === 0) return;
  ensureDataColumns(db);
  const put = db.prepare(
    "INSERT OR REPLACE INTO gpkg_data_columns (table_name, column_name, name, title) VALUES (?, ?, ?, ?)",
  );
  for (const c of titled) put.run(table, c.name, c.name, c.title ?? null);
}

/** A column's declared type, as the writer declares it (a text's length as TEXT(n), which clients read). */
const declared = (c: ColumnSpec) => (c.type === "TEXT" && c.maxLength !== undefined ? `TEXT(${c.maxLength})` : c.type);

const definitions: HostedDefinitions = {
  addLayers: (serviceItemId: string, layers: readonly DefinedLayer[], { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        addLayers(
          db,
          layers.map((l) => ({
            name: l.name,
            ...(l.geometryType ? { geometryType: l.geometryType, srsId: 4326 as const } : {}),
            idColumn: l.idColumn,
            columns: l.columns,
            indexes: globalIdIndex(l),
            rows: [],
          })),
        );
        recordEditing(db, layers);
        for (const l of layers)
          if (l.attachments) for (const ddl of attachTableDdl(sqliteEmitter, [l.name])) db.exec(ddl);
      },
      (bytes) => settle(bytes),
    ),
  deleteLayers: (serviceItemId, tables, { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        const keys: string[] = [];
        for (const table of new Set(tables)) {
          keys.push(...dropAttachTable(db, table));
          const geometry = geometryColumnOf(db, table);
          db.exec(`DROP TABLE IF EXISTS ${quote(table)}`);
          if (geometry) db.exec(`DROP TABLE IF EXISTS ${quote(`rtree_${table}_${geometry}`)}`);
          for (const meta of ["gpkg_geometry_columns", "gpkg_extensions", "gpkg_contents"])
            db.prepare(`DELETE FROM ${meta} WHERE table_name = ?`).run(table);
          if (hasTable(db, "gpkg_data_columns"))
            db.prepare("DELETE FROM gpkg_data_columns WHERE table_name = ?").run(table);
        }
        return keys;
      },
      (bytes) => settle(bytes),
    ).then((keys) => removeAttachmentBytes(serviceItemId, keys)),
  addFields: (serviceItemId, table, columns, { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        for (const c of columns) db.exec(`ALTER TABLE ${quote(table)} ADD COLUMN ${quote(c.name)} ${declared(c)}`);
        setTitles(db, table, columns);
      },
      (bytes) => settle(bytes),
    ),
  deleteFields: (serviceItemId, table, names, { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        const titled = hasTable(db, "gpkg_data_columns");
        for (const name of names) {
          db.exec(`ALTER TABLE ${quote(table)} DROP COLUMN ${quote(name)}`);
          if (titled)
            db.prepare("DELETE FROM gpkg_data_columns WHERE table_name = ? AND column_name = ?").run(table, name);
        }
      },
      (bytes) => settle(bytes),
    ),
  setTitles: (serviceItemId, table, titles, { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => setTitles(db, table, titles),
      (bytes) => settle(bytes),
    ),
  truncate: (serviceItemId, table, { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        const geometry = geometryColumnOf(db, table);
        db.exec(`DELETE FROM ${quote(table)}`);
        // Its attachments go with its rows (object ids start again from 1: none may keep an old row's).
        const attach = attachTableName(table, sqliteEmitter);
        const keys = hasTable(db, attach) ? attachmentKeys(db, table) : [];
        if (keys.length > 0) db.exec(`DELETE FROM ${quote(attach)}`);
        // The next object id is 1 again, as ArcGIS's truncate resets it (an AUTOINCREMENT table keeps its count in
        // sqlite_sequence).
        if (hasTable(db, "sqlite_sequence")) db.prepare("DELETE FROM sqlite_sequence WHERE name = ?").run(table);
        if (geometry && hasTable(db, `rtree_${table}_${geometry}`))
          db.exec(`DELETE FROM ${quote(`rtree_${table}_${geometry}`)}`);
        db.prepare(
          "UPDATE gpkg_contents SET min_x = NULL, min_y = NULL, max_x = NULL, max_y = NULL, last_change = ? " +
            "WHERE table_name = ?",
        ).run(new Date().toISOString(), table);
        return keys;
      },
      (bytes) => settle(bytes),
    ).then((keys) => removeAttachmentBytes(serviceItemId, keys)),
  addAttachments: (serviceItemId, tables, { settle }) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        for (const table of tables) for (const ddl of attachTableDdl(sqliteEmitter, [table])) db.exec(ddl);
      },
      (bytes) => settle(bytes),
    ),
};

/** Every attachment's bytes' key of a layer. */
function attachmentKeys(db: DatabaseSync, table: string): string[] {
  const statement = db.prepare(allAttachmentKeys(sqliteEmitter, [table]));
  statement.setReturnArrays(true);
  return (statement.all() as unknown as unknown[][]).map((r) => String(r[0]));
}

/** Drops a layer's attachment table, when it has one, answering the keys of the bytes it named. */
function dropAttachTable(db: DatabaseSync, table: string): string[] {
  const attach = attachTableName(table, sqliteEmitter);
  if (!hasTable(db, attach)) return [];
  const keys = attachmentKeys(db, table);
  db.exec(`DROP TABLE ${quote(attach)}`);
  return keys;
}

/** The INTEGER PRIMARY KEY column of a table (the object id). */
function idColumnOf(db: DatabaseSync, table: string): string {
  const columns = db.prepare(`PRAGMA table_info(${quote(table)})`).all() as { name: string; pk: number }[];
  const pk = columns.find((c) => c.pk === 1);
  if (!pk) throw new Error(`hosted table ${table} has no primary key`);
  return pk.name;
}

/**
 * The spatial functions the GeoPackage R*Tree triggers call (ST_IsEmpty, ST_MinX…), as GeoPackage libraries register
 * them: on this connection only, so rows added here keep the table's index right as GDAL's would.
 */
export function registerSpatialFunctions(db: DatabaseSync): void {
  const box = (g: unknown) => boundsOf(g as Uint8Array | null);
  db.function("ST_IsEmpty", { deterministic: true }, (g) => (box(g) ? 0 : 1));
  db.function("ST_MinX", { deterministic: true }, (g) => box(g)?.xmin ?? null);
  db.function("ST_MaxX", { deterministic: true }, (g) => box(g)?.xmax ?? null);
  db.function("ST_MinY", { deterministic: true }, (g) => box(g)?.ymin ?? null);
  db.function("ST_MaxY", { deterministic: true }, (g) => box(g)?.ymax ?? null);
}

type SqlValue = string | number | bigint | Uint8Array | null;

/** A value as the writer stores it (dates as ISO 8601 text, as DATETIME columns hold them). */
const sqlValue = (v: CellValue): SqlValue =>
  v === undefined || v === null ? null : typeof v === "boolean" ? (v ? 1 : 0) : v instanceof Date ? v.toISOString() : v;

/** Appends rows to a layer's table in the open transaction; answers the counts and the layer's extent after. */
function appendRows(db: DatabaseSync, change: LayerAppend): AppendCounts & { extent?: Extent } {
  registerSpatialFunctions(db);
  const table = change.table;
  const id = idColumnOf(db, table);
  const geometryColumn = change.geometryType ? geometryColumnOf(db, table) : undefined;
  if (change.geometryType && !geometryColumn) throw new Error(`hosted table ${table} has no geometry column`);
  const blob = (g: AppendRow["geometry"]) =>
    g && change.geometryType ? encodeGeometry(asDeclared(g, change.geometryType, table), 4326).bytes : null;
  const insertNames = [...(geometryColumn ? [geometryColumn] : []), ...change.columns];
  const insert = db.prepare(
    insertNames.length === 0
      ? `INSERT INTO ${quote(table)} DEFAULT VALUES`
      : `INSERT INTO ${quote(table)} (${insertNames.map(quote).join(", ")}) VALUES (${insertNames.map(() => "?").join(", ")})`,
  );
  const key = change.key;
  // The layer's rows by key, read in one pass (no index is needed): -1 marks a value two rows share.
  const rows = new Map<string, number>();
  if (key)
    for (const r of db
      .prepare(
        `SELECT ${quote(id)} AS id, ${quote(key.column)} AS k FROM ${quote(table)} WHERE ${quote(key.column)} IS NOT NULL`,
      )
      .iterate() as Iterable<{ id: number; k: unknown }>) {
      const k = keyOf(r.k) as string;
      rows.set(k, rows.has(k) ? -1 : r.id);
    }
  const updateNames = key ? [...(key.updateGeometry && geometryColumn ? [geometryColumn] : []), ...key.columns] : [];
  const update =
    key && updateNames.length > 0
      ? db.prepare(
          `UPDATE ${quote(table)} SET ${updateNames.map((n) => `${quote(n)} = ?`).join(", ")} WHERE ${quote(id)} = ?`,
        )
      : undefined;
  let added = 0;
  let updated = 0;
  for (const row of change.rows) {
    const at = key ? rows.get(keyOf(row.values[key.column]) ?? "") : undefined;
    if (at === -1) throw new AmbiguousKeyError(String(row.values[key?.column ?? ""]));
    if (key && at !== undefined) {
      if (key.skipUpdates) continue;
      const params: SqlValue[] = [];
      if (key.updateGeometry && geometryColumn) params.push(blob(row.geometry));
      for (const c of key.columns) params.push(sqlValue(row.values[c]));
      update?.run(...params, at);
      updated++;
      continue;
    }
    if (key?.skipInserts) continue;
    const params: SqlValue[] = [];
    if (geometryColumn) params.push(blob(row.geometry));
    for (const c of change.columns) params.push(sqlValue(row.values[c]));
    insert.run(...params);
    added++;
  }
  let extent: Extent | undefined;
  if (geometryColumn) {
    const e = db
      .prepare(
        `SELECT min(minx) AS a, min(miny) AS b, max(maxx) AS c, max(maxy) AS d FROM ${quote(`rtree_${table}_${geometryColumn}`)}`,
      )
      .get() as { a: number | null; b: number | null; c: number | null; d: number | null };
    if (e.a !== null && e.b !== null && e.c !== null && e.d !== null) extent = [e.a, e.b, e.c, e.d];
    db.prepare(
      "UPDATE gpkg_contents SET min_x = ?, min_y = ?, max_x = ?, max_y = ?, last_change = ? WHERE table_name = ?",
    ).run(...(extent ?? [null, null, null, null]), new Date().toISOString(), table);
  } else {
    db.prepare("UPDATE gpkg_contents SET last_change = ? WHERE table_name = ?").run(new Date().toISOString(), table);
  }
  return { added, updated, ...(extent ? { extent } : {}) };
}

/** New layers' editing records (their global id and tracking fields), in the open file's mapgate_editing table. */
function recordEditing(
  db: DatabaseSync,
  layers: readonly { readonly name: string; readonly editing?: LayerEditing | undefined }[],
): void {
  const tracked = layers.filter((l) => l.editing !== undefined);
  if (tracked.length === 0) return;
  db.exec(editingTableDdl(undefined));
  db.exec(editLogDdl(undefined));
  const now = Date.now();
  for (const l of tracked) {
    const q = recordLayerEditing(sqliteEmitter, undefined, l.name, l.editing ?? {}, now);
    db.prepare(q.sql).run(...(q.params as never[]));
  }
}

/** The same, in a file just written (before it takes its place). */
function recordEditingAt(path: string, layers: readonly { readonly name: string; readonly editing?: LayerEditing }[]) {
  if (!layers.some((l) => l.editing !== undefined)) return;
  const db = new DatabaseSync(path);
  try {
    recordEditing(db, layers);
  } finally {
    db.close();
  }
}

/** A layer's extent from its R*Tree, kept in gpkg_contents with the time of the change (as GDAL keeps them). */
function settleContents(db: DatabaseSync, table: string, geometryColumn: string | undefined, when: number): void {
  let extent: Extent | undefined;
  if (geometryColumn && hasTable(db, `rtree_${table}_${geometryColumn}`)) {
    const e = rtreeExtent(db, `rtree_${table}_${geometryColumn}`);
    if (e) extent = [e[0], e[1], e[2], e[3]];
    db.prepare(
      "UPDATE gpkg_contents SET min_x = ?, min_y = ?, max_x = ?, max_y = ?, last_change = ? WHERE table_name = ?",
    ).run(...(extent ?? [null, null, null, null]), new Date(when).toISOString(), table);
  } else
    db.prepare("UPDATE gpkg_contents SET last_change = ? WHERE table_name = ?").run(
      new Date(when).toISOString(),
      table,
    );
}

/**
 * A request's edits, written in place in the service's file (a folder's: a file in a bucket is never changed in
 * place) in one SQLite transaction, under the service's lock that the caller holds (a definition change copies and
 * swaps the file, so none overlaps an edit). The R*Tree follows through its triggers (their spatial functions are
 * registered on this connection), gpkg_contents keeps each layer's extent, and the file's time moves after the
 * commit so readers (the GeoPackage reader keys its open file by size and time) read it again.
 */
async function inPlace<T>(
  serviceItemId: string,
  work: (run: RunStatement, db: DatabaseSync) => Promise<T>,
): Promise<T> {
  const w = hostedDataPlace();
  if (!("dir" in w)) throw new Error("hosted GeoPackages in a bucket are not edited in place");
  const file = join(w.dir, hostedFileName(serviceItemId));
  // A service whose file is gone (deleted meanwhile) is not made again by opening it.
  await stat(file);
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: false, allowExtension: false });
  let result: T;
  try {
    registerSpatialFunctions(db);
    db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL");
    // Each statement prepared once per connection: a request's many INSERTs of the same shape (a batch of rows, or
    // one row at a time) reuse it. Bounded, as a request's statements are few shapes but its SQL is not bounded.
    const prepared = new Map<string, StatementSync>();
    const run = async (q: EmittedQuery) => {
      let statement = prepared.get(q.sql);
      if (!statement) {
        statement = db.prepare(q.sql);
        statement.setReturnArrays(true);
        if (prepared.size >= PREPARED_PER_CONNECTION) prepared.clear();
        prepared.set(q.sql, statement);
      }
      return statement.all(...(q.params as never[])) as unknown as unknown[][];
    };
    db.exec("BEGIN IMMEDIATE");
    try {
      result = await work(run, db);
      db.exec("COMMIT");
    } catch (err) {
      if (db.isTransaction) db.exec("ROLLBACK");
      throw err;
    }
  } finally {
    db.close();
  }
  // The file's time is part of its version: a reader that kept it open (its schema, extent and last edit) opens it
  // again on its next request.
  const now = new Date();
  await utimes(file, now, now).catch(() => undefined);
  return result;
}

async function editInPlace(
  serviceItemId: string,
  request: EditRequest,
  beforeCommit: BeforeCommit,
): Promise<EditOutcome> {
  // Loaded by the first edit: the functions that make or drop hosted data (deleting an item) do not carry it.
  const { applyEdits, EditsRolledBack } = await import("#shared/hosted/edit-apply.ts");
  try {
    return await inPlace(serviceItemId, async (run, db) => {
      const outcome = await applyEdits(run, sqliteEmitter, request, undefined);
      for (const layer of request.layers) {
        const table = layer.schema.table.at(-1) ?? "";
        settleContents(db, table, layer.schema.geometry?.column, request.moment);
      }
      await beforeCommit(outcome);
      // What the rows take now: the file's pages but its free ones (a delete's pages are reused by later adds, so
      // deleting features gives room back though the file does not shrink).
      const pragma = (name: string) => Number((db.prepare(`PRAGMA ${name}`).get() as Record<string, unknown>)[name]);
      return outcome.changed
        ? { ...outcome, bytes: (pragma("page_count") - pragma("freelist_count")) * pragma("page_size") }
        : outcome;
    });
  } catch (err) {
    if (err instanceof EditsRolledBack) return err.outcome;
    throw err;
  }
}

/**
 * Whether an edit's id is in a service's edit log; undefined when its file is gone. Opened for writing, as an edit
 * opens it: a journal a crash left in the middle of an edit is rolled back first (SQLite does it on the first read of
 * a connection that may write), so an edit that never committed is not found.
 */
async function committedInFile(serviceItemId: string, editId: string): Promise<boolean | undefined> {
  const w = hostedDataPlace();
  // A bucket's files are never edited in place (editing needs the hosting database there): none logged an edit.
  if (!("dir" in w)) return false;
  const file = join(w.dir, hostedFileName(serviceItemId));
  if (!(await stat(file).catch(() => undefined))) return undefined;
  const db = new DatabaseSync(file, { enableForeignKeyConstraints: false, allowExtension: false });
  try {
    db.exec("PRAGMA busy_timeout = 5000");
    if (!hasTable(db, EDIT_LOG_TABLE)) return false;
    const q = findEdit(sqliteEmitter, undefined, editId);
    return db.prepare(q.sql).all(...(q.params as never[])).length > 0;
  } finally {
    db.close();
  }
}

/** A layer of a service's file, as the writer makes it from a published file's table. */
const writtenLayer = (l: HostedLayer) => ({
  name: l.name,
  identifier: l.title,
  ...(l.geometryType ? { geometryType: l.geometryType, srsId: 4326 as const } : {}),
  columns: l.columns.map((c) => ({
    name: c.name,
    type: COLUMN_TYPES[c.kind],
    ...(c.length !== undefined ? { maxLength: c.length } : {}),
    // The field's alias (its column as the file named it), kept as the column's title.
    ...(c.title !== undefined ? { title: c.title } : {}),
  })),
  indexes: globalIdIndex(l),
  rows: l.rows,
});

/**
 * The column a layer's global id is kept in, indexed: edits with useGlobalIds (and attachments' global ids) find
 * their feature by it, which would otherwise read the whole table per feature.
 */
function globalIdIndex(l: { readonly columns: readonly { name: string }[]; readonly editing?: LayerEditing }) {
  const gid = l.editing?.globalIdField;
  return gid !== undefined && l.columns.some((c) => c.name === gid) ? [gid] : [];
}

/** The union of layers' extents (none without any). */
export function unionOf(extents: readonly (Extent | undefined)[]): Extent | undefined {
  let u: [number, number, number, number] | undefined;
  for (const e of extents) {
    if (!e) continue;
    u = u
      ? [Math.min(u[0], e[0]), Math.min(u[1], e[1]), Math.max(u[2], e[2]), Math.max(u[3], e[3])]
      : [e[0], e[1], e[2], e[3]];
  }
  return u;
}

export const geoPackageStore: HostedStore = {
  kind: "geopackage",
  // A service of several layers names its file and its first layer (as publishing writes it); `layers` each table.
  sourceOf: (serviceItemId, layers) => ({
    datastoreId: HOSTED_STORE_ID,
    location: hostedLocation(),
    path: `/${hostedFileName(serviceItemId)}/${layers.find((l) => l !== null) ?? ""}`,
    layers: [...layers],
  }),
  definitions,
  edit: editInPlace,
  transact: (serviceItemId, work) =>
    inPlace(serviceItemId, (run) => work({ run, emitter: sqliteEmitter, container: undefined })),
  committed: committedInFile,
  async append(serviceItemId, rows, { settle }) {
    const { added, updated } = await changeHostedData(
      serviceItemId,
      (db) => appendRows(db, rows),
      (bytes, result) => settle(bytes, result.extent),
    );
    return { added, updated };
  },
  async replace(serviceItemId, layers, { settle }) {
    // A new file, written whole beside the kept one, then taking its place (as a definition change's copy does).
    const { name, w, temporary } = await staged(serviceItemId);
    try {
      const written = await writeGeoPackageStreaming(temporary, layers.map(writtenLayer));
      recordEditingAt(temporary, layers);
      const { size } = await stat(temporary);
      await settle(size, unionOf(written.map((l) => l.extent)));
      await putInPlace(w, name, temporary);
    } finally {
      await rm(temporary, { force: true });
    }
    // The new data keeps no attachments (its rows are new): the old rows' bytes go.
    await removeServiceAttachments(serviceItemId);
  },
  async create(serviceItemId: string, layers: readonly HostedLayer[]) {
    let written: WrittenLayer[] = [];
    const bytes = await keepHostedData(serviceItemId, async (path) => {
      written = await writeGeoPackageStreaming(path, layers.map(writtenLayer));
      recordEditingAt(path, layers);
    });
    const location = hostedLocation();
    return {
      bytes,
      layers: layers.map((l, i) => {
        const extent = written[i]?.extent;
        return {
          source: { datastoreId: HOSTED_STORE_ID, location, path: `/${hostedFileName(serviceItemId)}/${l.name}` },
          ...(extent ? { extent } : {}),
        };
      }),
    };
  },
  async drop(serviceItemId: string) {
    const name = hostedFileName(serviceItemId);
    const w = hostedDataPlace();
    if ("dir" in w) await rm(join(w.dir, name), { force: true });
    else {
      const { s3, client } = await bucketClient();
      await client.send(new s3.DeleteObjectCommand({ Bucket: w.bucket, Key: `${PREFIX}/${name}` }));
    }
    // After the data: a crash between the two leaves bytes no row names (never a row naming no bytes).
    await removeServiceAttachments(serviceItemId);
  },
  // A file's time is its last write: a service's file is written whole once (a change replaces it whole), so a file
  // no service names was last written when its publish stopped.
  async inventory() {
    const w = hostedDataPlace();
    const kept: KeptData[] = [];
    if ("dir" in w) {
      for (const name of await namesIn(w.dir)) {
        const id = HOSTED_FILE.exec(name)?.[1];
        if (id === undefined) continue;
        const s = await stat(join(w.dir, name)).catch(() => undefined);
        if (s?.isFile()) kept.push({ serviceItemId: id, created: s.mtimeMs, bytes: s.size });
      }
      return kept;
    }
    const { s3, client } = await bucketClient();
    let ContinuationToken: string | undefined;
    do {
      const page = await client.send(
        new s3.ListObjectsV2Command({
          Bucket: w.bucket,
          Prefix: `${PREFIX}/`,
          ...(ContinuationToken ? { ContinuationToken } : {}),
        }),
      );
      for (const o of page.Contents ?? []) {
        const id = HOSTED_FILE.exec((o.Key ?? "").slice(PREFIX.length + 1))?.[1];
        if (id !== undefined)
          kept.push({ serviceItemId: id, created: o.LastModified?.getTime() ?? 0, bytes: o.Size ?? 0 });
      }
      ContinuationToken = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (ContinuationToken);
    return kept;
  },
  // Staging files live beside the kept files in a folder (a bucket's are in the function's own temporary folder,
  // which goes with it).
  async sweepStaging(before: number) {
    const w = hostedDataPlace();
    if (!("dir" in w)) return [];
    const removed: { name: string; bytes: number }[] = [];
    for (const name of await namesIn(w.dir)) {
      if (!STAGING_FILE.test(name)) continue;
      const s = await stat(join(w.dir, name)).catch(() => undefined);
      if (!s?.isFile() || s.mtimeMs >= before) continue;
      await rm(join(w.dir, name), { force: true });
      removed.push({ name, bytes: s.size });
    }
    return removed;
  },
};

/** A service's kept file (`<item id>.gpkg`), and a staging file a crash left (`.<item id>.gpkg.<hex>.part`). */
const HOSTED_FILE = /^([0-9a-f]{32})\.gpkg$/;
const STAGING_FILE = /^\.[0-9a-f]{32}\.gpkg\.[0-9a-f]{12}\.part$/;

async function namesIn(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if ((err as { code?: string }).code === "ENOENT") return [];
    throw err;
  }
}
