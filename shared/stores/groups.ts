// Groups: the portal's unit of sharing. A group's partition holds its record, its members, the items shared
// with it, join requests and invitations. Membership is written twice in one transaction: the member's entry
// in the group (who is in it) and the group's id on the member's user record (what the member sees), so the
// read of the caller that every request makes already carries their groups. A group's title is reserved in its
// organization's partition (`org#<portalId>`, entry `title#<folded title>`) in the transaction that creates,
// renames or deletes the group, so two groups of one organization never share a title in any letter case.
import { DeleteCommand, QueryCommand, TransactWriteCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { batchGet, ddb, failedConditions, queryAll } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";
import { nameKey } from "#shared/stores/roles.ts";
import { ACCESS, type Access } from "#shared/stores/service-keys.ts";
import { MAX_USER_GROUPS, type User } from "#shared/stores/users.ts";

export const GROUP = "group";
export const MEMBER_TYPES = ["owner", "admin", "member"] as const;
export type MemberType = (typeof MEMBER_TYPES)[number];
export const GROUP_SORT_FIELDS = ["title", "owner", "avgrating", "numviews", "created", "modified"] as const;

export interface Group {
  readonly groupId: string;
  readonly portalId: string;
  readonly title: string;
  readonly owner: string;
  readonly tags: readonly string[];
  readonly description: string;
  readonly snippet: string;
  readonly access: Access;
  readonly isInvitationOnly: boolean;
  readonly isViewOnly: boolean;
  /** Anyone who may see the group joins at once; otherwise `join` asks the group's managers (an application). */
  readonly autoJoin: boolean;
  readonly sortField: string;
  readonly sortOrder: "asc" | "desc";
  readonly created: number;
  readonly modified: number;
  /** Set while the group is being deleted: nobody joins it nor shares with it any more. */
  readonly deleting: boolean;
  /** Pending join requests, kept in the transactions that add and remove them. */
  readonly applications: number;
}

/** Group fields set by createGroup and update. */
export type GroupFields = Omit<
  Group,
  "groupId" | "portalId" | "owner" | "created" | "modified" | "deleting" | "applications"
>;

export interface Member {
  readonly username: string;
  readonly memberType: MemberType;
  readonly joined: number;
}

/** A join request or an invitation. */
export interface Request {
  readonly username: string;
  readonly created: number;
  /** An invitation's member type. */
  readonly memberType?: MemberType;
}

export const memberEntry = (username: string) => `member#${username}`;
const applicationEntry = (username: string) => `application#${username}`;
const inviteEntry = (username: string) => `invite#${username}`;
/** Where a user's invitations are listed: a partition of the user's own in the groups table. */
export const userInvitations = (username: string) => `user#${username}`;
const invitedKey = (username: string, groupId: string) => ({
  groupId: userInvitations(username),
  entry: `invite#${groupId}`,
});

/** Where a title is reserved: its organization's partition, the title folded as role names are. */
const titleKey = (portalId: string, title: string) => ({
  groupId: `org#${portalId}`,
  entry: `title#${nameKey(title)}`,
});

const table = () => tableName("groups");
const usersTable = () => tableName("users");

export function toGroup(record: Record<string, unknown>): Group {
  const r = new RecordReader("group", record);
  return {
    groupId: r.string("groupId"),
    portalId: r.string("portalId"),
    title: r.string("title"),
    owner: r.string("owner"),
    tags: r.strings("tags"),
    description: r.string("description"),
    snippet: r.string("snippet"),
    access: r.oneOf("access", ACCESS),
    isInvitationOnly: r.boolean("isInvitationOnly"),
    isViewOnly: r.boolean("isViewOnly"),
    autoJoin: r.boolean("autoJoin"),
    sortField: r.string("sortField"),
    sortOrder: r.oneOf("sortOrder", ["asc", "desc"] as const),
    created: r.number("created"),
    modified: r.number("modified"),
    deleting: record.deleting === true,
    applications: Math.max(0, r.optionalNumber("applications") ?? 0),
  };
}

function toMember(record: Record<string, unknown>): Member {
  const r = new RecordReader("group member", record);
  return {
    username: r.string("username"),
    memberType: r.oneOf("memberType", MEMBER_TYPES),
    joined: r.number("joined"),
  };
}

const GROUP_ID = /^[0-9a-f]{32}$/;
export const isGroupId = (id: string) => GROUP_ID.test(id);

export async function getGroup(groupId: string): Promise<Group | undefined> {
  return (await getGroups([groupId])).get(groupId);
}

/** Groups by id, as the table holds them now (missing ids are left out). */
export async function getGroups(groupIds: readonly string[]): Promise<Map<string, Group>> {
  const ids = [...new Set(groupIds)].filter(isGroupId);
  const out = new Map<string, Group>();
  for (let i = 0; i < ids.length; i += 100) {
    const keys = ids.slice(i, i + 100).map((groupId) => ({ groupId, entry: GROUP }));
    const found = await batchGet({ [table()]: { Keys: keys, ConsistentRead: true } });
    for (const record of found[table()] ?? []) out.set(String(record.groupId), toGroup(record));
  }
  return out;
}

/** A user's entries in the given groups (groups they are not in are left out), by group id. */
export async function membershipsOf(username: string, groupIds: readonly string[]): Promise<Map<string, Member>> {
  const ids = [...new Set(groupIds)].filter(isGroupId);
  const out = new Map<string, Member>();
  for (let i = 0; i < ids.length; i += 100) {
    const keys = ids.slice(i, i + 100).map((groupId) => ({ groupId, entry: memberEntry(username) }));
    const found = await batchGet({ [table()]: { Keys: keys, ConsistentRead: true } });
    for (const record of found[table()] ?? []) out.set(String(record.groupId), toMember(record));
  }
  return out;
}

/** The member's entry in a group, if they are in it. */
export async function getMember(groupId: string, username: string): Promise<Member | undefined> {
  const found = await batchGet({
    [table()]: { Keys: [{ groupId, entry: memberEntry(username) }], ConsistentRead: true },
  });
  const record = found[table()]?.[0];
  return record ? toMember(record) : undefined;
}

async function entries(groupId: string, prefix: string): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: table(),
    ...(prefix === ""
      ? { KeyConditionExpression: "groupId = :g", ExpressionAttributeValues: { ":g": groupId } }
      : {
          KeyConditionExpression: "groupId = :g AND begins_with(entry, :p)",
          ExpressionAttributeValues: { ":g": groupId, ":p": prefix },
        }),
    ConsistentRead: true,
  });
}

