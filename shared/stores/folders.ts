// A member's folders of content (createFolder; addItem and createService into a folder; the folder's listing): one
// record per member in the items table, under a key no item id can take (item ids are 32 hex digits), holding the
// member's folders by id. One record, so a title stays unique to its member under concurrent creations (a
// conditional write on the record's version), and reading a member's folders is one read. It has no `createdKey`,
// so no index of the items table lists it.
import { GetCommand, PutCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { itemId as newFolderId } from "#shared/ids.ts";
import { ddb, isConditionFailure } from "#shared/stores/dynamo.ts";

export interface Folder {
  readonly id: string;
  readonly title: string;
  readonly username: string;
  readonly created: number;
}

/** ArcGIS limits a folder's title to 250 characters. */
export const MAX_FOLDER_TITLE = 250;
/** Folders per member: the record stays far below DynamoDB's 400 KB item (each folder takes at most ~300 bytes). */
export const MAX_FOLDERS = 1000;

export const FOLDER_ID = /^[0-9a-f]{32}$/;

/** The record of a member's folders (deleted with the member). */
export const foldersKey = (portalId: string, username: string) => ({ itemId: `folders#${portalId}#${username}` });
const key = foldersKey;

interface FoldersRecord {
  readonly version: number;
  readonly folders: readonly Folder[];
}

async function read(portalId: string, username: string): Promise<FoldersRecord> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("items"), Key: key(portalId, username), ConsistentRead: true }),
  );
  if (!Item) return { version: 0, folders: [] };
  const held = (Item.folders ?? {}) as Record<string, { title?: unknown; created?: unknown }>;
  const folders = Object.entries(held).map(([id, f]) => ({
    id,
    title: String(f.title),
    username,
    created: Number(f.created),
  }));
  return { version: Number(Item.version ?? 0), folders: folders.sort((a, b) => a.created - b.created) };
}

/** A member's folders, oldest first. */
export async function listFolders(portalId: string, username: string): Promise<readonly Folder[]> {
  return (await read(portalId, username)).folders;
}

/** One of a member's folders by id; undefined when the member has no such folder. */
export async function getFolder(portalId: string, username: string, id: string): Promise<Folder | undefined> {
  if (!FOLDER_ID.test(id)) return undefined;
  return (await read(portalId, username)).folders.find((f) => f.id === id);
}

/** The member has a folder of that title already (titles compare case-insensitively), or as many as they may. */
export class FolderRefusedError extends Error {
  readonly reason: "title" | "count";
  constructor(reason: "title" | "count") {
    super(reason === "title" ? "folder title taken" : "too many folders");
    this.name = "FolderRefusedError";
    this.reason = reason;
  }
}

/** Makes a folder for a member; its title must be unique to them (as ArcGIS, whatever the letters' case). */
export async function createFolder(portalId: string, username: string, title: string): Promise<Folder> {
  for (let attempt = 0; ; attempt++) {
    const current = await read(portalId, username);
    const lower = title.toLowerCase();
    if (current.folders.some((f) => f.title.toLowerCase() === lower)) throw new FolderRefusedError("title");
    if (current.folders.length >= MAX_FOLDERS) throw new FolderRefusedError("count");
    const folder: Folder = { id: newFolderId(), title, username, created: Date.now() };
    const folders = Object.fromEntries(
      [...current.folders, folder].map((f) => [f.id, { title: f.title, created: f.created }]),
    );
    try {
      await ddb.send(
        new PutCommand({
          TableName: tableName("items"),
          Item: { ...key(portalId, username), version: current.version + 1, folders },
          // The record as read: a folder made meanwhile is seen on the next attempt, its title checked again.
          ...(current.version === 0
            ? { ConditionExpression: "attribute_not_exists(itemId)" }
            : {
                ConditionExpression: "#v = :v",
                ExpressionAttributeNames: { "#v": "version" },
                ExpressionAttributeValues: { ":v": current.version },
              }),
        }),
      );
      return folder;
    } catch (err) {
      if (!isConditionFailure(err) || attempt >= 8) throw err;
    }
  }
}

/** Removes one of a member's folders (its items deleted or moved first by its caller); false when it is not there. */
export async function deleteFolder(portalId: string, username: string, id: string): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    const current = await read(portalId, username);
    if (!current.folders.some((f) => f.id === id)) return false;
    const folders = Object.fromEntries(
      current.folders.filter((f) => f.id !== id).map((f) => [f.id, { title: f.title, created: f.created }]),
    );
    try {
      await ddb.send(
        new PutCommand({
          TableName: tableName("items"),
          Item: { ...key(portalId, username), version: current.version + 1, folders },
          ConditionExpression: "#v = :v",
          ExpressionAttributeNames: { "#v": "version" },
          ExpressionAttributeValues: { ":v": current.version },
        }),
      );
      return true;
    } catch (err) {
      if (!isConditionFailure(err) || attempt >= 8) throw err;
    }
  }
}
