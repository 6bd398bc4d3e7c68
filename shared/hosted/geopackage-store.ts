// Hosted layers' data as one GeoPackage per hosted service, named by the service item's id, written by mapgate
// (never the upload itself) and read by the same GeoPackage reader as by-reference layers, through the same Storage
// (a folder of the data folder locally, `hosted/` of the stack's item-files bucket on AWS).
import { randomBytes } from "node:crypto";
import { mkdir, readFile, rename, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { config } from "#shared/config.ts";
import { type WrittenLayer, writeGeoPackage } from "#shared/features/geopackage-writer.ts";
import { COLUMN_TYPES } from "#shared/hosted/tables.ts";
import { checkedItemId, HOSTED_STORE_ID } from "#shared/hosted/source-id.ts";
import type { HostedLayer, HostedStore } from "#shared/hosted/store.ts";
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
async function keepHostedData(serviceItemId: string, write: (path: string) => void): Promise<number> {
  const name = hostedFileName(serviceItemId);
  const w = where();
  const staging = "dir" in w ? w.dir : join(tmpdir(), "mapgate-hosted");
  await mkdir(staging, { recursive: true, mode: 0o700 });
  const temporary = join(staging, `.${name}.${randomBytes(6).toString("hex")}.part`);
  try {
    write(temporary);
    if ("dir" in w) {
      const { size } = await stat(temporary);
      await rename(temporary, join(w.dir, name));
      return size;
    }
    const bytes = await readFile(temporary);
    const { s3, client } = await bucketClient();
    await client.send(new s3.PutObjectCommand({ Bucket: w.bucket, Key: `${PREFIX}/${name}`, Body: bytes }));
    return bytes.length;
  } finally {
    await rm(temporary, { force: true });
  }
}

export const geoPackageStore: HostedStore = {
  kind: "geopackage",
  async create(serviceItemId: string, layers: readonly HostedLayer[]) {
    let written: WrittenLayer[] = [];
    const bytes = await keepHostedData(serviceItemId, (path) => {
      written = writeGeoPackage(
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