export async function listMembers(groupId: string): Promise<Member[]> {
  return (await entries(groupId, "member#")).map(toMember);
}

/** The ids of the items recorded as shared with the group (each item's own record is the truth). */
export async function listGroupItemIds(groupId: string): Promise<string[]> {
  return (await entries(groupId, "item#")).map((r) => String(r.itemId));
}

export async function listRequests(groupId: string, kind: "application" | "invite"): Promise<Request[]> {
  return (await entries(groupId, `${kind}#`)).map((r) => ({
    username: String(r.username),
    created: Number(r.created),
    ...(typeof r.memberType === "string" ? { memberType: r.memberType as MemberType } : {}),
  }));
}

export async function getRequest(
  groupId: string,
  kind: "application" | "invite",
  username: string,
): Promise<Request | undefined> {
  const entry = kind === "application" ? applicationEntry(username) : inviteEntry(username);
  const found = await batchGet({ [table()]: { Keys: [{ groupId, entry }], ConsistentRead: true } });
  const r = found[table()]?.[0];
  if (!r) return undefined;
  return {
    username: String(r.username),
    created: Number(r.created),
    ...(typeof r.memberType === "string" ? { memberType: r.memberType as MemberType } : {}),
  };
}

/** An organization's groups, newest first, at most `max` (the sparse `byPortal` index holds group records only). */
export async function listPortalGroups(portalId: string, max: number): Promise<Group[]> {
  const out: Group[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName: table(),
        IndexName: "byPortal",
        KeyConditionExpression: "portalId = :p",
        ExpressionAttributeValues: { ":p": portalId },
        ScanIndexForward: false,
        Limit: max - out.length,
        ExclusiveStartKey: start,
      }),
    );
    out.push(...(page.Items ?? []).map(toGroup));
    start = page.LastEvaluatedKey;
  } while (start && out.length < max);
  return out;
}

