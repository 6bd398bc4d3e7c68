// The "Features Edited" event of a hosted layer's committed edit, never lost and never sent twice across a crash. No
// transaction spans the outbox (DynamoDB) and the layer's data (SQLite or PostgreSQL), so the edit's transaction holds
// both halves of an outbox: before it commits, the complete event is put in the outbox marked as awaiting the commit,
// and the edit's id (the event's id) is written to the data's edit log with the rows. After the commit the event is
// sent and its record forgotten. A crash in between leaves the record awaiting: events-redeliver, once the record is
// older than any edit may run, asks the data whether the edit's id is in its log — there, the edit committed and its
// event is sent; not there, the edit never committed and the record is forgotten. A layer read by reference from a
// registered database has no edit log (mapgate makes no table there): its record keeps the edit's transaction id
// instead, and the database tells that transaction's status (txid_status: committed, aborted, or in progress).
import { randomUUID } from "node:crypto";
import { logger } from "#shared/log.ts";
import type { EditOutcome, HostedStore } from "#shared/hosted/store.ts";
import {
  type AwaitedCommit,
  eventEntry,
  keepAwaitingCommit,
  type OutboxEntry,
  sendCommitted,
} from "#shared/stores/events.ts";

/** The most object ids one list of a layer's event names (its counts are always whole). */
export const MAX_EVENT_IDS = 1000;

/**
 * How long after its making an outbox record awaiting its edit's commit is left to the edit (longer than any edit
 * runs: the edit functions' timeout): only then does events-redeliver ask the data. A test may shorten it.
 */
export const EDIT_SETTLE_MS = (Number(process.env.MAPGATE_TEST_EDIT_SETTLE_SECONDS) || 120) * 1000;

/**
 * Test only: kills this process (SIGKILL, as a crash) at a moment of an edit — `before-commit` once the event is in the
 * outbox and before the edit commits, `after-commit` once it committed and before the event is sent. Never set in
 * service.
 */
const CRASH_AT = process.env.MAPGATE_TEST_EDIT_CRASH;

export function crashPoint(at: "before-commit" | "after-commit"): void {
  if (CRASH_AT === at) process.kill(process.pid, "SIGKILL");
}

export interface EditContext {
  readonly portalId: string;
  readonly itemId: string;
  /** The service's URL; each layer's is it and the layer's id. */
  readonly url: string;
  readonly editor: string;
  readonly store: HostedStore["kind"] | "datastore";
  /**
   * What the outbox record awaits, asked once the rows are written (a registered database's edit names its
   * transaction's id, known only then); absent: the hosted service's edit log (`store` and the item).
   */
  readonly awaits?: () => AwaitedCommit;
}

const ids = (results: readonly { objectId: number | null; success: boolean }[]) =>
  results.flatMap((r) => (r.success && r.objectId !== null ? [r.objectId] : []));

/** The event's detail: the service and each edited layer, its counts and (up to MAX_EVENT_IDS each) its ids. */
export function editedDetail(context: EditContext, outcome: EditOutcome, moment: number): Record<string, unknown> {
  let omitted = false;
  const bounded = (list: number[]) => {
    if (list.length <= MAX_EVENT_IDS) return list;
    omitted = true;
    return list.slice(0, MAX_EVENT_IDS);
  };
  const layers = outcome.layers.flatMap((l) => {
    const added = ids(l.addResults);
    const updated = ids(l.updateResults);
    const deleted = ids(l.deleteResults);
    // A feature's attachments added, replaced or deleted (applyEdits' attachments, or their own operations): counted.
    const a = l.attachments;
    const attachments = a && {
      added: ids(a.addResults).length,
      updated: ids(a.updateResults).length,
      deleted: ids(a.deleteResults).length,
    };
    const attached = attachments ? attachments.added + attachments.updated + attachments.deleted : 0;
    if (added.length + updated.length + deleted.length + attached === 0) return [];
    return [
      {
        id: l.layerId,
        url: `${context.url}/${l.layerId}`,
        added: added.length,
        updated: updated.length,
        deleted: deleted.length,
        addedIds: bounded(added),
        updatedIds: bounded(updated),
        deletedIds: bounded(deleted),
        ...(attachments && attached > 0 ? { attachments } : {}),
      },
    ];
  });
  return {
    portalId: context.portalId,
    itemId: context.itemId,
    url: context.url,
    editor: context.editor,
    editMoment: moment,
    layers,
    ...(omitted ? { idsOmitted: true } : {}),
  };
}

