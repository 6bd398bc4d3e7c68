// POST …/content/users/<username>/addItem: adds an item (the function also serves the hosted-layer operations at
// their own paths: analyze, publish, export, an item's status, createService, the hosting server's admin wire
// of hosted services, and a hosted layer's append and edits, shared/hosted/operations.ts). Two kinds are added here: an uploaded file (`file`, sent
// as multipart/form-data: a CSV, GeoJSON, zipped shapefile or GeoPackage to publish, or a document), kept as sent
// and served back as an attachment (shared/uploads.ts); and a data store's registration (type `Data Store`, its
// JSON in `text`), as ArcGIS clients register a database, a bucket or a folder: the item and the store are made at
// once, a database's password moved to the store's secret (the item's data shows it redacted). Nothing is
// connected to: `validate` says whether the store can be read.
import { badRequest, forbidden } from "#shared/errors.ts";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { renderValue, resultPage } from "#shared/http/html.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import { familyHandler, type FamilyOperation, routesHandler } from "#shared/http/router.ts";
import {
  addFeaturesOperation,
  adminServiceOperation,
  analyzeOperation,
  applyEditsOperation,
  deleteFeaturesOperation,
  serviceApplyEditsOperation,
  updateFeaturesOperation,
  appendOperation,
  createServiceOperation,
  exportOperation,
  publishOperation,
  statusOperation,
} from "#shared/hosted/operations.ts";
import { CONTENT_FILES, USER_CONTENT_OPERATIONS } from "#shared/system.ts";
import { itemPageHref } from "#shared/item-pages.ts";
import { readDataStoreJson, registerDataStore } from "#shared/datastore-registration.ts";
import { DESCRIBE_PRIVILEGE, registering, tagsOf } from "#shared/publishing.ts";
import { DATA_STORE_TYPE } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";
import { addFileItem, type UploadDescription } from "#shared/uploads.ts";
import {
  addPartialItem,
  addPartOperation,
  cancelOperation,
  checkFolder,
  commitOperation,
  partsOperation,
} from "#shared/upload-parts.ts";
import { createFolderOperation, folderContentOperation, namedFolder } from "#shared/user-content.ts";
import { FOLDER_ID } from "#shared/stores/folders.ts";
import { visibleItem } from "#shared/items.ts";
import { boolParam } from "#shared/http/params.ts";

const FAILED = "Unable to add item.";
// eslint-disable-next-line no-control-regex -- control characters are exactly what this refuses
const CONTROL = /[\u0000-\u001f\u007f]/;

/** The registered store's page and what comes next for it: validate it, add it to a server, describe it. */
function registeredPage(data: object, req: RestRequest): string {
  const { id } = data as { id?: string };
  if (req.params.file("file")) {
    return resultPage(
      "Item added",
      `Added “${req.params.get("title") || req.params.file("file")?.filename || ""}”.`,
      [
        [itemPageHref(id ?? ""), "The item"],
        [`${PORTAL_ROOT}?f=html`, "Directory"],
      ],
      renderValue(data),
    );
  }
  const stores = `${PORTAL_ROOT}/portals/self/datastores`;
  const q = `datastoreId=${encodeURIComponent(id ?? "")}&f=html`;
  return resultPage(
    "Data store registered",
    `Registered “${req.params.get("title") ?? ""}”. Validate it, then add it to a server to describe and publish from it.`,
    [
      [itemPageHref(id ?? ""), "The data store"],
      [`${stores}/validate?${q}`, "Validate it"],
      [`${stores}/addToServer?${q}`, "Add it to a server"],
      [`${PORTAL_ROOT}?f=html`, "Directory"],
    ],
    renderValue(data),
  );
}

const CREATE_ITEM_PRIVILEGE = "portal:user:createItem";

/** Whose content the item joins: administrators may add to another member's content; anyone else to their own. */
async function ownerFor(req: RestRequest, caller: string, role: string, portalId: string): Promise<string> {
  const owner = req.pathParameters.username ?? "";
  if (owner === caller) return owner;
  if (role !== "org_admin") throw forbidden();
  const member = await getUser(owner);
  if (!member || member.portalId !== portalId)
    throw badRequest(FAILED, [`User '${owner.slice(0, 128)}' does not exist.`]);
  return owner;
}