/** The user has reached MAX_USER_GROUPS. */
export class TooManyGroupsError extends Error {}
/** The group is gone, or being deleted. */
export class GroupGoneError extends Error {}
/** Another group of the organization has the title (in any letter case). */
export class TitleTakenError extends Error {}
/** The group changed since it was read (its title): read it again. */
export class StaleGroupError extends Error {}
/** No such join request (answered or withdrawn meanwhile), or one is pending already. */
export class RequestError extends Error {}
/** The user is a member already (adding) or not a member (removing), or is the owner (who cannot leave). */
export class MembershipError extends Error {}

/**
 * The group, still there and not being deleted, as the condition of a transaction. Written as an update that
 * stamps the group (not a ConditionCheck): the local engine carries a ConditionCheck out as a delete put back at
 * once, which a concurrent reader could glimpse as a missing group.
 */
export const groupTouched = (groupId: string, applications = 0) => ({
  Update: {
    TableName: tableName("groups"),
    Key: { groupId, entry: GROUP },
    // The pending join requests' count moves in the transaction that adds or removes one.
    UpdateExpression: applications === 0 ? "SET touched = :now" : "SET touched = :now ADD applications :a",
    ConditionExpression: "attribute_exists(entry) AND attribute_not_exists(deleting)",
    ExpressionAttributeValues: { ":now": Date.now(), ...(applications === 0 ? {} : { ":a": applications }) },
  },
});

const groupLive = (groupId: string, extra: Record<string, unknown> = {}) => ({
  TableName: table(),
  Key: { groupId, entry: GROUP },
  ConditionExpression: "attribute_exists(entry) AND attribute_not_exists(deleting)",
  ...extra,
});

/** Adds the group to the user's record (within the per-user limit), in the user's organization only. */
const userJoins = (username: string, portalId: string, groupId: string) => ({
  Update: {
    TableName: usersTable(),
    Key: { username },
    UpdateExpression: "ADD #g :g",
    ConditionExpression: "portalId = :p AND (attribute_not_exists(#g) OR size(#g) < :max)",
    ExpressionAttributeNames: { "#g": "groups" },
    ExpressionAttributeValues: { ":g": new Set([groupId]), ":p": portalId, ":max": MAX_USER_GROUPS },
  },
});

const userLeaves = (username: string, groupId: string) => ({
  Update: {
    TableName: usersTable(),
    Key: { username },
    UpdateExpression: "DELETE #g :g",
    ExpressionAttributeNames: { "#g": "groups" },
    ExpressionAttributeValues: { ":g": new Set([groupId]) },
  },
});

async function transact(items: object[], explain: (failed: number[]) => Error): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await ddb.send(new TransactWriteCommand({ TransactItems: items as never }));
      return;
    } catch (err) {
      const failed = failedConditions(err);
      if (failed && failed.length > 0) throw explain(failed);
      const reasons = (err as { CancellationReasons?: { Code?: string }[] }).CancellationReasons ?? [];
      if (!reasons.some((r) => r.Code === "TransactionConflict") || attempt >= 8) throw err;
      await new Promise((r) => setTimeout(r, Math.random() * 10 * 2 ** attempt));
    }
  }
}

function groupRecord(group: Group): Record<string, unknown> {
  return {
    ...group,
    entry: GROUP,
    tags: [...group.tags],
    createdKey: String(group.created).padStart(16, "0"),
    deleting: undefined,
  };
}

/** Reserves a title for a group: no other group of the organization has it, in any letter case. */
const reserveTitle = (group: Pick<Group, "groupId" | "portalId">, title: string) => ({
  Put: {
    TableName: table(),
    Item: { ...titleKey(group.portalId, title), titleOf: group.groupId },
    ConditionExpression: "attribute_not_exists(entry) OR titleOf = :g",
    ExpressionAttributeValues: { ":g": group.groupId },
  },
});

