// Sign-in attempts per username, kept in the tokens table whether or not the user exists, so a lockout
// says nothing about which usernames are real. An attempt is counted *before* its password is checked,
// with one conditional write: however many requests arrive at once, at most `maxFailures` passwords are
// checked per window, and once they have failed the account is locked.
// The window is fixed: it starts at the first failure and lasts `failureWindowMs`.
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { config, tableName } from "#shared/config.ts";
import { emit } from "#shared/stores/events.ts";
import { count, METRIC } from "#shared/metrics.ts";
import { ddb, isConditionFailure } from "#shared/stores/dynamo.ts";

const key = (username: string) => ({ pk: `signin#${username}`, sk: "-" });
const NAMES = { "#f": "failures", "#w": "windowStart", "#l": "lockedUntil", "#x": "expiresAt" };

export type Attempt = { readonly allowed: true; readonly count: number } | { readonly allowed: false };

function ttlFor(now: number): number {
  const { failureWindowMs, lockoutMs } = config().signin;
  return Math.ceil((now + failureWindowMs + lockoutMs) / 1000) + 3600;
}

/** Locks the account; the request that locks it (not one that finds it locked) raises the event. */
async function lock(username: string, now: number): Promise<void> {
  const { maxFailures, lockoutMs } = config().signin;
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("tokens"),
        Key: key(username),
        // Counting starts afresh when the lock ends.
        UpdateExpression: "SET #l = :until, #f = :zero, #w = :now, #x = :ttl",
        ConditionExpression: "#f >= :max",
        ExpressionAttributeNames: NAMES,
        ExpressionAttributeValues: {
          ":until": now + lockoutMs,
          ":zero": 0,
          ":now": now,
          ":max": maxFailures,
          ":ttl": ttlFor(now),
        },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err; // another request locked it first
    return;
  }
  // Whether or not such a user exists (the lockout says nothing about that to the client, nor does this).
  count(METRIC.signInLockouts);
  await emit("signInLocked", { username, lockedUntil: new Date(now + lockoutMs).toISOString() });
}

/** Counts an attempt before its password is checked; refused while locked or once the window is used up. */
export async function beginAttempt(username: string, now = Date.now()): Promise<Attempt> {
  const { maxFailures, failureWindowMs } = config().signin;
  const values = { ":one": 1, ":floor": now - failureWindowMs, ":max": maxFailures, ":now": now, ":ttl": ttlFor(now) };
  for (let round = 0; round < 5; round++) {
    try {
      const { Attributes } = await ddb.send(
        new UpdateCommand({
          TableName: tableName("tokens"),
          Key: key(username),
          UpdateExpression: "SET #f = #f + :one, #x = :ttl",
          ConditionExpression: "#w > :floor AND #f < :max AND (attribute_not_exists(#l) OR #l <= :now)",
          ExpressionAttributeNames: NAMES,
          ExpressionAttributeValues: values,
          ReturnValues: "ALL_NEW",
        }),
      );
      return { allowed: true, count: Number(Attributes?.failures) };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    const { Item } = await ddb.send(
      new GetCommand({ TableName: tableName("tokens"), Key: key(username), ConsistentRead: true }),
    );
    if (typeof Item?.lockedUntil === "number" && Item.lockedUntil > now) return { allowed: false };
    if (Item && Number(Item.windowStart) > now - failureWindowMs && Number(Item.failures) >= maxFailures) {
      await lock(username, now);
      return { allowed: false };
    }
    try {
      // No record, or its window is over and no lock runs: this attempt opens a new window.
      await ddb.send(
        new PutCommand({
          TableName: tableName("tokens"),
          Item: { ...key(username), failures: 1, windowStart: now, expiresAt: ttlFor(now) },
          ConditionExpression:
            "attribute_not_exists(pk) OR (#w <= :floor AND (attribute_not_exists(#l) OR #l <= :now))",
          ExpressionAttributeNames: { "#w": "windowStart", "#l": "lockedUntil" },
          ExpressionAttributeValues: { ":floor": now - failureWindowMs, ":now": now },
        }),
      );
      return { allowed: true, count: 1 };
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
  throw new Error("sign-in attempts could not be counted (contention)");
}

/** The counted attempt failed: the one that used up the window locks the account. */
export async function attemptFailed(username: string, attempt: Attempt, now = Date.now()): Promise<void> {
  if (attempt.allowed && attempt.count >= config().signin.maxFailures) await lock(username, now);
}

/** The counted attempt succeeded: earlier failures are forgotten (never a lock that is running). */
export async function attemptSucceeded(username: string, now = Date.now()): Promise<void> {
  try {
    await ddb.send(
      new DeleteCommand({
        TableName: tableName("tokens"),
        Key: key(username),
        ConditionExpression: "attribute_exists(pk) AND (attribute_not_exists(#l) OR #l <= :now)",
        ExpressionAttributeNames: { "#l": "lockedUntil" },
        ExpressionAttributeValues: { ":now": now },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

/** Forgets every counted failure and any lock (an operator has just given the user a new password). */
export async function clearAttempts(username: string): Promise<void> {
  await ddb.send(new DeleteCommand({ TableName: tableName("tokens"), Key: key(username) }));
}

export const revocationKey = (tokenId: string) => ({ pk: `revoked#${tokenId}`, sk: "-" });