const addItem = {
  op: {
    name: "Add Item",
    postOnly: true,
    files: ["file"],
    html: registeredPage,
    // The data store's JSON may hold a password: never in a URL, which logs and histories keep.
    bodyOnly: ["text"],
    form: [
      { name: "type", label: "Type", options: [DATA_STORE_TYPE], required: true },
      { name: "title", label: "Title", required: true },
      { name: "tags", label: "Tags (comma-separated)" },
      {
        name: "text",
        label: "Data store JSON",
        type: "textarea",
        required: true,
        // An example under the field, laid out on lines so it wraps with the page rather than widening it.
        hint: `For example:\n${JSON.stringify(
          {
            type: "egdb",
            path: "/enterpriseDatabases/parcels",
            info: {
              isManaged: false,
              dataStoreConnectionType: "shared",
              connectionString: "postgresql://reader:…@db.example.com:5432/gis?sslmode=require",
            },
          },
          null,
          2,
        )}`,
      },
    ],
  },
  compute: async (req: RestRequest) => {
    const identity = requireUser(req);
    const { user, portal } = identity;
    const file = req.params.file("file");
    const flags: string[] = [];
    const multipart = boolParam(req.params.caseless("multipart"), "multipart", flags) ?? false;
    // async=true: ArcGIS answers before the file is kept and the status says when it is; here the file is kept
    // within the request, so the status already says `completed` when the answer arrives.
    boolParam(req.params.caseless("async"), "async", flags);
    if (flags.length > 0) throw badRequest(FAILED, flags);
    if (file && multipart)
      throw badRequest(FAILED, ["With multipart=true the file comes in parts (addPart): send no 'file' here."]);
    if (file || multipart) {
      if (user.role !== "org_admin" && !identity.privileges.includes(CREATE_ITEM_PRIVILEGE)) throw forbidden();
      const title = (req.params.get("title") ?? "").trim();
      if (title.length > 250 || CONTROL.test(title))
        throw badRequest(FAILED, ["'title' must have at most 250 characters and no control characters."]);
      const owner = await ownerFor(req, user.username, user.role, portal.portalId);
      const folder = await namedFolder(req, owner, FAILED);
      const description: UploadDescription = {
        portalId: portal.portalId,
        owner,
        type: req.params.get("type"),
        title,
        tags: tagsOf(req.params.get("tags")),
        description: (req.params.get("description") ?? "").slice(0, 64_000),
        snippet: (req.params.get("snippet") ?? "").slice(0, 2048),
        filename: req.params.get("filename"),
        ...(folder ? { folder: folder.id } : {}),
      };
      const item = file ? await addFileItem(file, description, FAILED) : await addPartialItem(description, FAILED);
      return { success: true, id: item.itemId, folder: folder?.id ?? null };
    }
    if (user.role !== "org_admin" && !identity.privileges.includes(DESCRIBE_PRIVILEGE)) throw forbidden();
    const problems: string[] = [];
    const type = req.params.get("type") ?? "";
    if (type !== DATA_STORE_TYPE)
      problems.push(`Only items of type '${DATA_STORE_TYPE}' can be added here (got '${type.slice(0, 64)}').`);
    const title = (req.params.get("title") ?? "").trim();
    if (title === "" || title.length > 250 || CONTROL.test(title))
      problems.push("'title' must have 1–250 characters and no control characters.");
    const text = req.params.get("text") ?? "";
    if (text.trim() === "") problems.push("'text' (the data store's JSON) must be specified.");
    if (problems.length > 0) throw badRequest(FAILED, problems);
    const owner = await ownerFor(req, user.username, user.role, portal.portalId);
    if (req.pathParameters.folderId !== undefined)
      throw badRequest(FAILED, ["A data store is registered in its owner's root folder: add it without a folder."]);
    const store = await registering(FAILED, async () => {
      const spec = await readDataStoreJson(text);
      // A folder of the serving machine is the operator's to give: only administrators register one.
      if (spec.kind === "folder" && user.role !== "org_admin")
        throw forbidden(["Only administrators register a folder of the machine that serves mapgate."]);
      return registerDataStore(portal.portalId, {
        title,
        owner,
        kind: spec.kind,
        name: spec.name,
        serverIds: [],
        datasets: [],
        tags: tagsOf(req.params.get("tags")),
        ...(spec.location ? { location: spec.location } : {}),
        ...(spec.database ? { database: spec.database } : {}),
      });
    });
    return { success: true, id: store.datastoreId, folder: null };
  },
} satisfies FamilyOperation;

/** An item operation addressed in a folder: the item must be in it (checkFolder), then the operation runs. */
const inFolder = (operation: FamilyOperation): FamilyOperation => ({
  op: operation.op,
  compute: async (req) => {
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    checkFolder(req, item);
    return operation.compute(req);
  },
});

/** Under a member's content, what no route of its own serves (CONTENT_FILES.userContent). */
const USER_CONTENT: Readonly<Record<(typeof USER_CONTENT_OPERATIONS)[number], FamilyOperation>> = {
  addItem,
  publish: publishOperation,
  export: exportOperation,
  createService: createServiceOperation,
  "items/{itemId}/status": statusOperation,
  "items/{itemId}/addPart": addPartOperation,
  "items/{itemId}/commit": commitOperation,
  createFolder: createFolderOperation,
  "{folderId}": folderContentOperation,
  "{folderId}/addItem": addItem,
  "{folderId}/createService": createServiceOperation,
  "items/{itemId}/cancel": cancelOperation,
  "items/{itemId}/parts": partsOperation,
  "{folderId}/items/{itemId}/addPart": addPartOperation,
  "{folderId}/items/{itemId}/commit": commitOperation,
  "{folderId}/items/{itemId}/status": inFolder(statusOperation),
  "{folderId}/items/{itemId}/cancel": cancelOperation,
  "{folderId}/items/{itemId}/parts": partsOperation,
};

export const handler = routesHandler({
  [CONTENT_FILES.analyze]: analyzeOperation,
  [CONTENT_FILES.admin]: adminServiceOperation,
  [CONTENT_FILES.append]: appendOperation,
  [CONTENT_FILES.applyEdits]: applyEditsOperation,
  [CONTENT_FILES.addFeatures]: addFeaturesOperation,
  [CONTENT_FILES.updateFeatures]: updateFeaturesOperation,
  [CONTENT_FILES.deleteFeatures]: deleteFeaturesOperation,
  [CONTENT_FILES.serviceApplyEdits]: serviceApplyEditsOperation,
  [CONTENT_FILES.userContent]: familyHandler({
    greedy: "path",
    notFound: "Not Found",
    shapes: { folderId: FOLDER_ID, itemId: /^[0-9a-f]{32}$/ },
    operations: USER_CONTENT,
  }),
});
