// Hosted layers' data as one GeoPackage per hosted service, named by the service item's id, written by mapgate
// (never the upload itself) and read by the same GeoPackage reader as by-reference layers, through the same Storage
// (a folder of the data folder locally, `hosted/` of the stack's item-files bucket on AWS).
import { randomBytes } from "node:crypto";
import { createReadStream } from "node:fs";
import { copyFile, mkdir, open, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { DatabaseSync } from "node:sqlite";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config } from "#shared/config.ts";
import {
  addLayers,
  type ColumnSpec,
  ensureDataColumns,
  type WrittenLayer,
  writeGeoPackageStreaming,
} from "#shared/features/geopackage-writer.ts";
import { quote } from "#shared/features/geopackage.ts";
import { COLUMN_TYPES } from "#shared/hosted/tables.ts";
import { checkedItemId, HOSTED_STORE_ID } from "#shared/hosted/source-id.ts";
import type { DefinedLayer, HostedDefinitions, HostedLayer, HostedStore, SettleChange } from "#shared/hosted/store.ts";
import type { StoreLocation } from "#shared/stores/datastores.ts";

const PREFIX = "hosted";

/** The file name of a hosted service's data. */
export function hostedFileName(serviceItemId: string): string {
  return `${checkedItemId(serviceItemId)}.gpkg`;
}

function where(): { readonly bucket: string } | { readonly dir: string } {
  const w = config().hostedData;
  if (!w) throw new Error("no hosted data storage configured (HOSTED_DATA_BUCKET or HOSTED_DATA_DIR)");
  return w;
}

/** The SDK and the function's one S3 client, loaded only where a bucket is met. */
async function bucketClient() {
  const [s3, { sharedS3Client }] = await Promise.all([import("@aws-sdk/client-s3"), import("#shared/storage/s3.ts")]);
  return { s3, client: sharedS3Client() };
}

/** The location a hosted service's source names: what serving opens, as it opens any store's. */
function hostedLocation(): StoreLocation {
  const w = where();
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
  const w = where();
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
    // Streamed from the disk, of known length: the file is never held whole in the function's memory.
    const { size } = await stat(temporary);
    const { s3, client } = await bucketClient();
    await client.send(
      new s3.PutObjectCommand({
        Bucket: w.bucket,
        Key: `${PREFIX}/${name}`,
        Body: createReadStream(temporary),
        ContentLength: size,
      }),
    );
    return size;
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
async function changeHostedData(
  serviceItemId: string,
  change: (db: DatabaseSync) => void,
  settle: SettleChange,
): Promise<void> {
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
    try {
      db.exec("BEGIN");
      change(db);
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
    await settle(size);
    if ("dir" in w) {
      await rename(temporary, join(w.dir, name));
      return;
    }
    const bytes = await readFile(temporary);
    const { s3, client } = await bucketClient();
    await client.send(new s3.PutObjectCommand({ Bucket: w.bucket, Key: `${PREFIX}/${name}`, Body: bytes }));
  } finally {
    await rm(temporary, { force: true });
  }
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
  addLayers: (serviceItemId: string, layers: readonly DefinedLayer[], settle: SettleChange) =>
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
            rows: [],
          })),
        );
      },
      settle,
    ),
  deleteLayers: (serviceItemId, tables, settle) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        for (const table of new Set(tables)) {
          const geometry = geometryColumnOf(db, table);
          db.exec(`DROP TABLE IF EXISTS ${quote(table)}`);
          if (geometry) db.exec(`DROP TABLE IF EXISTS ${quote(`rtree_${table}_${geometry}`)}`);
          for (const meta of ["gpkg_geometry_columns", "gpkg_extensions", "gpkg_contents"])
            db.prepare(`DELETE FROM ${meta} WHERE table_name = ?`).run(table);
          if (hasTable(db, "gpkg_data_columns"))
            db.prepare("DELETE FROM gpkg_data_columns WHERE table_name = ?").run(table);
        }
      },
      settle,
    ),
  addFields: (serviceItemId, table, columns, settle) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        for (const c of columns) db.exec(`ALTER TABLE ${quote(table)} ADD COLUMN ${quote(c.name)} ${declared(c)}`);
        setTitles(db, table, columns);
      },
      settle,
    ),
  deleteFields: (serviceItemId, table, names, settle) =>
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
      settle,
    ),
  setTitles: (serviceItemId, table, titles, settle) =>
    changeHostedData(serviceItemId, (db) => setTitles(db, table, titles), settle),
  truncate: (serviceItemId, table, settle) =>
    changeHostedData(
      serviceItemId,
      (db) => {
        const geometry = geometryColumnOf(db, table);
        db.exec(`DELETE FROM ${quote(table)}`);
        if (geometry && hasTable(db, `rtree_${table}_${geometry}`))
          db.exec(`DELETE FROM ${quote(`rtree_${table}_${geometry}`)}`);
        db.prepare(
          "UPDATE gpkg_contents SET min_x = NULL, min_y = NULL, max_x = NULL, max_y = NULL, last_change = ? " +
            "WHERE table_name = ?",
        ).run(new Date().toISOString(), table);
      },
      settle,
    ),
};

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
  async create(serviceItemId: string, layers: readonly HostedLayer[]) {
    let written: WrittenLayer[] = [];
    const bytes = await keepHostedData(serviceItemId, async (path) => {
      written = await writeGeoPackageStreaming(
        path,
        layers.map((l) => ({
          name: l.name,
          identifier: l.title,
          ...(l.geometryType ? { geometryType: l.geometryType, srsId: 4326 as const } : {}),
          columns: l.columns.map((c) => ({
            name: c.name,
            type: COLUMN_TYPES[c.kind],
            ...(c.length !== undefined ? { maxLength: c.length } : {}),
          })),
          rows: l.rows,
        })),
      );
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
    const w = where();
    if ("dir" in w) {
      await rm(join(w.dir, name), { force: true });
      return;
    }
    const { s3, client } = await bucketClient();
    await client.send(new s3.DeleteObjectCommand({ Bucket: w.bucket, Key: `${PREFIX}/${name}` }));
  },
};
