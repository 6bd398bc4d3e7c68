// A feature service's capabilities as its record keeps them (`Query`, or `Create,Delete,Query,Update,Editing` for an
// editable hosted service): what its layers' JSON advertises and what editing checks. Names are compared in any case,
// as clients send them.

/** The capabilities that edit, each needed by its own operation (adds, updates, deletes). */
export const EDIT_CAPABILITIES = ["Create", "Update", "Delete"] as const;
export type EditCapability = (typeof EDIT_CAPABILITIES)[number];

/** What hosted services are given when published or created (their owner turns editing off on the admin wire). */
export const EDITABLE_CAPABILITIES = "Create,Delete,Query,Update,Editing";

/** The capabilities a service offers at all: Query always, the editing ones on hosted services. */
export const OFFERED_CAPABILITIES = ["Query", "Create", "Update", "Delete", "Editing"] as const;

/** The capabilities a service's record lists, by their names in lower case. */
export const capabilitiesOf = (service: { readonly capabilities?: string }): Set<string> =>
  new Set(
    (service.capabilities ?? "")
      .split(",")
      .map((c) => c.trim().toLowerCase())
      .filter((c) => c !== ""),
  );

/** The capabilities a layer's JSON lists, in ArcGIS's order (Create,Delete,Query,Update,Editing), as enabled. */
export function advertised(service: { readonly capabilities?: string }): string {
  const caps = capabilitiesOf(service);
  return ["Create", "Delete", "Query", "Update", "Editing"]
    .filter((c) => c === "Query" || caps.has(c.toLowerCase()))
    .join(",");
}

/** Whether a service's capabilities allow any edit. */
export const editingEnabled = (service: { readonly capabilities?: string }): boolean => {
  const caps = capabilitiesOf(service);
  return EDIT_CAPABILITIES.some((c) => caps.has(c.toLowerCase()));
};

/**
 * The capabilities a definition's `capabilities` names (any case, any order, spaces allowed), in ArcGIS's order with
 * Query always among them (a layer that cannot be queried cannot be drawn or edited), or why they cannot be set.
 */
export function capabilitiesSetting(value: unknown): { readonly capabilities: string } | { readonly problem: string } {
  if (typeof value !== "string" || value.length > 256)
    return { problem: "'capabilities' must be text naming capabilities, as Query,Create,Update,Delete,Editing." };
  const named = value
    .split(",")
    .map((c) => c.trim())
    .filter((c) => c !== "");
  const offered = new Map(OFFERED_CAPABILITIES.map((c) => [c.toLowerCase(), c]));
  const refused = named.filter((c) => !offered.has(c.toLowerCase()));
  if (refused.length > 0)
    return {
      problem: `Hosted layers here offer ${OFFERED_CAPABILITIES.join(", ")}: ${refused
        .slice(0, 5)
        .map((c) => `'${c.slice(0, 32)}'`)
        .join(", ")} cannot be set.`,
    };
  const wanted = new Set<string>(named.flatMap((c) => offered.get(c.toLowerCase()) ?? []));
  wanted.add("Query");
  return { capabilities: OFFERED_CAPABILITIES.filter((c) => wanted.has(c)).join(",") };
}
