// Scheduled (every minute on AWS; on a timer in the local engine): sends again the events the bus did not take
// when they were raised, oldest first, ten per PutEvents, and forgets each one the bus accepted. An event the
// bus still refuses after OUTBOX_RETENTION_SECONDS is given up, with its detail in the log. Once an hour it also
// sweeps what no record names (shared/hosted/sweep.ts). A hosted layer's edit event kept awaiting its edit's commit
// (shared/hosted/edit-events.ts) is sent once the edit is found in its data's edit log, and forgotten when it is not
// there once the edit can no longer be running; a by-reference layer's is settled by its database's word on the
// edit's transaction (txid_status).
import { EventBridgeClient, PutEventsCommand } from "@aws-sdk/client-eventbridge";
import { DeleteCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { entryOf, type OutboxEntry } from "#shared/stores/events.ts";
import { logger } from "#shared/log.ts";
import { METRIC, putMetrics } from "#shared/metrics.ts";
import { ddb, scanAll } from "#shared/stores/dynamo.ts";
import { taskHandler } from "#shared/tasks.ts";
import { settleAwaiting } from "#shared/hosted/edit-events.ts";
import { hostedStore } from "#shared/hosted/deployment-store.ts";

// Here retrying is the point: the SDK's own backoff for throttling, within the run's time budget.
const bus = new EventBridgeClient({ maxAttempts: 5 });

/** One run sends at most this many events, so it ends well within its function's timeout. */
const MAX_PER_RUN = 2000;

async function forget(eventId: string) {
  await ddb.send(new DeleteCommand({ TableName: tableName("outbox"), Key: { eventId } }));
}

export const handler = taskHandler("events-redeliver", async () => {
  const now = Date.now();
  const pending = (await scanAll({ TableName: tableName("outbox"), ConsistentRead: true }))
    .map((item) => item as unknown as OutboxEntry)
    .sort((a, b) => a.created - b.created)
    .slice(0, MAX_PER_RUN);
  // Before sending: how long the oldest event has waited (0 when none waits), for the outbox-age alarm.
  const oldest = pending[0] ? Math.max(0, Math.round((now - pending[0].created) / 1000)) : 0;
  let sent = 0;
  let expired = 0;
  let refused = 0;
  const live: OutboxEntry[] = [];
  let waiting = 0;
  for (const e of pending) {
    if (e.expiresAt * 1000 > now) {
      // An edit's event put in the outbox before its edit committed: sent once the data says the edit was kept.
      const settled = e.awaitsCommit ? await settleAwaiting(e, hostedStore, now) : "send";
      if (settled === "send") live.push(e);
      else if (settled === "wait") waiting++;
      else {
        logger.info("edit's event forgotten: the edit was not kept", { eventId: e.eventId });
        await forget(e.eventId);
      }
    } else {
      logger.error("event given up", { type: e.detailType, detail: e.detail });
      await forget(e.eventId);
      expired++;
    }
  }
  for (let i = 0; i < live.length; i += 10) {
    const batch = live.slice(i, i + 10);
    let results: { ErrorCode?: string | undefined }[];
    try {
      results = (await bus.send(new PutEventsCommand({ Entries: batch.map(entryOf) }))).Entries ?? [];
    } catch (err) {
      // Still failing after the SDK's retries: the rest waits for the next run.
      logger.warn("redelivery stopped", { reason: err instanceof Error ? err.name : String(err) });
      refused += live.length - i;
      break;
    }
    for (const [j, e] of batch.entries()) {
      if (results[j] && !results[j].ErrorCode) {
        await forget(e.eventId);
        sent++;
      } else refused++;
    }
  }
  // Written every run, zeros included: the alarms see a steady series, and a missing one means no run.
  putMetrics([
    {
      dimensions: [[]],
      metrics: {
        [METRIC.eventsRedelivered]: { value: sent, unit: "Count" },
        [METRIC.redeliveryRefused]: { value: refused, unit: "Count" },
        [METRIC.eventsGivenUp]: { value: expired, unit: "Count" },
        [METRIC.outboxOldestAge]: { value: oldest, unit: "Seconds" },
      },
    },
  ]);
  // The hourly sweep rides on this schedule (REDELIVERY); its failure is logged and tried again next hour, never
  // the redelivery's.
  await import("#shared/hosted/sweep.ts")
    .then((m) => m.sweepWhenDue())
    .catch((err: unknown) => {
      logger.warn("sweep failed", { reason: err instanceof Error ? err.message : String(err) });
    });
  return { sent, refused, expired, waiting };
});
