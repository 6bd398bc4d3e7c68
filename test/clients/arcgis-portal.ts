// Runs calls of the real @esri/arcgis-rest-portal client, signed in with ArcGISIdentityManager, and prints each
// answer (or error) as JSON. Input on stdin: {portal, username, password, calls: [{fn, options}]}; each call's
// options get the session as `authentication` (isServiceNameAvailable takes [name, type]). Needs
// NODE_EXTRA_CA_CERTS for the local certificate.
import {
  addGroupUsers,
  addItemRelationship,
  addItemResource,
  getItemResource,
  getItemResources,
  getRelatedItems,
  moveItem,
  removeFolder,
  removeItemRelationship,
  removeItemResource,
  updateItemResource,
  addItemPart,
  cancelItemUpload,
  commitItemUpload,
  createFolder,
  createGroup,
  createItem,
  createItemInFolder,
  getItemStatus,
  exportItem,
  getGroup,
  getGroupContent,
  getGroupUsers,
  getItemData,
  getItemGroups,
  getItemParts,
  getItem,
  joinGroup,
  leaveGroup,
  removeGroup,
  removeGroupUsers,
  searchGroups,
  shareItemWithGroup,
  unshareItemWithGroup,
  updateGroup,
  getUser,
  getUserContent,
  getUserMembership,
  isServiceNameAvailable,
  protectItem,
  reassignItem,
  removeItem,
  unprotectItem,
  searchItems,
  setItemAccess,
  updateItem,
} from "@esri/arcgis-rest-portal";
import { runCalls, signedIn, type Call } from "./signed-in.ts";

const { input, session: authentication } = await signedIn<{ calls: Call[] }>();

