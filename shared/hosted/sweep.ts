// The sweeper of what no record names any more. Hosted data is made before the transaction that makes its service's
// item and record (shared/hosted/store.ts), and dropped after the one that removes them: a crash between the two
// leaves a GeoPackage file, or an `h_<id>` schema, that no item names. Uploads in parts leave parts and a partial item
// when their client gives up. Once an hour (on AWS from the scheduled events-redeliver function, locally at the
// engine's start and then from the same timer), this:
// - drops a service's data older than an hour (a publish or createService finishes within its request) whose item
//   does not exist: the item and the service record are made and removed in one transaction, so the item stands for
//   both, read by its key (no scan);
// - removes staging files a crash left while a GeoPackage was written;
// - removes an upload in parts nothing has touched for 7 days (no part, no commit): its parts, and its partial item
//   with what they counted against the quotas; and the parts of an upload whose item is gone or whole.
// A hosting database (PostgreSQL) is looked at once a day rather than every hour: on AWS it is an Aurora cluster that
// pauses at 0 capacity when idle, and an hourly connection would wake it (and bill it) every hour for nothing.
// Each removal is logged with the item id and the bytes (never a name or any content of the user's).
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { config, tableName } from "#shared/config.ts";
import type { HostedStore } from "#shared/hosted/store.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";
import { logger } from "#shared/log.ts";
import { isConditionFailure, ddb } from "#shared/stores/dynamo.ts";
import { itemFiles } from "#shared/stores/item-files.ts";
import {
  cancelUpload,
  getItem,
  type Item,
  ItemBusyError,
  ItemGoneError,
  type ItemUpload,
  UploadStateError,
} from "#shared/stores/items.ts";

/** Data no item names is dropped once older than this: no publish takes so long (a request lasts at most 29 s). */
export const ORPHAN_AGE_MS = 60 * 60 * 1000;
/** An upload in parts that no part or commit has touched for this long is given up. */
export const ABANDONED_UPLOAD_MS = 7 * 24 * 60 * 60 * 1000;
/** How often a sweep runs; a run claims its hour, so concurrent schedulers sweep once. */
export const SWEEP_EVERY_MS = 60 * 60 * 1000;
/** Removals per run, so a run ends well within its function's time; the rest waits for the next run. */
const MAX_REMOVALS = 500;

export interface SweepReport {
  /** Services' data dropped: the item id it was kept under, its bytes, and which store. */
  readonly hostedData: { readonly itemId: string; readonly bytes: number; readonly store: string }[];
  readonly staging: { readonly name: string; readonly bytes: number }[];
  /** Uploads in parts removed: the item id, the bytes their parts held, and whether a partial item went with them. */
  readonly uploads: { readonly itemId: string; readonly bytes: number; readonly item: boolean }[];
}

/** How often a hosting database is swept (see above). */
export const SWEEP_DATABASE_EVERY_MS = 24 * 60 * 60 * 1000;

/**
 * The stores data may be in: the deployment's, and (one that moved to a database) GeoPackages kept before; a
 * database only when `database` says it is its turn.
 */
async function stores(database: boolean): Promise<HostedStore[]> {
  const store = await hostedStore();
  if (store.kind === "postgis") {
    const { geoPackageStore } = await import("#shared/hosted/geopackage-store.ts");
    return [...(database ? [store] : []), ...(config().hostedData ? [geoPackageStore] : [])];
  }
  return [store];
}

async function sweepHostedData(
  now: number,
  database: boolean,
  report: SweepReport,
  budget: { left: number },
): Promise<void> {
  if (!config().hostedData && !config().hostedDatabase) return;
  for (const store of await stores(database)) {
    for (const kept of await store.inventory()) {
      if (budget.left <= 0) return;
      if (kept.created > now - ORPHAN_AGE_MS) continue;
      if (await getItem(kept.serviceItemId)) continue;
      await store.drop(kept.serviceItemId);
      budget.left--;
      report.hostedData.push({ itemId: kept.serviceItemId, bytes: kept.bytes, store: store.kind });
      logger.info("hosted data no service names dropped", {
        itemId: kept.serviceItemId,
        bytes: kept.bytes,
        store: store.kind,
        ageMinutes: Math.round((now - kept.created) / 60_000),
      });
    }
    for (const left of (await store.sweepStaging?.(now - ORPHAN_AGE_MS)) ?? []) {
      report.staging.push(left);
      logger.info("hosted data staging file removed", { file: left.name, bytes: left.bytes });
    }
  }
}

