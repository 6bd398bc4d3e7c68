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
  /** What the user says of themselves on their profile ("" when nothing). */
  readonly description: string;
  /** A disabled user cannot sign in, and every token they held stopped working when they were disabled. */
  readonly disabled: boolean;
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
    description: r.optionalString("description") ?? "",
    disabled: item.disabled === true,
  };
}

/** Usernames are case-sensitive and unique across the deployment, as on the original. */
export async function getUser(username: string): Promise<User | undefined> {
  const { Item } = await ddb.send(new GetCommand({ TableName: tableName("users"), Key: { username } }));
  return Item ? toUser(Item) : undefined;
}

export async function createUser(
  user: Omit<User, "groups" | "tokenGeneration" | "description" | "disabled">,
): Promise<void> {
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

/** Thrown when the user changed (or went) between reading it and writing it: the caller says to try again. */
export class UserChangedError extends Error {
  constructor() {
    super("The user was changed by another request.");
    this.name = "UserChangedError";
  }
}

/** The user's full name and description as given (those absent stay as they are); answers the user as written. */
export async function updateProfile(
  user: User,
  changes: { readonly fullName?: string; readonly description?: string },
): Promise<User> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":m": Date.now(), ":p": user.portalId };
  const sets = ["modified = :m"];
  if (changes.fullName !== undefined) {
    names["#f"] = "fullName";
    values[":f"] = changes.fullName;
    sets.push("#f = :f");
  }
  if (changes.description !== undefined) {
    names["#d"] = "description";
    values[":d"] = changes.description;
    sets.push("#d = :d");
  }
  try {
    const { Attributes } = await ddb.send(
      new UpdateCommand({
        TableName: tableName("users"),
        Key: { username: user.username },
        UpdateExpression: `SET ${sets.join(", ")}`,
        ConditionExpression: "portalId = :p",
        ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
        ExpressionAttributeValues: values,
        ReturnValues: "ALL_NEW",
      }),
    );
    return toUser(Attributes ?? {});
  } catch (err) {
    if (isConditionFailure(err)) throw new UserChangedError();
    throw err;
  }
}

/**
 * Disables or enables a user. Disabling raises the token generation in the same write, so every token, session and
 * refresh token the user held stops working on its next use, as a password reset does.
 */
export async function setDisabled(user: User, disabled: boolean): Promise<void> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("users"),
        Key: { username: user.username },
        UpdateExpression: disabled
          ? "SET disabled = :d, modified = :m, tokenGeneration = if_not_exists(tokenGeneration, :zero) + :one"
          : "SET disabled = :d, modified = :m",
        ConditionExpression: "portalId = :p",
        ExpressionAttributeValues: {
          ":d": disabled,
          ":m": Date.now(),
          ":p": user.portalId,
          ...(disabled ? { ":zero": 0, ":one": 1 } : {}),
        },
      }),
    );
  } catch (err) {
    if (isConditionFailure(err)) throw new UserChangedError();
    throw err;
  }
}

/**
 * Deletes a user, their folders' record and (a custom role) their count among the role's holders, in one
 * transaction; only while the user still has the role read (a role changed meanwhile fails it: try again).
 * The caller has checked that they own nothing and left their groups.
 */
export async function removeUser(user: User, foldersKey: Record<string, string>): Promise<void> {
  const custom = !(BUILT_IN_ROLES as readonly string[]).includes(user.role);
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: tableName("users"),
              Key: { username: user.username },
              ConditionExpression: "portalId = :p AND #r = :r",
              ExpressionAttributeNames: { "#r": "role" },
              ExpressionAttributeValues: { ":p": user.portalId, ":r": user.role },
            },
          },
          { Delete: { TableName: tableName("items"), Key: foldersKey } },
          ...holderChanges(user.portalId, custom ? user.role : undefined, undefined),
        ],
      }),
    );
  } catch (err) {
    if (isConditionFailure(err) || (err as { name?: string }).name === "TransactionCanceledException") {
      throw new UserChangedError();
    }
    throw err;
  }
}