/** Gives a title back, if the group still holds it. */
const releaseTitle = (group: Pick<Group, "groupId" | "portalId">, title: string) => ({
  Delete: {
    TableName: table(),
    Key: titleKey(group.portalId, title),
    ConditionExpression: "titleOf = :g",
    ExpressionAttributeValues: { ":g": group.groupId },
  },
});

/** The group holding a group's current title in its organization, if any. */
async function titleHolder(group: Pick<Group, "portalId" | "title">): Promise<string | undefined> {
  const found = await batchGet({ [table()]: { Keys: [titleKey(group.portalId, group.title)], ConsistentRead: true } });
  const holder = found[table()]?.[0]?.titleOf;
  return typeof holder === "string" ? holder : undefined;
}

/**
 * Creates a group with its owner as its first member and its title reserved, in one transaction: of two
 * concurrent creates with one title, exactly one wins.
 */
export async function createGroup(group: Group): Promise<void> {
  const { deleting: _, ...stored } = groupRecord(group);
  await transact(
    [
      reserveTitle(group, group.title),
      { Put: { TableName: table(), Item: stored, ConditionExpression: "attribute_not_exists(entry)" } },
      {
        Put: {
          TableName: table(),
          Item: { groupId: group.groupId, entry: memberEntry(group.owner), ...memberFields(group.owner, "owner") },
        },
      },
      userJoins(group.owner, group.portalId, group.groupId),
    ],
    (failed) => (failed.includes(0) ? new TitleTakenError() : new TooManyGroupsError()),
  );
}

const memberFields = (username: string, memberType: MemberType) => ({ username, memberType, joined: Date.now() });

/**
 * Changes a group's fields (not its owner, organization or creation time). A new title is reserved and the old
 * one given back in the same transaction, on the condition that the title is still the one read.
 */
export async function updateGroup(group: Group, fields: Partial<GroupFields>): Promise<void> {
  const names: Record<string, string> = {};
  const values: Record<string, unknown> = { ":m": Math.max(Date.now(), group.modified + 1) };
  const sets = ["modified = :m"];
  for (const [key, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    names[`#${key}`] = key;
    values[`:${key}`] = Array.isArray(value) ? [...(value as string[])] : value;
    sets.push(`#${key} = :${key}`);
  }
  const retitled = fields.title !== undefined && fields.title !== group.title;
  const live = groupLive(group.groupId);
  const update = {
    ...live,
    UpdateExpression: `SET ${sets.join(", ")}`,
    ...(Object.keys(names).length > 0 ? { ExpressionAttributeNames: names } : {}),
    ExpressionAttributeValues: values,
  };
  if (!retitled || fields.title === undefined) {
    try {
      await ddb.send(new UpdateCommand(update));
    } catch (err) {
      if ((err as Error).name === "ConditionalCheckFailedException") throw new GroupGoneError();
      throw err;
    }
    return;
  }
  const title = fields.title;
  // The old title is given back only if this group holds it (a group made before titles were reserved may not).
  const moved = nameKey(title) !== nameKey(group.title) && (await titleHolder(group)) === group.groupId;
  await transact(
    [
      {
        Update: {
          ...update,
          ConditionExpression: `${live.ConditionExpression} AND #title = :was`,
          ExpressionAttributeValues: { ...values, ":was": group.title },
        },
      },
      reserveTitle(group, title),
      // The same title in another letter case keeps its reservation (made now for a group older than them).
      ...(moved ? [releaseTitle(group, group.title)] : []),
    ],
    (failed) => (failed.includes(1) ? new TitleTakenError() : new StaleGroupError()),
  );
}

/**
 * Makes a user a member (or manager) of a group: their entry, the group on their user record, and the request
 * or invitation it answers (if any) removed, all at once. The group must still exist and not be being deleted.
 */
export async function addMember(
  group: Group,
  username: string,
  memberType: MemberType,
  answers?: "application" | "invite",
): Promise<void> {
  await transact(
    [
      groupTouched(group.groupId, answers === "application" ? -1 : 0),
      {
        Put: {
          TableName: table(),
          Item: { groupId: group.groupId, entry: memberEntry(username), ...memberFields(username, memberType) },
          ConditionExpression: "attribute_not_exists(entry)",
        },
      },
      userJoins(username, group.portalId, group.groupId),
      ...(answers
        ? [
            {
              Delete: {
                TableName: table(),
                Key: {
                  groupId: group.groupId,
                  entry: answers === "application" ? applicationEntry(username) : inviteEntry(username),
                },
                ConditionExpression: "attribute_exists(entry)",
              },
            },
          ]
        : []),
      ...(answers === "invite" ? [{ Delete: { TableName: table(), Key: invitedKey(username, group.groupId) } }] : []),
    ],
    (failed) =>
      failed.includes(0)
        ? new GroupGoneError()
        : failed.includes(1)
          ? new MembershipError()
          : failed.includes(2)
            ? new TooManyGroupsError()
            : new MembershipError(),
  );
  // A join request the member had pending (added by a manager, or by an invitation) is answered by this.
  if (answers !== "application" && (await getRequest(group.groupId, "application", username))) {
    try {
      await deleteRequest(group.groupId, "application", username);
    } catch (err) {
      if (!(err instanceof RequestError || err instanceof GroupGoneError)) throw err;
    }
  }
}

/** Takes a member (never the owner) out of a group: their entry and the group on their user record. */
export async function removeMember(groupId: string, username: string): Promise<void> {
  await transact(
    [
      {
        Delete: {
          TableName: table(),
          Key: { groupId, entry: memberEntry(username) },
          ConditionExpression: "attribute_exists(entry) AND memberType <> :owner",
          ExpressionAttributeValues: { ":owner": "owner" },
        },
      },
      userLeaves(username, groupId),
    ],
    () => new MembershipError(),
  );
}

/** Makes a member a manager (`admin`) or a plain member again (never the owner). */
export async function setMemberType(groupId: string, username: string, memberType: "admin" | "member") {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: table(),
        Key: { groupId, entry: memberEntry(username) },
        UpdateExpression: "SET memberType = :t",
        ConditionExpression: "attribute_exists(entry) AND memberType <> :owner",
        ExpressionAttributeValues: { ":t": memberType, ":owner": "owner" },
      }),
    );
  } catch (err) {
    if ((err as Error).name === "ConditionalCheckFailedException") throw new MembershipError();
    throw err;
  }
}

