// Events mapgate raises, sent to its EventBridge bus. One attempt with a short timeout: an event the bus does
// not take at once (throttled, failing, slow) is kept in the outbox table and sent again by events-redeliver,
// so the operation that raised it neither fails nor waits on the bus. Delivery is at least once: consumers
// de-duplicate by `detail.eventId`, which stays the same when an event is sent again.
import { randomUUID } from "node:crypto";
import type { PutEventsCommandOutput, PutEventsRequestEntry } from "@aws-sdk/client-eventbridge";
import { DeleteCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { EVENTS, type EventType } from "#shared/system.ts";
import { config, tableName } from "#shared/config.ts";
import { logger } from "#shared/log.ts";
import { count, METRIC } from "#shared/metrics.ts";
import { ddb } from "#shared/stores/dynamo.ts";
import type { PostgresConnection } from "#shared/stores/datastores.ts";

/** PutEvents takes 256 KiB per request: a detail past this leaves its `result` out (the job still has it). */
const MAX_DETAIL_BYTES = 200 * 1024;

function sized(detail: Record<string, unknown>): string {
  const text = JSON.stringify(detail);
  if (Buffer.byteLength(text) <= MAX_DETAIL_BYTES || !("result" in detail)) return text;
  return JSON.stringify({ ...detail, result: { omitted: "Too large for an event: read the job for its result." } });
}

/** How long an event the bus refused is kept for redelivery before it is given up (and logged). */
export const OUTBOX_RETENTION_SECONDS = 24 * 3600;

let bus: Promise<(entry: PutEventsRequestEntry) => Promise<PutEventsCommandOutput>> | undefined;

/**
 * The bus's client, loaded on the first event: most requests of a function that may raise one (a sign-in, a role
 * change) raise none, and the client would cost every cold start its import. No retries here (the outbox is the
 * retry) and a deadline far below any operation's own.
 */
function send(entry: PutEventsRequestEntry): Promise<PutEventsCommandOutput> {
  bus ??= import("@aws-sdk/client-eventbridge").then(({ EventBridgeClient, PutEventsCommand }) => {
    const client = new EventBridgeClient({
      maxAttempts: 1,
      requestHandler: { connectionTimeout: 300, requestTimeout: 800 },
    });
    return (e: PutEventsRequestEntry) => client.send(new PutEventsCommand({ Entries: [e] }));
  });
  return bus.then((put) => put(entry));
}

/** An event as kept in the outbox: what PutEvents needs to send it again unchanged. */
export interface OutboxEntry {
  readonly eventId: string;
  readonly detailType: string;
  readonly detail: string;
  readonly created: number;
  readonly expiresAt: number;
  /**
   * An event put here inside the transaction of a layer's edit, before it commits: sent only once the edit is known to
   * have committed (shared/hosted/edit-events.ts).
   */
  readonly awaitsCommit?: AwaitedCommit;
}

/**
 * The edit an outbox record waits on: a hosted layer's (the hosted store holding the service's data, and the service,
 * whose edit log tells), or a by-reference layer's in a registered database (`datastore`: its data store and
 * connection, and the edit's transaction id, whose status the database tells: shared/hosted/byref-edit.ts).
 */
export type AwaitedCommit =
  | { readonly store: "geopackage" | "postgis"; readonly serviceItemId: string }
  | {
      readonly store: "datastore";
      readonly datastoreId: string;
      /** The connection the edit was made on (its password stays in the store's secret). */
      readonly connection: PostgresConnection;
      readonly xid: string;
    };

function busName(): string {
  const name = config().eventBusName;
  if (!name) throw new Error("EVENT_BUS_NAME is not set: this function was not allowed to raise events");
  return name;
}

export function entryOf(e: OutboxEntry): PutEventsRequestEntry {
  return {
    Source: EVENTS.source,
    DetailType: e.detailType,
    Detail: e.detail,
    EventBusName: busName(),
    Time: new Date(e.created),
  };
}

/**
 * Raises one event; never throws for the bus's sake. `detail` gets an `eventId`; it must hold no secret (events
 * reach whoever the bus's rules deliver to).
 */
export async function emit(type: EventType, detail: Readonly<Record<string, unknown>>): Promise<void> {
  await sendOrKeep(eventEntry(type, detail));
}

/**
 * An event made whole before it is sent (its id given, or new): checked to be allowed here before anything is sent,
 * so an undeclared emitter fails in every test, not only when the bus does.
 */
export function eventEntry(
  type: EventType,
  detail: Readonly<Record<string, unknown>>,
  eventId: string = randomUUID(),
): OutboxEntry {
  tableName("outbox");
  busName();
  const now = Date.now();
  return {
    eventId,
    detailType: EVENTS.types[type],
    detail: sized({ eventId, ...detail }),
    created: now,
    expiresAt: Math.floor(now / 1000) + OUTBOX_RETENTION_SECONDS,
  };
}

/** The stored form of what a record awaits (nested objects copied: the SDK marshals plain ones). */
const awaitedRecord = (awaits: AwaitedCommit) =>
  "connection" in awaits ? { ...awaits, connection: { ...awaits.connection } } : { ...awaits };

/**
 * Keeps an event in the outbox awaiting the commit of the transaction it is put in (a hosted layer's edit); throws
 * when it cannot be kept, so that transaction rolls back and no edit goes without its event.
 */
export async function keepAwaitingCommit(entry: OutboxEntry, awaits: AwaitedCommit): Promise<void> {
  await ddb.send(
    new PutCommand({ TableName: tableName("outbox"), Item: { ...entry, awaitsCommit: awaitedRecord(awaits) } }),
  );
}

/**
 * Sends an event kept awaiting its commit, once the commit is made: the bus took it, its record is forgotten; it did
 * not, its record stops awaiting and is sent again as any kept event. Never throws: a record left as it was is sent by
 * events-redeliver once it finds the edit in the edit log (at least once).
 */
export async function sendCommitted(entry: OutboxEntry): Promise<void> {
  let taken = false;
  try {
    taken = !(await send(entryOf(entry))).FailedEntryCount;
  } catch {
    // Not taken: kept below as any event the bus refused.
  }
  if (!taken) {
    await keep(entry, "FailedEntry");
    return;
  }
  try {
    await ddb.send(new DeleteCommand({ TableName: tableName("outbox"), Key: { eventId: entry.eventId } }));
  } catch (err) {
    // Its record still awaits the commit: events-redeliver finds the edit kept and sends it again (at least once).
    logger.warn("sent event not forgotten", { eventId: entry.eventId, reason: err instanceof Error ? err.name : "" });
  }
}

/** Sends an event once; one the bus does not take is kept in the outbox (replacing any record of it). */
async function sendOrKeep(entry: OutboxEntry): Promise<void> {
  let reason: string;
  try {
    const out = await send(entryOf(entry));
    if (!out.FailedEntryCount) return;
    reason = out.Entries?.[0]?.ErrorCode ?? "FailedEntry";
  } catch (err) {
    reason = err instanceof Error ? err.name : "Error";
  }
  await keep(entry, reason);
}

async function keep(entry: OutboxEntry, reason: string): Promise<void> {
  const { eventId } = entry;
  logger.warn("event kept for redelivery", { type: entry.detailType, eventId, reason });
  try {
    // Without `awaitsCommit`: kept now, it is sent again as it is.
    await ddb.send(new PutCommand({ TableName: tableName("outbox"), Item: { ...entry, awaitsCommit: undefined } }));
    count(METRIC.eventsOutboxed, { EventType: entry.detailType });
  } catch (err) {
    count(METRIC.eventsLost, { EventType: entry.detailType });
    // The bus and the table both failed: the operation itself stands; the event is in the log, not lost silently.
    logger.error("event lost", {
      type: entry.detailType,
      detail: entry.detail,
      error: err instanceof Error ? err : new Error(String(err)),
    });
  }
}