/** Every helper the tests drive, called as its documentation shows. */
const CALLS: Record<string, (o: Record<string, unknown>) => Promise<unknown>> = {
  getItem: (o) => getItem(String(o.id), { authentication }),
  reassignItem: (o) =>
    reassignItem({
      id: String(o.id),
      currentOwner: String(o.currentOwner),
      targetUsername: String(o.targetUsername),
      ...(o.targetFolderName !== undefined ? { targetFolderName: String(o.targetFolderName) } : {}),
      authentication,
    }),
  createItem: (o) => createItem({ item: o.item as { title: string; type: string }, authentication }),
  // A file as a browser app gives one (a File with its name), its bytes passed here as base64.
  createItemWithFile: (o) =>
    createItem({
      item: o.item as { title: string; type: string },
      file: new File([Buffer.from(String(o.base64), "base64")], String(o.name)),
      authentication,
    }),
  // The same into a folder (`folderId`: …/content/users/<u>/<folderId>/addItem).
  createItemInFolderWithFile: (o) =>
    createItemInFolder({
      item: o.item as { title: string; type: string },
      folderId: String(o.folderId),
      file: new File([Buffer.from(String(o.base64), "base64")], String(o.name)),
      authentication,
    }),
  // A large file as REST JS uploads one: the item first (multipart, no file), then its parts, then the commit.
  createItemMultipart: (o) =>
    createItemInFolder({
      item: o.item as { title: string; type: string },
      multipart: true,
      filename: String(o.filename),
      ...(o.folderId ? { folderId: String(o.folderId) } : {}),
      authentication,
    }),
  getItemParts: (o) => getItemParts({ id: String(o.id), authentication }),
  cancelItemUpload: (o) => cancelItemUpload({ id: String(o.id), authentication }),
  createFolder: (o) => createFolder({ title: String(o.title), authentication }),
  addItemPart: (o) =>
    addItemPart({
      id: String(o.id),
      partNum: Number(o.partNum),
      file: new File([Buffer.from(String(o.base64), "base64")], String(o.name ?? "part")),
      authentication,
    }),
  commitItemUpload: (o) =>
    commitItemUpload({ id: String(o.id), item: (o.item ?? {}) as { title: string; type: string }, authentication }),
  getItemStatus: (o) => getItemStatus({ id: String(o.id), authentication }),
  getItemData: (o) => getItemData(String(o.id), { authentication }),
  getUserContent: (o) => getUserContent({ ...o, authentication }),
  searchItems: (o) => searchItems({ ...(o as { q: string }), authentication }),
  // `params` as an app adds them: REST JS drops an `item.thumbnailUrl` (it takes it for the one it decorates items with),
  // so a thumbnail's address goes there.
  updateItem: (o) =>
    updateItem({
      item: o.item as { id: string },
      ...(o.params ? { params: o.params as Record<string, unknown> } : {}),
      authentication,
    }),
  setItemAccess: (o) =>
    setItemAccess({ ...(o as { id: string; access: "private" | "org" | "public" }), authentication }),
  removeItem: (o) => removeItem({ ...(o as { id: string }), authentication }),
  isServiceNameAvailable: (o) => isServiceNameAvailable(String(o.name), String(o.type) as never, authentication),
  getUser: (o) => getUser({ ...o, authentication }),
  createGroup: (o) => createGroup({ group: o.group as never, authentication }),
  getGroup: (o) => getGroup(String(o.id), { authentication }),
  searchGroups: (o) => searchGroups({ ...(o as { q: string }), authentication }),
  updateGroup: (o) => updateGroup({ group: o.group as never, authentication }),
  joinGroup: (o) => joinGroup({ id: String(o.id), authentication }),
  leaveGroup: (o) => leaveGroup({ id: String(o.id), authentication }),
  addGroupUsers: (o) => addGroupUsers({ ...(o as { id: string }), authentication }),
  removeGroupUsers: (o) => removeGroupUsers({ ...(o as { id: string; users: string[] }), authentication }),
  getGroupUsers: (o) => getGroupUsers(String(o.id), { authentication }),
  // It reads the group's userMembership (and answers "none" for any error).
  getUserMembership: (o) => getUserMembership({ id: "", groupId: String(o.groupId), authentication }),
  getGroupContent: (o) => getGroupContent(String(o.id), { authentication, paging: { start: 1, num: 100 } }),
  getItemGroups: (o) => getItemGroups(String(o.id), { authentication }),
  shareItemWithGroup: (o) => shareItemWithGroup({ ...(o as { id: string; groupId: string }), authentication }),
  unshareItemWithGroup: (o) => unshareItemWithGroup({ ...(o as { id: string; groupId: string }), authentication }),
  removeGroup: (o) => removeGroup({ id: String(o.id), authentication }),
  protectItem: (o) => protectItem({ id: String(o.id), authentication }),
  unprotectItem: (o) => unprotectItem({ id: String(o.id), authentication }),
  exportItem: (o) => exportItem({ ...(o as { id: string; exportFormat: "CSV" }), authentication }),
  // An item's resources: a file (its bytes as base64) or text, under a prefix.
  addItemResource: (o) =>
    addItemResource({
      id: String(o.id),
      name: String(o.name),
      ...(o.prefix ? { prefix: String(o.prefix) } : {}),
      ...(o.base64 !== undefined
        ? { resource: new File([Buffer.from(String(o.base64), "base64")], String(o.name)) }
        : { content: String(o.content) }),
      ...(o.private ? { private: true } : {}),
      authentication,
    }),
  updateItemResource: (o) =>
    updateItemResource({ id: String(o.id), name: String(o.name), content: String(o.content), authentication }),
  getItemResources: (o) => getItemResources(String(o.id), { authentication }),
  getItemResource: (o) =>
    getItemResource(String(o.id), { fileName: String(o.fileName), readAs: "text", authentication }),
  removeItemResource: (o) =>
    removeItemResource({
      id: String(o.id),
      ...(o.resource ? { resource: String(o.resource) } : {}),
      ...(o.deleteAll ? { deleteAll: true } : {}),
      authentication,
    }),
  moveItem: (o) =>
    moveItem({ itemId: String(o.itemId), ...(o.folderId ? { folderId: String(o.folderId) } : {}), authentication }),
  removeFolder: (o) => removeFolder({ folderId: String(o.folderId), authentication }),
  addItemRelationship: (o) => addItemRelationship({ ...(o as object), authentication } as never),
  removeItemRelationship: (o) => removeItemRelationship({ ...(o as object), authentication } as never),
  getRelatedItems: (o) => getRelatedItems({ ...(o as object), authentication } as never),
  // A thumbnail uploaded with an update, as a browser app sends one (a File).
  updateItemThumbnail: (o) =>
    updateItem({
      item: { id: String(o.id) },
      params: { thumbnail: new File([Buffer.from(String(o.base64), "base64")], String(o.name)) },
      authentication,
    }),
};

const results = await runCalls(input.calls, CALLS);
process.stdout.write(`${JSON.stringify(results)}\n`);