/**
 * Gives a group another owner, a member of its organization: they become a member if they were not, and the
 * previous owner stays on as a manager.
 */
export async function reassignGroup(group: Group, to: User, alreadyMember: boolean): Promise<void> {
  const now = Math.max(Date.now(), group.modified + 1);
  await transact(
    [
      {
        Update: {
          ...groupLive(group.groupId),
          ConditionExpression: `${groupLive(group.groupId).ConditionExpression} AND #o = :was`,
          UpdateExpression: "SET #o = :o, modified = :m",
          ExpressionAttributeNames: { "#o": "owner" },
          ExpressionAttributeValues: { ":o": to.username, ":was": group.owner, ":m": now },
        },
      },
      {
        Update: {
          TableName: table(),
          Key: { groupId: group.groupId, entry: memberEntry(group.owner) },
          UpdateExpression: "SET memberType = :t",
          ConditionExpression: "attribute_exists(entry)",
          ExpressionAttributeValues: { ":t": "admin" },
        },
      },
      alreadyMember
        ? {
            Update: {
              TableName: table(),
              Key: { groupId: group.groupId, entry: memberEntry(to.username) },
              UpdateExpression: "SET memberType = :t",
              ConditionExpression: "attribute_exists(entry)",
              ExpressionAttributeValues: { ":t": "owner" },
            },
          }
        : {
            Put: {
              TableName: table(),
              Item: { groupId: group.groupId, entry: memberEntry(to.username), ...memberFields(to.username, "owner") },
              ConditionExpression: "attribute_not_exists(entry)",
            },
          },
      ...(alreadyMember ? [] : [userJoins(to.username, group.portalId, group.groupId)]),
    ],
    (failed) => (failed.includes(3) ? new TooManyGroupsError() : new GroupGoneError()),
  );
}

/**
 * Records a join request (once: a pending one stands, RequestError) or an invitation (again: the newer one
 * stands). A join request counts in the group's pending applications.
 */
