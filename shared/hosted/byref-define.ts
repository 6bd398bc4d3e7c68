// A layer published by reference from a registered PostgreSQL database, changed on the admin wire: its service-level
// updateDefinition of `capabilities` (its owner or an administrator turning editing on or off), the one change of
// such a service taken (its fields and layers are its table's). Served by the service function, at
// `/<server>/rest/admin/services/[<folder>/]<name>/FeatureServer/updateDefinition` outside the Hosted folder
// (shared/system.ts BYREF_ADMIN): turning editing on asks the database whether the registered login may write the
// table (shared/features/byref-enable.ts), which only a function holding the data stores' passwords, in their
// network, can ask.
import { capabilitiesSetting } from "#shared/features/capabilities.ts";
import { HOSTED_STORE_ID } from "#shared/features/hosted-source.ts";
import { badRequest } from "#shared/errors.ts";
import { addressedService, type Defined, definitionOf, serviceNotFound } from "#shared/hosted/admin-service.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { setServiceCapabilities } from "#shared/stores/services.ts";

const WHAT = "Unable to update feature service definition.";

/** POST …/admin/services/[<folder>/]<name>/FeatureServer/updateDefinition of a service not in the Hosted folder. */
export async function byReferenceAdmin(req: RestRequest): Promise<object> {
  const defined = await addressedService(req);
  if (defined.service.view || defined.service.source?.datastoreId === HOSTED_STORE_ID)
    // Reached only through a folder's name in another case than the service's own (the gateway's paths are
    // case-sensitive, folders here are not): the hosted services' definitions are changed by the uploads function.
    throw badRequest(WHAT, [
      `A hosted service's definition changes at …/admin/services/${defined.service.folder}/${defined.service.name}/FeatureServer/updateDefinition (its folder named as it is).`,
    ]);
  return byReferenceDefinition(req, defined);
}

/** The capabilities change of a by-reference service found on the admin wire; anything else of it is refused. */
export async function byReferenceDefinition(req: RestRequest, defined: Omit<Defined, "item">): Promise<object> {
  const source = defined.service.source;
  if (!source || !("connection" in source))
    throw badRequest("Unable to complete operation.", [
      "Only hosted feature services (made by publishing a file or by createService) are changed here.",
    ]);
  if (defined.resource.length !== 1 || defined.resource[0] !== "updateDefinition")
    throw badRequest(WHAT, [
      "A layer published by reference from a database changes only its service's capabilities here (…/FeatureServer/updateDefinition with {\"capabilities\": …}): its fields and layers are its table's.",
    ]);
  const definition = definitionOf(req.params.get("updateDefinition"), "updateDefinition", WHAT);
  const others = Object.keys(definition).filter((k) => k !== "capabilities");
  if (definition.capabilities === undefined || others.length > 0)
    throw badRequest(WHAT, [
      `A layer published by reference changes only its 'capabilities' here${
        others.length > 0
          ? ` (not ${others
              .slice(0, 5)
              .map((k) => `'${k.slice(0, 32)}'`)
              .join(", ")})`
          : ""
      }.`,
    ]);
  const named = capabilitiesSetting(definition.capabilities);
  if ("problem" in named) throw badRequest(WHAT, [named.problem]);
  const next = named.capabilities;
  const { enableByReference } = await import("#shared/features/byref-enable.ts");
  await enableByReference(defined.service, next, WHAT);
  if (!(await setServiceCapabilities(defined.service, next))) throw serviceNotFound();
  logger.info("by-reference service capabilities changed", { itemId: defined.service.itemId, capabilities: next });
  return { success: true };
}
