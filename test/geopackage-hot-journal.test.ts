// A GeoPackage whose writer was killed (SIGKILL) in the middle of a transaction large enough that its pages reached
// the file: the rollback journal left beside it is "hot", and a read-only connection cannot read the file until a
// connection that may write rolls it back. A hosted service's file (mapgate's own) is recovered by its first reader and
// answers the rows as they were before the transaction; a data store's file (read by reference) is never written, and
// its reader answers a clear error instead.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { DatasetError } from "#shared/features/errors.ts";
import { GeoPackage, geoPackageAt } from "#shared/features/geopackage.ts";
import { writeGeoPackageStreaming } from "#shared/features/geopackage-writer.ts";

const dir = mkdtempSync(join(tmpdir(), "mapgate-hot-journal-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A point layer of `n` rows, written as mapgate writes hosted data. */
async function made(name: string, n: number): Promise<string> {
  const file = join(dir, name);
  async function* rows() {
    for (let i = 0; i < n; i++)
      yield { values: { name: `r${i}` }, geometry: { type: "Point" as const, coordinates: [i % 90, i % 45] } };
  }
  await writeGeoPackageStreaming(file, [
    { name: "sites", geometryType: "POINT", srsId: 4326, columns: [{ name: "name", type: "TEXT" }], rows: rows() },
  ]);
  return file;
}

/**
 * A child process that changes and deletes rows and writes a large table in one transaction (a small page cache, so
 * pages reach the file before the commit), then kills itself before COMMIT.
 */
function killedMidTransaction(file: string): void {
  const script = `
    const { DatabaseSync } = require("node:sqlite");
    const db = new DatabaseSync(${JSON.stringify(file)});
    db.exec("PRAGMA cache_size = 8; BEGIN IMMEDIATE");
    // Its R*Tree triggers call spatial functions this bare connection lacks: dropped too (rolled back with the rest).
    for (const t of db.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger'").all())
      db.exec('DROP TRIGGER "' + t.name + '"');
    db.exec("UPDATE sites SET name = 'changed'");
    db.exec("DELETE FROM sites WHERE fid > 100");
    db.exec("CREATE TABLE junk (t TEXT)");
    const add = db.prepare("INSERT INTO junk (t) VALUES (?)");
    for (let i = 0; i < 20000; i++) add.run("x".repeat(200));
    process.kill(process.pid, "SIGKILL");`;
  const run = spawnSync(process.execPath, ["-e", script]);
  expect(run.signal, run.stderr.toString()).toBe("SIGKILL");
  expect(existsSync(`${file}-journal`)).toBe(true);
}

const version = (file: string) => String(statSync(file).mtimeMs);

it("recovers a hosted GeoPackage's hot journal on its first read, answering the rows as before", async () => {
  const file = await made("hosted.gpkg", 500);
  killedMidTransaction(file);
  const gpkg = await geoPackageAt(file, version(file), true);
  expect(gpkg.schema("sites")).toBeDefined();
  const rows = gpkg.db.prepare("SELECT count(*) AS n, min(name) AS first FROM sites").get() as {
    n: number;
    first: string;
  };
  expect({ ...rows }).toEqual({ n: 500, first: "r0" });
  expect(gpkg.db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'trigger'").get()).toEqual({ n: 6 });
  expect(gpkg.db.prepare("SELECT name FROM sqlite_master WHERE name = 'junk'").all()).toEqual([]);
  expect(existsSync(`${file}-journal`)).toBe(false);
  gpkg.close();
});

it("never writes a data store's GeoPackage: its reader answers a clear error while the journal is hot", async () => {
  const file = await made("by-reference.gpkg", 500);
  killedMidTransaction(file);
  const kept = join(dir, "copy.gpkg");
  copyFileSync(file, kept);
  const refused = await GeoPackage.open(file, version(file)).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(DatasetError);
  expect((refused as Error).message).toBe(
    "The GeoPackage was left mid-transaction by a writer that stopped: it is read once recovered.",
  );
  // Untouched: the file and its journal are as the writer left them.
  expect(existsSync(`${file}-journal`)).toBe(true);
  expect(statSync(file).size).toBe(statSync(kept).size);
});
