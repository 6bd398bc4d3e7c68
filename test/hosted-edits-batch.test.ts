// How writeEdits (shared/hosted/edit-apply.ts) writes a layer's adds, on a real SQLite table through a statement
// runner as a store gives one: many rows to an INSERT where the table numbers rows in order (each result the id of
// its own row, in request order, runs split where the columns change), one INSERT a row where it may not, and a batch
// the database refuses written again a row at a time under savepoints, so the refused row alone fails with its own
// error and the others are kept (a table's CHECK constraint refuses it: no fault is made up).
import { DatabaseSync } from "node:sqlite";
import { describe, expect, it } from "vitest";
import type { LayerSchema } from "#shared/features/schema.ts";
import type { EmittedQuery } from "#shared/features/sql.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import { RowRefused, writeEdits } from "#shared/hosted/edit-apply.ts";
import type { EditRequest, EditRow } from "#shared/hosted/store.ts";

const schema: LayerSchema = {
  name: "sites",
  table: ["sites"],
  objectIdField: "OBJECTID",
  displayField: "name",
  fields: [
    { name: "OBJECTID", type: "esriFieldTypeOID", alias: "OBJECTID", nullable: false, column: "OBJECTID" },
    { name: "name", type: "esriFieldTypeString", alias: "name", nullable: true, column: "name" },
    { name: "visits", type: "esriFieldTypeInteger", alias: "visits", nullable: true, column: "visits" },
  ],
};

/** A table whose key numbers rows in order, refusing a name 'refused' (its own CHECK). */
function table(): DatabaseSync {
  const db = new DatabaseSync(":memory:");
  db.exec(
    `CREATE TABLE sites ("OBJECTID" INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT CHECK (name <> 'refused'), visits INTEGER)`,
  );
  return db;
}

/**
 * The runner a store gives, recording each statement: under a savepoint when `guarded`, so a statement the database
 * refuses (a constraint) is undone alone and told as that row's error, as the by-reference runner does.
 */
function runner(db: DatabaseSync, guarded: boolean) {
  const statements: string[] = [];
  const run = async (q: EmittedQuery) => {
    statements.push(q.sql);
    const exec = () => {
      const s = db.prepare(q.sql);
      s.setReturnArrays(true);
      return s.all(...(q.params as never[])) as unknown as unknown[][];
    };
    if (!guarded) return exec();
    db.exec("SAVEPOINT row");
    try {
      const rows = exec();
      db.exec("RELEASE SAVEPOINT row");
      return rows;
    } catch (err) {
      db.exec("ROLLBACK TO SAVEPOINT row");
      db.exec("RELEASE SAVEPOINT row");
      if ((err as { errcode?: number }).errcode === 275 /* SQLITE_CONSTRAINT_CHECK */)
        throw new RowRefused({ code: 1000, description: "The database refused the row." });
      throw err;
    }
  };
  return { run, statements };
}

const row = (name: string, visits?: number): EditRow => ({
  values: { name, ...(visits !== undefined ? { visits } : {}) },
  kinds: { name: "string", ...(visits !== undefined ? { visits: "integer" as const } : {}) },
});

const request = (adds: EditRequest["layers"][number]["adds"]): EditRequest => ({
  layers: [{ layerId: 0, schema, adds, updates: [], deletes: [] }],
  rollbackOnFailure: false,
  moment: 0,
  editId: "e",
});

const stored = (db: DatabaseSync) =>
  db.prepare(`SELECT "OBJECTID", name, visits FROM sites ORDER BY "OBJECTID"`).all() as {
    OBJECTID: number;
    name: string;
    visits: number | null;
  }[];

describe("a layer's adds, written many rows to an INSERT", () => {
  it("answers each add the id of its own row, in request order, a run split where its columns change", async () => {
    const db = table();
    db.exec("INSERT INTO sites (name) VALUES ('before')");
    const { run, statements } = runner(db, false);
    const adds = [
      ...Array.from({ length: 150 }, (_, i) => ({ ok: row(`a${i}`) })),
      { failed: { code: 1016, description: "checked before" }, objectId: -1 },
      ...Array.from({ length: 30 }, (_, i) => ({ ok: row(`v${i}`, i) })),
      { ok: row("last") },
    ];
    const written = await writeEdits(run, sqliteEmitter, request(adds), { numbersInOrder: true });
    // 150 rows: 100 and 50; then 30 of other columns; then one alone.
    expect(statements.map((s) => (s.match(/\), \(/g)?.length ?? 0) + 1)).toEqual([100, 50, 30, 1]);
    const results = written.layers[0]?.addResults ?? [];
    expect(results[150]).toEqual({
      objectId: -1,
      success: false,
      error: { code: 1016, description: "checked before" },
    });
    const byId = new Map(stored(db).map((r) => [r.OBJECTID, r]));
    const names = [...adds.keys()].flatMap((i) => {
      const a = adds[i];
      return a && "ok" in a ? [[i, a.ok.values.name] as const] : [];
    });
    for (const [i, name] of names) {
      const r = results[i];
      expect(r?.success).toBe(true);
      expect(byId.get(r?.objectId ?? -1)?.name).toBe(name);
    }
    // The ids follow the request's order, after the row already there.
    const ids = names.map(([i]) => results[i]?.objectId ?? -1);
    expect(ids).toEqual(Array.from({ length: 181 }, (_, k) => k + 2));
    expect(written.failed).toBe(true);
  });

  it("writes one INSERT a row where the table may number rows otherwise", async () => {
    const db = table();
    const { run, statements } = runner(db, false);
    await writeEdits(run, sqliteEmitter, request([{ ok: row("x") }, { ok: row("y") }]));
    expect(statements).toHaveLength(2);
    expect(stored(db).map((r) => r.name)).toEqual(["x", "y"]);
  });

  it("writes a batch the database refused again a row at a time: the refused row alone fails, with its own error", async () => {
    const db = table();
    const { run, statements } = runner(db, true);
    const names = ["p", "q", "refused", "r"];
    const written = await writeEdits(run, sqliteEmitter, request(names.map((n) => ({ ok: row(n) }))), {
      numbersInOrder: true,
    });
    // The batch, refused and undone whole; then each row.
    expect(statements).toHaveLength(5);
    expect(written.layers[0]?.addResults).toEqual([
      { objectId: 1, success: true },
      { objectId: 2, success: true },
      { objectId: -1, success: false, error: { code: 1000, description: "The database refused the row." } },
      { objectId: 3, success: true },
    ]);
    expect(stored(db)).toEqual([
      { OBJECTID: 1, name: "p", visits: null },
      { OBJECTID: 2, name: "q", visits: null },
      { OBJECTID: 3, name: "r", visits: null },
    ]);
    expect(written.failed).toBe(true);
  });
});
