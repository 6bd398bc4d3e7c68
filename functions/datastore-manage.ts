// POST …/portals/<self | id>/datastores/<operation>: what the owner of a data store registered through the
// portal does with it, one Lambda for the six operations (a function costs the stack eight resources, and
// CloudFormation holds 500), declared in the `{name}` templates of its route (shared/system.ts); the operations
// are in shared/datastore-operations.ts. The route is `datastores/{operation+}`: describe, publish, publishLayers
// and getLayers have routes of their own, which API Gateway prefers to this one.
import { itemPageHref, PORTAL_ROOT } from "#shared/urls.ts";
import {
  addToServer,
  deleteLayers,
  getServers,
  refreshServer,
  removeFromServer,
  validate,
} from "#shared/datastore-operations.ts";
import { renderValue, resultPage } from "#shared/http/html.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { familyHandler } from "#shared/http/router.ts";

/** What validating found, in words, and where to go on: the store's page and what it can do next. */
function validatedPage(data: object, req: RestRequest): string {
  const { status } = data as { status?: string };
  const id = req.params.get("datastoreId") ?? "";
  const stores = `${PORTAL_ROOT}/portals/${encodeURIComponent(req.pathParameters.portalId ?? "self")}/datastores`;
  const q = `datastoreId=${encodeURIComponent(id)}&f=html`;
  const links: [string, string][] = id
    ? [
        [itemPageHref(id), "The data store"],
        ...(status === "success" ? ([[`${stores}/addToServer?${q}`, "Add it to a server"]] as [string, string][]) : []),
      ]
    : [
        [
          `${PORTAL_ROOT}/content/users/${encodeURIComponent(userOf(req))}/addItem?type=Data%20Store&f=html`,
          "Register a data store",
        ],
      ];
  return resultPage(
    "Validate Data Store",
    status === "success" ? "The data store can be read: it is valid." : `The data store is not valid: ${status ?? ""}`,
    [...links, [`${PORTAL_ROOT}?f=html`, "Directory"]],
    renderValue(data),
  );
}

const userOf = (req: RestRequest) => (req.identity.kind === "user" ? req.identity.user.username : "");

export const handler = familyHandler({
  greedy: "operation",
  notFound: "Data Stores",
  operations: {
    validate: { ...validate, op: { ...validate.op, html: validatedPage } },
    addToServer,
    getServers,
    refreshServer,
    removeFromServer,
    "allDatasets/deleteLayers": deleteLayers,
  },
});
