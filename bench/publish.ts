// Publishing a CSV of points as a hosted layer vs GDAL's `ogr2ogr -f GPKG` of the same file, in the same run: a
// CSV of BENCH_PUBLISH_ROWS rows (default 1,000,000: id, name, a double, a date, lat, lon) is written once into a
// temporary item-files folder; ogr2ogr converts it to a GeoPackage (points from lon/lat, EPSG:4326, its spatial
// index), then a child node process runs what the publish function runs to keep the same file's data
// (bench/publish-child.ts: the file streamed twice, its rows written into the GeoPackage store). Printed: both
// times (each process's wall time, start-up included), their ratio (the goal is ≤ 1.5), the child's peak RSS
// (the goal is ≤ 256 MB whatever the file's size) and the rows each file holds.
//   node bench/publish.ts   (or `BENCH_ONLY=publish npm run bench`; BENCH_PUBLISH_ROWS=100000 for a quick run)
import { execFileSync, spawnSync } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { ROOT } from "../test/helpers/engine.ts";

const ITEM_ID = "a".repeat(32);
const SERVICE_ITEM_ID = "b".repeat(32);

/** The CSV, written a block of rows at a time. */
async function writeCsv(path: string, rows: number): Promise<void> {
  const out = createWriteStream(path);
  const write = (text: string) =>
    new Promise<void>((resolve, reject) => out.write(text, (err) => (err ? reject(err) : resolve())));
  await write("id,name,value,day,lat,lon\n");
  for (let from = 0; from < rows; from += 10_000) {
    let block = "";
    for (let i = from; i < Math.min(rows, from + 10_000); i++) {
      const day = `20${10 + (i % 15)}-${String(1 + (i % 12)).padStart(2, "0")}-${String(1 + (i % 28)).padStart(2, "0")}`;
      const lat = (-80 + ((i * 7919) % 160_000) / 1000).toFixed(5);
      const lon = (-179 + ((i * 104_729) % 358_000) / 1000).toFixed(5);
      block += `${i},place ${i},${((i * 31) % 100_000) / 7},${day},${lat},${lon}\n`;
    }
    await write(block);
  }
  await new Promise<void>((resolve) => out.end(resolve));
}

const rowsIn = (file: string, table: string) => {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    return (db.prepare(`SELECT count(*) AS n FROM "${table}"`).get() as { n: number }).n;
  } finally {
    db.close();
  }
};

const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

export async function publishBench(): Promise<void> {
  const rows = Number(process.env.BENCH_PUBLISH_ROWS ?? 1_000_000);
  const work = mkdtempSync(join(tmpdir(), "mapgate-bench-publish-"));
  try {
    const items = join(work, "item-files");
    const hosted = join(work, "hosted");
    mkdirSync(join(items, "items"), { recursive: true });
    mkdirSync(hosted, { recursive: true });
    const csv = join(items, "items", ITEM_ID);
    await writeCsv(csv, rows);
    const size = statSync(csv).size;

    // GDAL reads the file by its extension: a link named .csv to the same bytes.
    const named = join(work, "points.csv");
    execFileSync("ln", ["-s", csv, named]);
    const gdalOut = join(work, "gdal.gpkg");
    let started = performance.now();
    execFileSync(
      "ogr2ogr",
      [
        "-f",
        "GPKG",
        gdalOut,
        named,
        "-oo",
        "X_POSSIBLE_NAMES=lon",
        "-oo",
        "Y_POSSIBLE_NAMES=lat",
        "-a_srs",
        "EPSG:4326",
      ],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
    const gdalMs = performance.now() - started;

    started = performance.now();
    const child = spawnSync(process.execPath, [join(ROOT, "bench/publish-child.ts"), ITEM_ID], {
      cwd: ROOT,
      env: { ...process.env, ITEM_FILES_DIR: items, HOSTED_DATA_DIR: hosted, POWERTOOLS_LOG_LEVEL: "WARN" },
      encoding: "utf8",
    });
    const mineMs = performance.now() - started;
    if (child.status !== 0) throw new Error(`the publishing child failed:\n${child.stderr}`);
    const out = JSON.parse(child.stdout.trim().split("\n").at(-1) as string) as {
      ms: number;
      bytes: number;
      maxRssMb: number;
    };
    const mine = join(hosted, `${SERVICE_ITEM_ID}.gpkg`);

    console.log(
      `\nPublishing a CSV of ${rows.toLocaleString("en")} points (${mb(size)} MB) as a GeoPackage; the goal is ≤ 1.5 × ogr2ogr's time and a peak RSS ≤ 256 MB`,
    );
    console.log(
      `${"".padEnd(34)}${"s".padStart(9)}${"× GDAL".padStart(9)}${"MB out".padStart(9)}${"rows".padStart(10)}`,
    );
    const line = (name: string, ms: number, file: string, table: string) =>
      console.log(
        `${name.padEnd(34)}${(ms / 1000).toFixed(2).padStart(9)}${(ms / gdalMs).toFixed(2).padStart(9)}${mb(statSync(file).size).padStart(9)}${String(rowsIn(file, table)).padStart(10)}`,
      );
    line("ogr2ogr -f GPKG", gdalMs, gdalOut, "points");
    line("mapgate publish (child process)", mineMs, mine, "points");
    console.log(
      `mapgate: ${(out.ms / 1000).toFixed(2)} s of it publishing (the rest is Node's start and imports); peak RSS ${out.maxRssMb.toFixed(0)} MB`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) await publishBench();
