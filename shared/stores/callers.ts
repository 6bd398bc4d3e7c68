// IAM callers: the principals of other AWS services an operator allowed to call mapgate, each by the alias of
// the operations function it invokes, with the organization and member it acts as.
import { createHash } from "node:crypto";
import { DeleteCommand, GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, isConditionFailure, scanAll } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";

export interface Caller {
  /** The alias of the operations function this caller invokes (its resource policy names the principal). */
  readonly callerId: string;
  /** An IAM role (or user) ARN; a role's sessions (`assumed-role/…`) are that role. */
  readonly principalArn: string;
  readonly portalId: string;
  /** The member whose role decides what the caller may do, and who owns what it publishes. */
  readonly username: string;
  readonly created: number;
}

const ROLE_OR_USER = /^arn:aws[a-z-]*:iam::\d{12}:(role|user)\/[\w+=,.@/-]{1,512}$/;
const ASSUMED_ROLE = /^arn:(aws[a-z-]*):sts::(\d{12}):assumed-role\/([\w+=,.@-]{1,64})\/[\w+=,.@-]{1,64}$/;

/**
 * The principal an ARN names, as a resource policy matches it: a role session is its role (the role's path is
 * not part of a session ARN, so roles are compared by account and name), a role or user is itself.
 */
export function principalOf(arn: string): string | undefined {
  const session = ASSUMED_ROLE.exec(arn);
  if (session) return `arn:${session[1]}:iam::${session[2]}:role/${session[3]}`;
  if (!ROLE_OR_USER.test(arn)) return undefined;
  // arn:aws:iam::123456789012:role/some/path/Name → …:role/Name
  return arn.replace(/:(role|user)\/(?:[^/]+\/)*([^/]+)$/, ":$1/$2");
}

/** The alias a principal invokes: derived from the principal, so registering it twice names the same alias. */
export function callerIdOf(principalArn: string): string {
  return `caller-${createHash("sha256").update(principalArn, "utf8").digest("hex").slice(0, 24)}`;
}

export const CALLER_ID = /^caller-[0-9a-f]{24}$/;

function toCaller(item: Record<string, unknown>): Caller {
  const r = new RecordReader("caller", item);
  return {
    callerId: r.string("callerId"),
    principalArn: r.string("principalArn"),
    portalId: r.string("portalId"),
    username: r.string("username"),
    created: r.number("created"),
  };
}

export async function getCaller(callerId: string): Promise<Caller | undefined> {
  if (!CALLER_ID.test(callerId)) return undefined;
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("callers"), Key: { callerId }, ConsistentRead: true }),
  );
  return Item ? toCaller(Item) : undefined;
}

/** Registers a caller; false if its principal is registered already (remove it first to change it). */
export async function putCaller(caller: Caller): Promise<boolean> {
  try {
    await ddb.send(
      new PutCommand({
        TableName: tableName("callers"),
        Item: { ...caller },
        ConditionExpression: "attribute_not_exists(callerId)",
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

export async function deleteCaller(callerId: string): Promise<Caller | undefined> {
  const { Attributes } = await ddb.send(
    new DeleteCommand({ TableName: tableName("callers"), Key: { callerId }, ReturnValues: "ALL_OLD" }),
  );
  return Attributes ? toCaller(Attributes) : undefined;
}

/** Every registered caller (operator side: the table holds one item per caller). */
export async function listCallers(): Promise<Caller[]> {
  return (await scanAll({ TableName: tableName("callers") })).map(toCaller);
}
