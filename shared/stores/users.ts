import { GetCommand, PutCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, isConditionFailure, queryByPortal } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";
import { holderChanges } from "#shared/stores/roles.ts";

/** The built-in roles; a custom role is stored as its role id. */
export const BUILT_IN_ROLES = ["org_admin", "org_publisher", "org_user"] as const;
export type BuiltInRole = (typeof BUILT_IN_ROLES)[number];

export interface User {
  readonly username: string;
  readonly portalId: string;
  readonly role: string;
  readonly fullName: string;
  readonly email: string;
  readonly passwordHash: string;
  readonly created: number;
  readonly modified: number;
  /**
   * The groups the user is a member of (at most MAX_USER_GROUPS), kept on the user's own record so the read of
   * the caller every request makes already says which group-shared services they see.
   */
  readonly groups: ReadonlySet<string>;
  /**
   * Raised by a password reset: every token, refresh token and authorization code carries the generation it was
   * issued in, and one of an older generation is refused on its next use (the user is read on every request).
   */
  readonly tokenGeneration: number;
}

/** ArcGIS's limit of groups per member. */
export const MAX_USER_GROUPS = 512;

export function toUser(item: Record<string, unknown>): User {
  const r = new RecordReader("user", item);
  return {
    username: r.string("username"),
    portalId: r.string("portalId"),
    role: r.string("role"),
    fullName: r.string("fullName"),
    email: r.string("email"),
    passwordHash: r.string("passwordHash"),
    created: r.number("created"),
    modified: r.number("modified"),
    groups: new Set(r.strings("groups")),
    tokenGeneration: r.optionalNumber("tokenGeneration") ?? 0,
  };
}

/** Usernames are case-sensitive and unique across the deployment, as on the original. */
export async function getUser(username: string): Promise<User | undefined> {
  const { Item } = await ddb.send(new GetCommand({ TableName: tableName("users"), Key: { username } }));
  return Item ? toUser(Item) : undefined;
}

export async function createUser(user: Omit<User, "groups" | "tokenGeneration">): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: tableName("users"),
      Item: { ...user },
      ConditionExpression: "attribute_not_exists(username)",
    }),
  );
}

export async function listPortalUsers(portalId: string): Promise<User[]> {
  const items = await queryByPortal("users", portalId);
  return items.map(toUser);
}

/**
 * Gives a user another role. The user and the roles' holder counts change in one transaction, so a
 * custom role can never be deleted while someone holds it. Throws the cancelled transaction's error.
 */
export async function setUserRole(user: User, role: string, customFrom: boolean, customTo: boolean): Promise<void> {
  await ddb.send(
    new TransactWriteCommand({
      TransactItems: [
        {
          Update: {
            TableName: tableName("users"),
            Key: { username: user.username },
            // portalRole fed an index that was never queried (and is gone): dropped as roles change.
            UpdateExpression: "SET #r = :r, modified = :m REMOVE portalRole",
            ConditionExpression: "portalId = :p AND #r = :old",
            ExpressionAttributeNames: { "#r": "role" },
            ExpressionAttributeValues: {
              ":r": role,
              ":m": Date.now(),
              ":p": user.portalId,
              ":old": user.role,
            },
          },
        },
        ...holderChanges(user.portalId, customFrom ? user.role : undefined, customTo ? role : undefined),
      ],
    }),
  );
}

/**
 * Gives a user a new password hash and a new token generation in one write: from the moment it is acknowledged,
 * every token, session, refresh token and authorization code issued before is refused on its next use. Answers
 * the updated user, or undefined when there is no such user.
 */
export async function resetPassword(username: string, passwordHash: string): Promise<User | undefined> {
  try {
    const { Attributes } = await ddb.send(
      new UpdateCommand({
        TableName: tableName("users"),
        Key: { username },
        UpdateExpression:
          "SET passwordHash = :h, modified = :m, tokenGeneration = if_not_exists(tokenGeneration, :zero) + :one",
        ConditionExpression: "attribute_exists(username)",
        ExpressionAttributeValues: { ":h": passwordHash, ":m": Date.now(), ":zero": 0, ":one": 1 },
        ReturnValues: "ALL_NEW",
      }),
    );
    return Attributes ? toUser(Attributes) : undefined;
  } catch (err) {
    if (isConditionFailure(err)) return undefined;
    throw err;
  }
}
