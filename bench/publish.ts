// Publishing a CSV of points as a hosted layer vs GDAL's `ogr2ogr -f GPKG` of the same file, in the same run: a
// CSV of BENCH_PUBLISH_ROWS rows (default 1,000,000: id, name, a double, a date, lat, lon) is written once into a
// temporary item-files folder; ogr2ogr converts it to a GeoPackage (points from lon/lat, EPSG:4326, its spatial
// index), then a child node process runs what the publish function runs to keep the same file's data
// (bench/publish-child.ts: the file streamed twice, its rows written into the GeoPackage store). Printed: each
// process's wall and CPU time (start-up included, as /usr/bin/time counts them), their ratios (the goal is ≤ 1.5),
// each one's peak RSS (mapgate's goal is ≤ 256 MB whatever the file's size) and the rows each file holds.
//   node bench/publish.ts   (or `BENCH_ONLY=publish npm run bench`; BENCH_PUBLISH_ROWS=100000 for a quick run)
import { execFileSync, spawnSync } from "node:child_process";
import { createWriteStream, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { ROOT } from "../test/helpers/engine.ts";
import { WORKFLOW } from "#shared/system.ts";

const ITEM_ID = "a".repeat(32);
/** The Node options the publishing task runs with on AWS (shared/system.ts WORKFLOW). */
const TASK_OPTIONS = (WORKFLOW.tasks.find((t) => t.id === "task-publish-hosted")?.nodeOptions ?? "")
  .split(" ")
  .filter(Boolean);
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

interface Timed {
  /** Seconds. */
  readonly wall: number;
  /** User and system CPU seconds: steadier than wall time on a machine others share. */
  readonly cpu: number;
  readonly peakMb: number;
  readonly stdout: string;
}

/** Runs a command under /usr/bin/time: its wall and CPU time and peak RSS, as the kernel counted them. */
function timed(command: string, args: readonly string[], env: Record<string, string>): Timed {
  const run = spawnSync("/usr/bin/time", ["-f", "mapgate-time %e %U %S %M", command, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    encoding: "utf8",
  });
  const m = /mapgate-time ([\d.]+) ([\d.]+) ([\d.]+) (\d+)/.exec(run.stderr);
  if (run.status !== 0 || !m) throw new Error(`${command} failed:\n${run.stderr}`);
  return {
    wall: Number(m[1]),
    cpu: Number(m[2]) + Number(m[3]),
    peakMb: Number(m[4]) / 1024,
    stdout: run.stdout,
  };
}

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
    const gdal = timed(
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
      {},
    );
    const child = (options: string[]) =>
      timed(process.execPath, [...options, join(ROOT, "bench/publish-child.ts"), ITEM_ID], {
        ITEM_FILES_DIR: items,
        HOSTED_DATA_DIR: hosted,
        POWERTOOLS_LOG_LEVEL: "WARN",
      });
    // With the Node options the publishing task runs with on AWS (its NODE_OPTIONS: V8 would size its young
    // generation to the allocation rate, up to 64 MB here), and with Node's defaults beside it.
    const mine = child(TASK_OPTIONS);
    rmSync(join(hosted, `${SERVICE_ITEM_ID}.gpkg`));
    const plain = child([]);
    const out = JSON.parse(mine.stdout.trim().split("\n").at(-1) as string) as { ms: number; maxRssMb: number };
    const mineFile = join(hosted, `${SERVICE_ITEM_ID}.gpkg`);

    console.log(
      `\nPublishing a CSV of ${rows.toLocaleString("en")} points (${mb(size)} MB) as a GeoPackage; goals: ≤ 1.5 × ogr2ogr's time, a peak RSS ≤ 256 MB`,
    );
    console.log(
      `${"".padEnd(44)}${"wall s".padStart(8)}${"CPU s".padStart(8)}${"× GDAL".padStart(8)}${"peak MB".padStart(9)}${"MB out".padStart(8)}${"rows".padStart(9)}`,
    );
    const line = (name: string, t: Timed, file: string) =>
      console.log(
        `${name.padEnd(44)}${t.wall.toFixed(2).padStart(8)}${t.cpu.toFixed(2).padStart(8)}${(t.wall / gdal.wall).toFixed(2).padStart(8)}${t.peakMb.toFixed(0).padStart(9)}${mb(statSync(file).size).padStart(8)}${String(rowsIn(file, "points")).padStart(9)}`,
      );
    line("ogr2ogr -f GPKG", gdal, gdalOut);
    line(`mapgate publish (${TASK_OPTIONS.join(" ") || "as the task runs"})`, mine, mineFile);
    line("  … with Node's defaults", plain, mineFile);
    console.log(
      `ratio (mapgate / ogr2ogr): wall ${(mine.wall / gdal.wall).toFixed(2)}, CPU ${(mine.cpu / gdal.cpu).toFixed(2)}; mapgate spent ${(out.ms / 1000).toFixed(2)} s publishing (the rest is Node's start and imports), its peak RSS by process.resourceUsage() ${out.maxRssMb.toFixed(0)} MB`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.main) await publishBench();