async function sweepUploads(now: number, report: SweepReport, budget: { left: number }): Promise<void> {
  if (!config().itemFiles) return;
  const files = itemFiles();
  for (const upload of await files.uploadsUnderway()) {
    if (budget.left <= 0) return;
    if (upload.lastChanged > now - ORPHAN_AGE_MS) continue;
    const item = await getItem(upload.itemId);
    let removedItem = false;
    if (item?.upload?.state === "partial") {
      // Still taking parts: given up only after a week of nothing.
      if (upload.lastChanged > now - ABANDONED_UPLOAD_MS) continue;
      try {
        await cancelUpload(item as Item & { upload: ItemUpload });
        removedItem = true;
      } catch (err) {
        // A part or a commit came meanwhile (or another request holds it): not abandoned after all.
        if (err instanceof UploadStateError || err instanceof ItemBusyError) continue;
        if (!(err instanceof ItemGoneError)) throw err;
      }
    } else if (item?.upload?.state === "processing") {
      // Being assembled, or waiting for a status request to assemble it: its parts are still needed.
      continue;
    }
    // Gone, whole, failed, or just removed: its parts (and mark) are no one's.
    await files.removeParts(upload.itemId);
    budget.left--;
    report.uploads.push({ itemId: upload.itemId, bytes: upload.bytes, item: removedItem });
    logger.info(removedItem ? "abandoned upload removed" : "parts no upload needs removed", {
      itemId: upload.itemId,
      bytes: upload.bytes,
      idleDays: Math.round((now - upload.lastChanged) / 86_400_000),
    });
  }
}

/** One sweep, as described above; `now` is when it counts ages from; `database`: a hosting database's turn too. */
export async function sweep(now = Date.now(), database = true): Promise<SweepReport> {
  const report: SweepReport = { hostedData: [], staging: [], uploads: [] };
  const budget = { left: MAX_REMOVALS };
  await sweepHostedData(now, database, report, budget);
  await sweepUploads(now, report, budget);
  return report;
}

/**
 * Claims a periodic run in the items table, under a key no item id can take: true when the last claim is at least
 * `every` old (a little less: a schedule's runs drift by seconds, and an hour must not become two), or `force`.
 */
async function claim(key: string, every: number, now: number, force: boolean): Promise<boolean> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("items"),
        Key: { itemId: key },
        UpdateExpression: "SET lastSweep = :now",
        ...(force
          ? { ExpressionAttributeValues: { ":now": now } }
          : {
              ConditionExpression: "attribute_not_exists(lastSweep) OR lastSweep <= :due",
              ExpressionAttributeValues: { ":now": now, ":due": now - every + every / 12 },
            }),
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/**
 * Sweeps when the last sweep is an hour old (`force`: now, whenever the last was), claiming the hour first so two
 * schedulers (or a retried run) sweep once; a hosting database on its own daily claim. Undefined when not due.
 */
export async function sweepWhenDue({ force = false, now = Date.now() } = {}): Promise<SweepReport | undefined> {
  if (!(await claim("sweep#hosted", SWEEP_EVERY_MS, now, force))) return undefined;
  const database =
    config().hostedDatabase !== undefined &&
    (await claim("sweep#hosted-database", SWEEP_DATABASE_EVERY_MS, now, force));
  const report = await sweep(now, database);
  logger.info("sweep done", {
    database,
    hostedData: report.hostedData.length,
    hostedBytes: report.hostedData.reduce((n, d) => n + d.bytes, 0),
    staging: report.staging.length,
    uploads: report.uploads.length,
    uploadBytes: report.uploads.reduce((n, u) => n + u.bytes, 0),
  });
  return report;
}