export async function putRequest(
  group: Group,
  kind: "application" | "invite",
  username: string,
  memberType?: MemberType,
): Promise<void> {
  await transact(
    [
      groupTouched(group.groupId, kind === "application" ? 1 : 0),
      {
        Put: {
          TableName: table(),
          Item: {
            groupId: group.groupId,
            entry: kind === "application" ? applicationEntry(username) : inviteEntry(username),
            username,
            created: Date.now(),
            ...(memberType ? { memberType } : {}),
          },
          ...(kind === "application" ? { ConditionExpression: "attribute_not_exists(entry)" } : {}),
        },
      },
      ...(kind === "invite"
        ? [
            {
              Put: {
                TableName: table(),
                Item: { ...invitedKey(username, group.groupId), invitedTo: group.groupId, created: Date.now() },
              },
            },
          ]
        : []),
    ],
    (failed) => (failed.includes(0) ? new GroupGoneError() : new RequestError()),
  );
}

/** Removes a join request (RequestError: there is none) or an invitation. */
export async function deleteRequest(groupId: string, kind: "application" | "invite", username: string) {
  if (kind === "invite") {
    await ddb.send(
      new TransactWriteCommand({
        TransactItems: [
          { Delete: { TableName: table(), Key: { groupId, entry: inviteEntry(username) } } },
          { Delete: { TableName: table(), Key: invitedKey(username, groupId) } },
        ],
      }),
    );
    return;
  }
  await transact(
    [
      {
        Delete: {
          TableName: table(),
          Key: { groupId, entry: applicationEntry(username) },
          ConditionExpression: "attribute_exists(entry)",
        },
      },
      {
        Update: {
          TableName: table(),
          Key: { groupId, entry: GROUP },
          UpdateExpression: "ADD applications :a",
          ConditionExpression: "attribute_exists(entry)",
          ExpressionAttributeValues: { ":a": -1 },
        },
      },
    ],
    (failed) => (failed.includes(0) ? new RequestError() : new GroupGoneError()),
  );
}

/** The ids of the groups a user is invited to (each invitation's group entry is the truth). */
export async function invitationsOf(username: string): Promise<string[]> {
  return (await entries(userInvitations(username), "invite#")).map((r) => String(r.invitedTo));
}

/** Marks a group as being deleted: from now on nobody joins it and nothing is shared with it. */
export async function markDeleting(groupId: string): Promise<void> {
  await ddb.send(
    new UpdateCommand({
      TableName: table(),
      Key: { groupId, entry: GROUP },
      UpdateExpression: "SET deleting = :t",
      ConditionExpression: "attribute_exists(entry)",
      ExpressionAttributeValues: { ":t": true },
    }),
  );
}

/**
 * The last step of deleting a group, once no item is shared with it: each member leaves (their entry and the
 * group on their record, one transaction each), then what is left of the partition goes, the group record last.
 */
export async function dropGroup(groupId: string): Promise<void> {
  for (const m of await listMembers(groupId)) {
    await transact(
      [
        { Delete: { TableName: table(), Key: { groupId, entry: memberEntry(m.username) } } },
        userLeaves(m.username, groupId),
      ],
      () => new MembershipError(),
    );
  }
  const rest = (await entries(groupId, "")).filter((r) => r.entry !== GROUP);
  for (const r of rest) {
    if (String(r.entry).startsWith("invite#")) await deleteRequest(groupId, "invite", String(r.username));
    else await ddb.send(new DeleteCommand({ TableName: table(), Key: { groupId, entry: r.entry } }));
  }
  const group = await getGroup(groupId);
  if (group) {
    // The title goes with the group (and the group record last, so a delete that stopped half-way is found again).
    try {
      await ddb.send(new DeleteCommand(releaseTitle(group, group.title).Delete));
    } catch (err) {
      if ((err as Error).name !== "ConditionalCheckFailedException") throw err;
    }
  }
  await ddb.send(new DeleteCommand({ TableName: table(), Key: { groupId, entry: GROUP } }));
}

/** A member's groups, read again (their record as of now), for pages that list them. */
export async function groupsOf(user: User): Promise<Group[]> {
  return [...(await getGroups([...user.groups])).values()].filter((g) => !g.deleting);
}
