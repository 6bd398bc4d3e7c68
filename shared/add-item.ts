// addItem (…/content/users/<username>/[<folder>/]addItem): an uploaded file (`file`, sent as multipart/form-data: a
// CSV, GeoJSON, zipped shapefile or GeoPackage to publish, or a document), kept as sent and served back as an
// attachment (shared/uploads.ts), or one announced to come in parts (`multipart=true`, shared/upload-parts.ts); an
// item of text or a URL (a web map, an app's configuration, a reference: shared/item-content.ts); and
// a data store's registration (type `Data Store`, its JSON in `text`), as ArcGIS clients register a database, a
// bucket or a folder: the item and the store are made at once, a database's password moved to the store's secret
// (the item's data shows it redacted). Nothing is connected to: `validate` says whether the store can be read.
import { badRequest, forbidden } from "#shared/errors.ts";
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import { renderValue, resultPage } from "#shared/http/html.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { readDataStoreJson, registerDataStore } from "#shared/datastore-registration.ts";
import { DESCRIBE_PRIVILEGE, readTags, registering, tagsOf } from "#shared/publishing.ts";
import { addTextItem, checkTextItemType } from "#shared/item-content.ts";
import { readItemFields } from "#shared/item-types.ts";
import { DATA_STORE_TYPE } from "#shared/stores/items.ts";
import { getUser } from "#shared/stores/users.ts";
import { addFileItem, type UploadDescription } from "#shared/uploads.ts";
import { addPartialItem } from "#shared/upload-parts.ts";
import { namedFolder } from "#shared/user-content.ts";
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

/**
 * An item of text (a web map, an app's configuration) or of a URL (a service or document elsewhere), or both, as
 * ArcGIS clients add them (the SDK's `WebMap.saveAs`, ArcGIS REST JS's `createItem`).
 */
async function addTextOrUrlItem(req: RestRequest, identity: ReturnType<typeof requireUser>) {
  const { user, portal } = identity;
  if (user.role !== "org_admin" && !identity.privileges.includes(CREATE_ITEM_PRIVILEGE)) throw forbidden();
  const type = req.params.get("type") ?? "";
  checkTextItemType(type, FAILED);
  const problems: string[] = [];
  const title = (req.params.get("title") ?? "").trim();
  if (title === "" || title.length > 250 || CONTROL.test(title))
    problems.push("'title' must have 1–250 characters and no control characters.");
  const tags = readTags(req.params.get("tags") ?? "", problems);
  const snippet = req.params.get("snippet") ?? "";
  if (snippet.length > 2048) problems.push("'snippet' may have at most 2048 characters.");
  const description = req.params.get("description") ?? "";
  if (description.length > 65536) problems.push("'description' may have at most 65536 characters.");
  const fields = readItemFields(req.params, problems);
  const text = req.params.get("text");
  const url = req.params.get("url");
  if ((text === undefined || text === "") && (url === undefined || url === ""))
    problems.push(`An item of type '${type}' needs its 'text' or its 'url' (or a 'file' of a file's type).`);
  if (problems.length > 0) throw badRequest(FAILED, problems);
  const owner = await ownerFor(req, user.username, user.role, portal.portalId);
  const folder = await namedFolder(req, owner, FAILED);
  const item = await addTextItem(
    {
      portalId: portal.portalId,
      owner,
      type,
      title,
      tags,
      description,
      snippet,
      ...(folder ? { folder: folder.id } : {}),
      text,
      fields,
    },
    FAILED,
  );
  return { success: true, id: item.itemId, folder: folder?.id ?? null };
}

/** addItem: an uploaded file (or one to come in parts), an item of text or a URL, or a data store's registration. */
export const addItemOperation = {
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
    const type = req.params.get("type") ?? "";
    if (type !== DATA_STORE_TYPE) return addTextOrUrlItem(req, identity);
    if (user.role !== "org_admin" && !identity.privileges.includes(DESCRIBE_PRIVILEGE)) throw forbidden();
    const problems: string[] = [];
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
