// Related items, as ArcGIS relates them: `content/users/<u>/addRelationship` and `deleteRelationship` link an origin
// item to a destination item with a type (a map uses a service, a service was published from a file…), and
// `content/items/<id>/relatedItems` answers the items at the other end, forward (from origin to destination) or
// reverse, only those the caller may see. A hosted service published from a file is related to it (Service2Data)
// from the moment it is published: its item records its source.
import { visibleTo } from "#shared/catalog.ts";
import { badRequest, forbidden } from "#shared/errors.ts";
import { type RestRequest, requireUser } from "#shared/http/pipeline.ts";
import type { FamilyOperation } from "#shared/http/router.ts";
import { canManage, changing, itemView, visibleItem } from "#shared/items.ts";
import {
  changeRelationship,
  DATA_STORE_TYPE,
  getItems,
  type Item,
  ITEM_TYPES,
  MAX_RELATIONSHIPS,
  queryItems,
  RelationshipsFullError,
} from "#shared/stores/items.ts";

const SERVICE_TYPES: readonly string[] = Object.values(ITEM_TYPES);
const isService = (item: Item) => item.service !== undefined || SERVICE_TYPES.includes(item.type);
/** Data a service may be published from: an uploaded file (or one in parts), or a data store. */
const isData = (item: Item) => item.file !== undefined || item.upload !== undefined || item.type === DATA_STORE_TYPE;

/** The relationship types mapgate keeps, each with the items it may link (ArcGIS's rules of the type). */
const RELATIONSHIP_TYPES: Readonly<
  Record<
    string,
    { readonly origin: (i: Item) => boolean; readonly destination: (i: Item) => boolean; readonly rule: string }
  >
> = {
  Map2Service: {
    origin: (i) => i.type === "Web Map" || i.type === "Web Scene",
    destination: isService,
    rule: "from a web map or web scene to a service",
  },
  Service2Data: { origin: isService, destination: isData, rule: "from a service to the file or data store it serves" },
  Service2Service: { origin: isService, destination: isService, rule: "from a service to another service" },
  WMA2Code: {
    origin: (i) => i.type === "Web Mapping Application",
    destination: (i) => i.type === "Code Attachment",
    rule: "from a web mapping application to its code attachment",
  },
  Map2FeatureCollection: {
    origin: (i) => i.type === "Web Map",
    destination: (i) => i.type === "Feature Collection",
    rule: "from a web map to a feature collection",
  },
};
const TYPE_NAMES = Object.keys(RELATIONSHIP_TYPES);

function relationshipType(raw: string | undefined, problems: string[]): string | undefined {
  const type = (raw ?? "").trim();
  if (type === "") problems.push(`'relationshipType' must be specified: one of ${TYPE_NAMES.join(", ")}.`);
  else if (!(type in RELATIONSHIP_TYPES))
    problems.push(`'${type.slice(0, 64)}' is not a relationship type mapgate keeps: ${TYPE_NAMES.join(", ")}.`);
  else return type;
  return undefined;
}

const ITEM_ID = /^[0-9a-f]{32}$/;

/** addRelationship and deleteRelationship: the caller may change the origin item and sees the destination. */
const relating = (remove: boolean): FamilyOperation => {
  const what = remove ? "Unable to delete relationship." : "Unable to add relationship.";
  return {
    op: { name: remove ? "Delete Relationship" : "Add Relationship", postOnly: true },
    compute: async (req) => {
      const { user } = requireUser(req);
      const named = req.pathParameters.username ?? "";
      if (named !== user.username && user.role !== "org_admin") throw forbidden();
      const problems: string[] = [];
      const ids = (["originItemId", "destinationItemId"] as const).map((p) => {
        const id = (req.params.get(p) ?? "").trim();
        if (!ITEM_ID.test(id)) problems.push(`'${p}' must be an item id (32 hexadecimal digits).`);
        return id;
      });
      // ArcGIS's REST JS sends relationshipType; the documentation names relationshipTypes too.
      const type = relationshipType(
        req.params.get("relationshipType") ?? req.params.get("relationshipTypes"),
        problems,
      );
      if (ids[0] !== "" && ids[0] === ids[1]) problems.push("An item is not related to itself.");
      if (problems.length > 0 || type === undefined) throw badRequest(what, problems);
      const origin = await visibleItem(req.identity, ids[0]);
      const destination = await visibleItem(req.identity, ids[1]);
      if (!canManage(req.identity, origin))
        throw forbidden(["Only the origin item's owner and administrators relate it."]);
      const rules = RELATIONSHIP_TYPES[type];
      if (!remove && rules && !(rules.origin(origin) && rules.destination(destination)))
        throw badRequest(what, [
          `${type} relates items ${rules.rule}, not a '${origin.type}' item to a '${destination.type}' item.`,
        ]);
      const value = `${type}:${destination.itemId}`;
      if (remove && !(origin.related ?? []).includes(value))
        throw badRequest(what, [
          `The items have no ${type} relationship from ${origin.itemId} to ${destination.itemId}.`,
        ]);
      try {
        await changing(origin, () => changeRelationship(origin, destination, type, remove));
      } catch (err) {
        if (err instanceof RelationshipsFullError)
          throw badRequest(what, [`An item may have at most ${MAX_RELATIONSHIPS} relationships each way.`]);
        throw err;
      }
      return { success: true };
    },
  };
};

export const addRelationshipOperation = relating(false);
export const deleteRelationshipOperation = relating(true);

/** Hosted services published from a file (their items name it as their source), among its owner's items. */
async function publishedFrom(source: Item): Promise<string[]> {
  const out: string[] = [];
  let next: Record<string, unknown> | undefined;
  do {
    const page = await queryItems("byOwner", source.owner, 500, next);
    for (const i of page.items) if (i.sourceItemId === source.itemId) out.push(i.itemId);
    next = page.next;
  } while (next);
  return out;
}

/** GET content/items/<id>/relatedItems: `relationshipType` (or several, comma-separated), `direction`. */
export const relatedItemsOperation: FamilyOperation = {
  op: { name: "Related Items" },
  compute: async (req: RestRequest) => {
    const what = "Unable to get related items.";
    const problems: string[] = [];
    const raw = req.params.get("relationshipType") ?? req.params.get("relationshipTypes") ?? "";
    const types = raw.split(",").flatMap((t) => {
      const type = relationshipType(t, problems);
      return type === undefined ? [] : [type];
    });
    const direction = (req.params.get("direction") ?? "forward").toLowerCase();
    if (direction !== "forward" && direction !== "reverse")
      problems.push("'direction' must be 'forward' or 'reverse'.");
    if (problems.length > 0) throw badRequest(what, problems);
    const item = await visibleItem(req.identity, req.pathParameters.itemId);
    const forward = direction === "forward";
    const ids: string[] = [];
    for (const entry of (forward ? item.related : item.relatedFrom) ?? []) {
      const at = entry.indexOf(":");
      if (types.includes(entry.slice(0, at))) ids.push(entry.slice(at + 1));
    }
    // A hosted service and the file it was published from, as its item records it.
    if (types.includes("Service2Data")) {
      if (forward && item.sourceItemId) ids.push(item.sourceItemId);
      if (!forward && isData(item)) ids.push(...(await publishedFrom(item)));
    }
    const found = await getItems([...new Set(ids)].slice(0, 2 * MAX_RELATIONSHIPS));
    const related = [...found.values()]
      .filter((i) => visibleTo(req.identity, i))
      .sort((a, b) => b.created - a.created)
      .map((i) => itemView(i, req.identity, req.httpsOrigin));
    return { total: related.length, relatedItems: related };
  },
};
