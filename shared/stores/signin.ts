// Failed sign-ins per username, kept in the tokens table whether or not the user exists, so a lockout
// says nothing about which usernames are real. All changes are conditional writes: concurrent failures
// are all counted, and a lock is never lost to a race.
import { DeleteCommand, GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { config, tableName } from "#shared/config.ts";
import { ddb, isConditionFailure } from "#shared/stores/dynamo.ts";

const key = (username: string) => ({ pk: `signin#${username}`, sk: "-" });

export async function lockedUntil(username: string, now = Date.now()): Promise<number | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("tokens"), Key: key(username), ConsistentRead: true }),
  );
  const until = Item?.lockedUntil;
  return typeof until === "number" && until > now ? until : undefined;
}

/** Counts one failure; answers true when this failure locked the account. */
export async function recordFailure(username: string, now = Date.now()): Promise<boolean> {
  const { maxFailures, failureWindowMs, lockoutMs } = config().signin;
  const ttl = Math.ceil((now + Math.max(failureWindowMs, lockoutMs)) / 1000) + 3600;
  for (let attempt = 0; attempt < 5; attempt++) {
    try {
      // Within the current window: count it.
      const { Attributes } = await ddb.send(
        new UpdateCommand({
          TableName: tableName("tokens"),
          Key: key(username),
          UpdateExpression: "SET failures = failures + :one, expiresAt = :ttl",
          ConditionExpression: "windowStart > :floor",
          ExpressionAttributeValues: { ":one": 1, ":floor": now - failureWindowMs, ":ttl": ttl },
          ReturnValues: "ALL_NEW",
        }),
      );
      if (typeof Attributes?.failures === "number" && Attributes.failures >= maxFailures) {
        // Lock and start counting afresh once the lock ends; only the failure that reached the limit locks.
        await ddb
          .send(
            new UpdateCommand({
              TableName: tableName("tokens"),
              Key: key(username),
              UpdateExpression: "SET lockedUntil = :until, failures = :zero, windowStart = :now",
              ConditionExpression: "failures >= :max",
              ExpressionAttributeValues: { ":until": now + lockoutMs, ":zero": 0, ":now": now, ":max": maxFailures },
            }),
          )
          .catch((err: unknown) => {
            if (!isConditionFailure(err)) throw err;
          });
        return true;
      }
      return false;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
    try {
      // No record, or its window is over: start a new window (keeping a lock that is still running).
      await ddb.send(
        new PutCommand({
          TableName: tableName("tokens"),
          Item: { ...key(username), failures: 1, windowStart: now, expiresAt: ttl },
          ConditionExpression:
            "attribute_not_exists(pk) OR (windowStart <= :floor AND (attribute_not_exists(lockedUntil) OR lockedUntil <= :now))",
          ExpressionAttributeValues: { ":floor": now - failureWindowMs, ":now": now },
        }),
      );
      return maxFailures <= 1;
    } catch (err) {
      if (!isConditionFailure(err)) throw err;
    }
  }
  throw new Error("sign-in failures could not be recorded (contention)");
}

/** A successful sign-in forgets earlier failures (never a lock that is still running). */
export async function clearFailures(username: string, now = Date.now()): Promise<void> {
  try {
    await ddb.send(
      new DeleteCommand({
        TableName: tableName("tokens"),
        Key: key(username),
        ConditionExpression: "attribute_exists(pk) AND (attribute_not_exists(lockedUntil) OR lockedUntil <= :now)",
        ExpressionAttributeValues: { ":now": now },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
}

export const revocationKey = (tokenId: string) => ({ pk: `revoked#${tokenId}`, sk: "-" });
