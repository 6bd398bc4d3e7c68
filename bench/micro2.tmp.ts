import { checkLayer } from "#shared/hosted/edit.ts";
import { insertRows, insertRow } from "#shared/features/sql/write.ts";
import { sqliteEmitter } from "#shared/features/sql/sqlite.ts";
import { postgresEmitter } from "#shared/features/sql/postgres.ts";
import type { LayerSchema } from "#shared/features/schema.ts";
const f = (name: string, type: string, extra = {}) => ({ name, type, alias: name, nullable: true, column: name, ...extra });
const schema = {
  name: "Sites", table: ["Sites"], objectIdField: "OBJECTID",
  fields: [f("OBJECTID", "esriFieldTypeOID", { nullable: false }), f("Name", "esriFieldTypeString", { length: 20 }), f("GlobalID", "esriFieldTypeGlobalID"), f("CreationDate", "esriFieldTypeDate"), f("Creator", "esriFieldTypeString"), f("EditDate", "esriFieldTypeDate"), f("Editor", "esriFieldTypeString")],
  geometry: { type: "esriGeometryPoint", column: "geom", srid: 4326 },
  editing: { globalIdField: "GlobalID", creatorField: "Creator", creationDateField: "CreationDate", editorField: "Editor", editDateField: "EditDate" },
} as unknown as LayerSchema;
const adds = Array.from({ length: 1000 }, (_, i) => ({ attributes: { Name: `r-${i}` }, geometry: { x: (i % 360) - 180, y: ((i * 7) % 180) - 90 } }));
const text = JSON.stringify(adds);
const opts = { rollbackOnFailure: true, useGlobalIds: false, returnEditMoment: false };
const best = [1e9, 1e9, 1e9, 1e9];
const cpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; };
for (let r = 0; r < 60; r++) {
  const t0 = cpu();
  const parsed = JSON.parse(text);
  const t1 = cpu();
  const checked = await checkLayer({ schema } as never, { layerId: 0, adds: parsed, updates: [], deletes: [] }, opts, { username: "publisher", moment: Date.now() }, undefined);
  const t2 = cpu();
  const rows = checked.adds.map((a) => ("ok" in a ? a.ok : undefined)).filter((x) => x !== undefined);
  const target = { table: ["Sites"], idColumn: "OBJECTID", geometry: { column: "geom", srid: 4326 } };
  for (let i = 0; i < 1000; i += 100) insertRows(sqliteEmitter, target, rows.slice(i, i + 100));
  const t3 = cpu();
  for (let i = 0; i < 1000; i += 100) insertRows(postgresEmitter, target, rows.slice(i, i + 100));
  const t4 = cpu();
  [t1 - t0, t2 - t1, t3 - t2, t4 - t3].forEach((v, i) => (best[i] = Math.min(best[i] as number, v)));
}
console.log("best cpu ms: parse, check, sqlite-sql, pg-sql", best.map((b) => b.toFixed(2)).join(" "));