/**
 * The two halves of an edit's event: `beforeCommit`, run in the edit's transaction (the store's BeforeCommit), puts it
 * in the outbox awaiting the commit when rows changed (a failure there rolls the edit back); `afterCommit` sends it.
 */
export function editEvent(context: EditContext, moment: number) {
  const editId = randomUUID();
  let kept: OutboxEntry | undefined;
  return {
    editId,
    async beforeCommit(outcome: EditOutcome): Promise<void> {
      if (!outcome.changed) return;
      const entry = eventEntry("featuresEdited", editedDetail(context, outcome, moment), editId);
      const store = context.store;
      let awaits: AwaitedCommit;
      if (context.awaits) awaits = context.awaits();
      else if (store === "datastore") throw new Error("a database's edit event names the transaction it awaits");
      else awaits = { store, serviceItemId: context.itemId };
      await keepAwaitingCommit(entry, awaits);
      kept = entry;
      crashPoint("before-commit");
    },
    async afterCommit(outcome: EditOutcome): Promise<void> {
      if (!kept || !outcome.committed) return;
      crashPoint("after-commit");
      await sendCommitted(kept);
    },
  };
}

/**
 * What events-redeliver does with a record awaiting its edit's commit: `wait` (the edit may still run, or the data
 * cannot be asked now), `send` (the edit committed) or `forget` (it never did, or its service's data is gone).
 */
export async function settleAwaiting(
  entry: OutboxEntry,
  store: () => Promise<HostedStore>,
  now: number,
): Promise<"wait" | "send" | "forget"> {
  const awaits = entry.awaitsCommit;
  if (!awaits) return "send";
  if (now - entry.created < EDIT_SETTLE_MS) return "wait";
  if (awaits.store === "datastore") {
    // A registered database's edit: its transaction's status, as the database keeps it (no table of mapgate's there).
    let status: string | null;
    try {
      const { transactionStatus } = await import("#shared/features/byref-commit.ts");
      status = await transactionStatus(awaits.datastoreId, awaits.connection, awaits.xid);
    } catch (err) {
      logger.warn("edit's commit not checked", { eventId: entry.eventId, reason: String(err) });
      return "wait";
    }
    if (status === "committed") return "send";
    if (status === "in progress") return "wait";
    if (status !== "aborted")
      logger.warn("edit event forgotten: its database no longer knows the transaction", { eventId: entry.eventId });
    return "forget";
  }
  let hosted: HostedStore;
  try {
    hosted = await store();
  } catch (err) {
    logger.warn("edit's commit not checked", { eventId: entry.eventId, reason: String(err) });
    return "wait";
  }
  if (hosted.kind !== awaits.store) {
    // The deployment's hosted data moved to another store: the record's data cannot be asked any more.
    logger.warn("edit event forgotten: its store is not the deployment's", { eventId: entry.eventId });
    return "forget";
  }
  let committed: boolean | undefined;
  try {
    committed = await hosted.committed(awaits.serviceItemId, entry.eventId);
  } catch (err) {
    // The database is down or slow: asked again on the next run, until the record's retention ends.
    logger.warn("edit's commit not checked", { eventId: entry.eventId, reason: String(err) });
    return "wait";
  }
  if (committed === undefined) {
    logger.warn("edit event forgotten: its service's data is gone", { eventId: entry.eventId });
    return "forget";
  }
  return committed ? "send" : "forget";
}
