// Custom roles. A role's name is unique in its portal whatever the letter case: each role holds a name
// reservation item, and every create, rename and delete moves role and reservation in one transaction,
// so two requests can never both win a name and no reservation outlives its role.
import { GetCommand, TransactWriteCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, failedConditions, queryAll } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";

export interface Role {
  readonly roleId: string;
  readonly portalId: string;
  readonly name: string;
  readonly description: string;
  readonly privileges: readonly string[];
  readonly created: number;
  readonly modified: number;
  /** Optimistic concurrency: every change is conditioned on the version it read. */
  readonly version: number;
  /** Users holding the role (kept by updateuserrole, in the same transaction as the user). */
  readonly holders: number;
}

/**
 * The key that makes names unique: the same name in any letter case is the same name. Compatibility
 * forms fold together (NFKC: "ﬁ" is "fi"), and upper-then-lower casing folds "ß"/"SS" and "ς"/"σ".
 */
export const nameKey = (name: string) => name.normalize("NFKC").toUpperCase().toLowerCase();
const roleEntry = (roleId: string) => `role#${roleId}`;
const nameEntry = (name: string) => `name#${nameKey(name)}`;

export function toRole(item: Record<string, unknown>): Role {
  const r = new RecordReader("role", item);
  return {
    roleId: r.string("roleId"),
    portalId: r.string("portalId"),
    name: r.string("name"),
    description: r.string("description"),
    privileges: r.strings("privileges"),
    created: r.number("created"),
    modified: r.number("modified"),
    version: r.number("version"),
    holders: r.optionalNumber("holders") ?? 0,
  };
}

export async function getRole(portalId: string, roleId: string): Promise<Role | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({
      TableName: tableName("roles"),
      Key: { portalId, entry: roleEntry(roleId) },
      ConsistentRead: true,
    }),
  );
  return Item ? toRole(Item) : undefined;
}

export async function listRoles(portalId: string): Promise<Role[]> {
  const items = await queryAll({
    TableName: tableName("roles"),
    KeyConditionExpression: "portalId = :p AND begins_with(entry, :r)",
    ExpressionAttributeValues: { ":p": portalId, ":r": "role#" },
  });
  return items.map(toRole);
}

export class NameTakenError extends Error {
  constructor(name: string) {
    super(`A role named '${name}' already exists in this organization.`);
    this.name = "NameTakenError";
  }
}

/** Another request changed the role between our read and our write. */
export class StaleRoleError extends Error {
  constructor() {
    super("stale role");
    this.name = "StaleRoleError";
  }
}

export async function createRole(role: Role): Promise<void> {
  const table = tableName("roles");
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Put: {
              TableName: table,
              Item: { portalId: role.portalId, entry: nameEntry(role.name), roleId: role.roleId },
              ConditionExpression: "attribute_not_exists(#e)",
              ExpressionAttributeNames: { "#e": "entry" },
            },
          },
          {
            Put: {
              TableName: table,
              Item: { ...role, entry: roleEntry(role.roleId) },
              ConditionExpression: "attribute_not_exists(#e)",
              ExpressionAttributeNames: { "#e": "entry" },
            },
          },
        ],
      }),
    );
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new NameTakenError(role.name);
    throw err;
  }
}

/** Writes `next`'s name, description and privileges over `current` (same id) as version+1, moving the
 * name reservation when the name changes. */
export async function replaceRole(current: Role, next: Role): Promise<void> {
  const table = tableName("roles");
  const renamed = nameKey(current.name) !== nameKey(next.name);
  const { roleId, portalId } = current;
  const items: NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]["TransactItems"]> = [
    {
      // An update, not a put: `holders` is kept by other transactions and must not be written back stale.
      Update: {
        TableName: table,
        Key: { portalId, entry: roleEntry(roleId) },
        UpdateExpression: "SET #n = :n, #d = :d, #p = :p, #m = :m, #v = :next",
        ConditionExpression: "#v = :v",
        // Several of these are DynamoDB reserved words: every attribute goes through a name placeholder.
        ExpressionAttributeNames: {
          "#n": "name",
          "#d": "description",
          "#p": "privileges",
          "#m": "modified",
          "#v": "version",
        },
        ExpressionAttributeValues: {
          ":n": next.name,
          ":d": next.description,
          ":p": [...next.privileges],
          ":m": next.modified,
          ":next": current.version + 1,
          ":v": current.version,
        },
      },
    },
  ];
  if (renamed) {
    items.push(
      {
        Put: {
          TableName: table,
          Item: { portalId, entry: nameEntry(next.name), roleId },
          ConditionExpression: "attribute_not_exists(#e)",
          ExpressionAttributeNames: { "#e": "entry" },
        },
      },
      {
        Delete: {
          TableName: table,
          Key: { portalId, entry: nameEntry(current.name) },
          ConditionExpression: "#id = :id",
          ExpressionAttributeNames: { "#id": "roleId" },
          ExpressionAttributeValues: { ":id": roleId },
        },
      },
    );
  }
  try {
    await ddb.send(new TransactWriteCommand({ TransactItems: items }));
  } catch (err) {
    const failed = failedConditions(err);
    if (failed?.includes(0)) throw new StaleRoleError();
    if (failed?.includes(1)) throw new NameTakenError(next.name);
    throw err;
  }
}

export async function deleteRole(role: Role): Promise<void> {
  const table = tableName("roles");
  try {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          {
            Delete: {
              TableName: table,
              Key: { portalId: role.portalId, entry: roleEntry(role.roleId) },
              // Nobody may gain the role while it is being deleted: holders is checked in the same write.
              ConditionExpression: "#v = :v AND (attribute_not_exists(#h) OR #h = :zero)",
              ExpressionAttributeNames: { "#v": "version", "#h": "holders" },
              ExpressionAttributeValues: { ":v": role.version, ":zero": 0 },
            },
          },
          {
            Delete: {
              TableName: table,
              Key: { portalId: role.portalId, entry: nameEntry(role.name) },
              ConditionExpression: "#id = :id",
              ExpressionAttributeNames: { "#id": "roleId" },
              ExpressionAttributeValues: { ":id": role.roleId },
            },
          },
        ],
      }),
    );
  } catch (err) {
    if (failedConditions(err)?.includes(0)) throw new StaleRoleError();
    throw err;
  }
}

/** The transaction items that move one holder from one custom role to another (either may be built-in). */
export function holderChanges(portalId: string, from: string | undefined, to: string | undefined) {
  const table = tableName("roles");
  const change = (roleId: string, delta: number) => ({
    Update: {
      TableName: table,
      Key: { portalId, entry: roleEntry(roleId) },
      UpdateExpression: "ADD #h :d",
      ConditionExpression: "attribute_exists(#e)",
      ExpressionAttributeNames: { "#h": "holders", "#e": "entry" },
      ExpressionAttributeValues: { ":d": delta },
    },
  });
  return [...(to ? [change(to, 1)] : []), ...(from ? [change(from, -1)] : [])];
}
