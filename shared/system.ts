// The one description of mapgate: every route, table and secret is declared here once.
// The CDK stack (infra/aws) and the local engine (infra/local) both iterate these lists, so a
// route or table that exists on one engine exists on the other.

export type Access = "read" | "write";

export interface TableSpec {
  /** Logical name; also the key of the environment variable `TABLE_<NAME>` that carries the real name. */
  readonly name: string;
  readonly partitionKey: string;
  readonly sortKey?: string;
  readonly indexes?: readonly { readonly name: string; readonly partitionKey: string; readonly sortKey?: string }[];
  /** Attribute holding an epoch-seconds expiry. DynamoDB's TTL only reclaims space: readers check expiry themselves. */
  readonly ttlAttribute?: string;
}

/**
 * An alias answering fewer methods than its route (POST-only operations such as a layer's applyEdits): each method
 * of a path costs one API Gateway route (a resource of the stack), so an alias takes only those it serves.
 */
export interface RouteAlias {
  readonly path: string;
  readonly methods: readonly ("GET" | "POST")[];
}

export interface RouteSpec {
  /** Kebab-case id: names the function (and, unless `handler` says otherwise, its file under functions/). */
  readonly id: string;
  /** The handler module under functions/ when two routes run the same code (each still its own function). */
  readonly handler?: string;
  /** Whether the function may start workflow executions (and is told the state machine's ARN). */
  readonly startsWorkflow?: boolean;
  /** `$default` catches every request no other route matches. */
  readonly methods: readonly ("GET" | "POST")[] | "$default";
  /** API Gateway path template: `{name}` matches one segment, `{name+}` the rest of the path. */
  readonly path: string;
  /**
   * Other paths the same function answers, as ArcGIS serves one endpoint at two addresses (OAuth 2.0 at
   * `sharing/oauth2` and `sharing/rest/oauth2`): on AWS one more API Gateway route on the route's integration
   * (a route is one resource, a function about seven), locally one more pattern leading to the same handler.
   */
  readonly alsoAt?: readonly (string | RouteAlias)[];
  /**
   * A route family's operations: the sub-paths its greedy `{name+}` serves, in the same `{name}` notation,
   * matched by shared/http/router.ts; any other sub-path is a 404 (docs/architecture.md#route-families).
   */
  readonly operations?: readonly string[];
  readonly tables: Readonly<Record<string, Access>>;
  readonly secrets: readonly SecretName[];
  /**
   * Reads data stores' content: on AWS it is granted the registered cloud-store buckets (read only) and the
   * database stores' passwords, and runs in the databases' VPC when the stack is given one.
   */
  readonly readsStorage?: boolean;
  /**
   * Data store secrets beyond reading content: `read` connects to databases (validating a registration) and
   * runs in the VPC like a reader; `write` registers, changes and removes them (creates and deletes secrets).
   */
  readonly datastoreSecrets?: "read" | "write";
  /**
   * Files users upload as items (shared/stores/item-files.ts): `read` serves them, `write` also keeps and removes
   * them. On AWS the stack's item-files bucket, granted as asked; locally a folder of the data folder.
   */
  readonly itemFiles?: Access;
  /**
   * Hosted layers' data (shared/hosted/store.ts): `read` serves it, `write` also makes and removes it. On AWS
   * `hosted/` of the item-files bucket; locally a folder of the data folder.
   */
  readonly hostedData?: Access;
  /** Sends events to mapgate's bus (PutEvents on that bus only), keeping what the bus refused in `outbox`. */
  readonly emits?: boolean;
  /**
   * A read that map clients and apps wait on (services, their content, the catalogs, items): its latency is
   * watched as one group, the read-latency alarm's p99. Sign-ins (slow by design) and changes are not.
   */
  readonly read?: boolean;
  /**
   * Serves the map viewer's files (shared/viewer/assets.ts), which the stack copies beside the function's bundle
   * and the local engine into its data folder.
   */
  readonly viewerAssets?: boolean;
}

export type SecretName = "tokenKey";

export const SECRETS: Readonly<Record<SecretName, { readonly description: string; readonly env: string }>> = {
  tokenKey: {
    description: "Key that signs and encrypts mapgate tokens (JSON: {kid, k})",
    env: "TOKEN_KEY_SECRET_ID",
  },
};

export const TABLES = [
  { name: "portals", partitionKey: "portalId" },
  {
    name: "users",
    partitionKey: "username",
    indexes: [{ name: "byPortal", partitionKey: "portalId", sortKey: "username" }],
  },
  {
    name: "servers",
    partitionKey: "serverId",
    indexes: [{ name: "byPortal", partitionKey: "portalId", sortKey: "serverId" }],
  },
  {
    name: "datastores",
    partitionKey: "datastoreId",
    sortKey: "entry",
    indexes: [{ name: "byPortal", partitionKey: "portalId", sortKey: "datastoreId" }],
  },
  { name: "tokens", partitionKey: "pk", sortKey: "sk", ttlAttribute: "expiresAt" },
  /**
   * Services and folders of each federated server (`svc#<folder>#<name>`, `folder#<name>`, lower-case), and
   * `#catalog`, whose version every change advances so readers can cache the catalog safely.
   */
  { name: "services", partitionKey: "serverId", sortKey: "entry" },
  /** Asynchronous jobs (describe, publish, publishLayers); `expiresAt` is when a job is no longer readable. */
  { name: "jobs", partitionKey: "jobId", ttlAttribute: "expiresAt" },
  /** Layer–dataset pairs of bulk publishing, per data store (`pair#<dataset path>`). */
  { name: "layers", partitionKey: "datastoreId", sortKey: "entry" },
  /**
   * Where each page of a paged list ended, per client (`getLayers#<datastoreId>#<token id>#<nextStart>` → the
   * last key handed out): the page asked for next resumes from that key instead of counting to its `start`.
   */
  { name: "cursors", partitionKey: "cursor", ttlAttribute: "expiresAt" },
  /** Custom roles (`role#<id>`) and their name reservations (`name#<lower-case name>`), per portal. */
  { name: "roles", partitionKey: "portalId", sortKey: "entry" },
  /**
   * Portal items (services, bulk-published layers, data stores). `listed` exists on public items only, so
   * `byPublic` is a sparse index of what anyone may find; searches query one of the three indexes, never scan.
   * Keys are strings: `createdKey` is `created` zero-padded, so the indexes sort newest first as numbers would.
   */
  {
    name: "items",
    partitionKey: "itemId",
    indexes: [
      { name: "byPortal", partitionKey: "portalId", sortKey: "createdKey" },
      { name: "byOwner", partitionKey: "owner", sortKey: "createdKey" },
      { name: "byPublic", partitionKey: "listed", sortKey: "createdKey" },
    ],
  },
  /**
   * Other AWS services' principals allowed to call mapgate (`npm run admin -- register-caller`), by the name of
   * the operations function's alias each one invokes: the organization and member it acts as.
   */
  { name: "callers", partitionKey: "callerId" },
  /**
   * Events the bus did not take at once (throttled, unavailable): kept here and sent again by events-redeliver,
   * so a busy bus neither fails nor slows the operation that raised them.
   */
  { name: "outbox", partitionKey: "eventId", ttlAttribute: "expiresAt" },
  /**
   * Groups (`group`), their members (`member#<username>`), the items shared with them (`item#<itemId>`), join
   * requests (`application#<username>`) and invitations (`invite#<username>`). Only `group` entries carry
   * `portalId`, so `byPortal` is a sparse index of an organization's groups. A member's group ids are also kept on
   * their user record, and an item's on the item, its service and its pair: whoever reads those knows the groups.
   */
  {
    name: "groups",
    partitionKey: "groupId",
    sortKey: "entry",
    indexes: [{ name: "byPortal", partitionKey: "portalId", sortKey: "createdKey" }],
  },
  /** Registered OAuth 2.0 applications (client ids, redirect URIs, hashed secrets). */
  {
    name: "apps",
    partitionKey: "clientId",
    indexes: [{ name: "byPortal", partitionKey: "portalId", sortKey: "clientId" }],
  },
] as const satisfies readonly TableSpec[];

export type TableName = (typeof TABLES)[number]["name"];

/**
 * What mapgate tells other systems, on the EventBridge bus the stack creates: every event's `source` is
 * `mapgate`, its `detail-type` one of these, and its detail is described by `infra/events/<type>.schema.json`
 * (the key, kebab-cased).
 */
export const EVENTS = {
  source: "mapgate",
  schemaDir: "infra/events",
  types: {
    jobSubmitted: "Job Submitted",
    jobCompleted: "Job Completed",
    jobFailed: "Job Failed",
    servicePublished: "Service Published",
    serviceUnpublished: "Service Unpublished",
    roleChanged: "Role Changed",
    signInLocked: "Sign-in Locked",
    featuresEdited: "Features Edited",
  },
} as const;

export type EventType = keyof typeof EVENTS.types;

/** `jobSubmitted` → `job-submitted`: the file name of its detail's schema. */
export const eventSchemaFile = (type: EventType) =>
  `${EVENTS.schemaDir}/${type.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}.schema.json`;

export const PORTAL_ROOT = "/portal/sharing/rest";
/** The portal's `sharing` root without `rest`, where ArcGIS serves OAuth 2.0 as well (`sharing/oauth2/…`). */
export const SHARING_ROOT = PORTAL_ROOT.replace(/\/rest$/, "");

/**
 * AWS limits the local engine models, so what fails on AWS fails locally too: Lambda takes and returns at most
 * 6 MB (the invocation event, and the whole result object with its base64 body) synchronously.
 */
export const LAMBDA_PAYLOAD_BYTES = 6 * 1024 * 1024;

/**
 * What the shared pipeline itself reads on every request: the caller's portal, user (or application), custom
 * role and token revocations.
 */
const PIPELINE_TABLES = { portals: "read", users: "read", tokens: "read", roles: "read", apps: "read" } as const;

/** What a function that raises events writes besides the bus: the events the bus did not take. */
const EMITTER_TABLES = { outbox: "write" } as const;

function route(spec: Omit<RouteSpec, "secrets" | "tables"> & { tables?: Readonly<Record<string, Access>> }): RouteSpec {
  const tables = { ...PIPELINE_TABLES, ...spec.tables, ...(spec.emits ? EMITTER_TABLES : {}) };
  return { ...spec, tables, secrets: ["tokenKey"] };
}

/** A custom role and what it grants: one function answers both (their rules and tables are the same). */
export const ROLE_PATHS = {
  role: `${PORTAL_ROOT}/portals/{portalId}/roles/{roleId}`,
  privileges: `${PORTAL_ROOT}/portals/{portalId}/roles/{roleId}/privileges`,
} as const;

/**
 * The paths of the function that takes uploads: adding an item, a file's parts and their commit, analyzing a file,
 * publishing it, an item's status.
 */
export const CONTENT_FILES = {
  addItem: `${PORTAL_ROOT}/content/users/{username}/addItem`,
  analyze: `${PORTAL_ROOT}/content/features/analyze`,
  publish: `${PORTAL_ROOT}/content/users/{username}/publish`,
  status: `${PORTAL_ROOT}/content/users/{username}/items/{itemId}/status`,
  export: `${PORTAL_ROOT}/content/users/{username}/export`,
  addPart: `${PORTAL_ROOT}/content/users/{username}/items/{itemId}/addPart`,
  commit: `${PORTAL_ROOT}/content/users/{username}/items/{itemId}/commit`,
  /** An empty hosted service, defined next on the admin wire (createFeatureService of ArcGIS REST JS). */
  createService: `${PORTAL_ROOT}/content/users/{username}/createService`,
  /** A hosted service's definition on its server's admin wire (addToDefinition, …, a layer's truncate). */
  admin: "/{server}/rest/admin/services/{path+}",
  /**
   * What no other route under a member's content serves, one route for them all (USER_CONTENT_OPERATIONS): the
   * paths above under it, folders (createFolder, a folder's listing, addItem and createService into one), an
   * upload's `cancel` and `parts`, and the upload operations addressed in a folder.
   */
  userContent: `${PORTAL_ROOT}/content/users/{username}/{path+}`,
  /**
   * A hosted layer's append (rows of an uploaded file added or upserted): more literal segments than the service
   * route's `{path+}`, so API Gateway (and the local gateway) send it here rather than to the read-only service.
   */
  append: "/{server}/rest/services/{folder}/{name}/FeatureServer/{layer}/append",
  /**
   * A hosted layer's edits (POST only, as ArcGIS serves them), and its service's applyEdits across layers: in the
   * Hosted folder, where every hosted service is, with more literal segments than the service route's `{path+}`, so
   * they reach this function; a layer read by reference elsewhere is answered by the service function (read-only).
   */
  applyEdits: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/applyEdits",
  addFeatures: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/addFeatures",
  updateFeatures: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/updateFeatures",
  deleteFeatures: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/deleteFeatures",
  serviceApplyEdits: "/{server}/rest/services/Hosted/{name}/FeatureServer/applyEdits",
  /**
   * A hosted feature's attachments changed (POST only, as ArcGIS serves them; multipart with the file): more literal
   * segments than the service route's `{path+}`, which serves their reads (the attachments' list, their bytes).
   */
  addAttachment: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/{oid}/addAttachment",
  updateAttachment: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/{oid}/updateAttachment",
  deleteAttachments: "/{server}/rest/services/Hosted/{name}/FeatureServer/{layer}/{oid}/deleteAttachments",
} as const;

/** A published service at its URL and everything below it (its layers, their queries, tiles, …). */
export const SERVICE_PATH = "/{server}/rest/services/{path+}";

/**
 * A feature service's own updateDefinition on its server's admin wire, by where the service is: in the Hosted folder
 * (hosted services and views: the uploads function, which changes their data and definitions) and anywhere else
 * (services published by reference: the service function, which holds the data stores' passwords and reaches their
 * databases, so it can ask whether the registered login may write before editing is turned on). Each path has more
 * literal segments than the admin wire's greedy route, and `Hosted` more than `{folder}`, so the gateways (API Gateway
 * and the local one) send each request to its own function; every other admin operation stays on the greedy route.
 */
export const SERVICE_DEFINITION = {
  hosted: "/{server}/rest/admin/services/Hosted/{name}/FeatureServer/updateDefinition",
  inFolder: "/{server}/rest/admin/services/{folder}/{name}/FeatureServer/updateDefinition",
  atRoot: "/{server}/rest/admin/services/{name}/FeatureServer/updateDefinition",
} as const;

/** The edit operations' paths (CONTENT_FILES), each an alias of the uploads function answering POST only. */
export const EDIT_PATHS = [
  CONTENT_FILES.applyEdits,
  CONTENT_FILES.addFeatures,
  CONTENT_FILES.updateFeatures,
  CONTENT_FILES.deleteFeatures,
  CONTENT_FILES.serviceApplyEdits,
  CONTENT_FILES.addAttachment,
  CONTENT_FILES.updateAttachment,
  CONTENT_FILES.deleteAttachments,
] as const;

/** The operations of CONTENT_FILES.userContent, relative to its greedy part (matched by shared/http/router.ts). */
export const USER_CONTENT_OPERATIONS = [
  "addItem",
  "publish",
  "export",
  "createService",
  "items/{itemId}/status",
  "items/{itemId}/addPart",
  "items/{itemId}/commit",
  "createFolder",
  "{folderId}",
  "{folderId}/addItem",
  "{folderId}/createService",
  "items/{itemId}/cancel",
  "items/{itemId}/parts",
  "{folderId}/items/{itemId}/addPart",
  "{folderId}/items/{itemId}/commit",
  "{folderId}/items/{itemId}/status",
  "{folderId}/items/{itemId}/cancel",
  "{folderId}/items/{itemId}/parts",
  // Delete protection, and an item changed in its folder (at the root, update is a route of its own).
  "items/{itemId}/protect",
  "items/{itemId}/unprotect",
  "{folderId}/items/{itemId}/protect",
  "{folderId}/items/{itemId}/unprotect",
  "{folderId}/items/{itemId}/update",
  // An item's resources (at the root and in a folder), moving items, deleting a folder, related items.
  "items/{itemId}/addResources",
  "items/{itemId}/updateResources",
  "items/{itemId}/removeResources",
  "{folderId}/items/{itemId}/addResources",
  "{folderId}/items/{itemId}/updateResources",
  "{folderId}/items/{itemId}/removeResources",
  "items/{itemId}/move",
  "{folderId}/items/{itemId}/move",
  "moveItems",
  "{folderId}/delete",
  "addRelationship",
  "deleteRelationship",
  "items/{itemId}/updateThumbnail",
  "{folderId}/items/{itemId}/updateThumbnail",
  // Clearing a member's content: deleting many items, and giving one to another member (shared/item-owners.ts).
  "deleteItems",
  "items/{itemId}/reassign",
  "{folderId}/items/{itemId}/reassign",
] as const;

export const ROUTES: readonly RouteSpec[] = [
  route({
    id: "sharing-root",
    read: true,
    methods: ["GET", "POST"],
    path: PORTAL_ROOT,
    tables: { datastores: "read" },
  }),
  route({ id: "sharing-info", read: true, methods: ["GET", "POST"], path: `${PORTAL_ROOT}/info` }),
  route({ id: "portal-self", read: true, methods: ["GET", "POST"], path: `${PORTAL_ROOT}/portals/{portalId}` }),
  // The organization's settings an administrator changes (allowedOrigins, the default basemap, …); a basemap's
  // services are looked up in their server's catalog.
  route({
    id: "portal-update",
    methods: ["GET", "POST"],
    path: `${PORTAL_ROOT}/portals/{portalId}/update`,
    tables: { portals: "write", servers: "read", services: "read" },
  }),
  route({
    id: "server-info",
    read: true,
    methods: ["GET", "POST"],
    path: "/{server}/rest/info",
    tables: { servers: "read" },
  }),
  ...servingRoutes(),
  route({
    id: "generate-token",
    methods: ["GET", "POST"],
    path: `${PORTAL_ROOT}/generateToken`,
    tables: { tokens: "write", servers: "read" },
    emits: true,
  }),
  route({
    id: "community-self",
    methods: ["GET", "POST"],
    path: `${PORTAL_ROOT}/community/self`,
    // items: the bytes of uploaded files the user keeps (storageUsage), counted there.
    tables: { groups: "read", items: "read" },
  }),
  route({
    id: "portal-servers",
    methods: ["GET", "POST"],
    path: `${PORTAL_ROOT}/portals/{portalId}/servers`,
    tables: { servers: "read" },
  }),
  ...roleRoutes(),
  ...dataStoreRoutes(),
  ...contentRoutes(),
  ...signInRoutes(),
  ...homeRoutes(),
  route({
    id: "soap-catalog",
    read: true,
    methods: ["GET", "POST"],
    path: "/{server}/services",
    tables: { servers: "read", services: "read" },
  }),
  // It sends `/<server>` and `/<server>/rest` to the server's directory; below a server's SOAP endpoint it
  // answers a SOAP fault naming the catalog (reading the server and its catalog version as the catalog does).
  route({ id: "not-found", methods: "$default", path: "$default", tables: { servers: "read", services: "read" } }),
];

/**
 * Where a person starts: the home page, the health check, and the map viewer of any service or layer with its
 * files (the map library's, served here so an offline site works): three routes, as each costs about seven of
 * the stack's resources. `/portal/home` and a server's short addresses are answered by not-found (no route).
 */
function homeRoutes(): RouteSpec[] {
  const GP = ["GET", "POST"] as const;
  const catalog = { servers: "read", services: "read" } as const;
  return [
    route({ id: "home", read: true, methods: GP, path: "/", tables: catalog }),
    route({ id: "health", methods: GP, path: "/health" }),
    // The viewer's page (`/viewer/map`) and its files (`/viewer/maplibre-gl.js`, …): one function.
    route({ id: "viewer", read: true, methods: GP, path: "/viewer/{name}", tables: catalog, viewerAssets: true }),
  ];
}

/**
 * What is published, served: the REST services directory (root and folders) and every service at its URL
 * with its content, read from the data store where its cache lies (`storage`).
 */
function servingRoutes(): RouteSpec[] {
  const GP = ["GET", "POST"] as const;
  const tables = { servers: "read", services: "read" } as const;
  return [
    // The root and a folder: one function (the same code and grants) at two paths.
    route({
      id: "services-directory",
      read: true,
      methods: GP,
      path: "/{server}/rest/services",
      alsoAt: ["/{server}/rest/services/{folder}"],
      tables,
    }),
    // It also makes the edits of layers published by reference from a database whose publisher turned editing on
    // (shared/hosted/byref-edit.ts): it reaches those databases already, and each edit raises its event (emits) and
    // moves its layers' last edit (a record of the services table, shared/stores/last-edits.ts).
    route({
      id: "service",
      read: true,
      methods: GP,
      path: SERVICE_PATH,
      // A by-reference service's capabilities (turning its editing on asks its database first).
      alsoAt: [SERVICE_DEFINITION.inFolder, SERVICE_DEFINITION.atRoot].map((path) => ({
        path,
        methods: ["POST"] as const,
      })),
      tables: { ...tables, services: "write" },
      readsStorage: true,
      hostedData: "read",
      emits: true,
    }),
  ];
}

/**
 * Portal items and who sees them: reading, searching, updating, sharing and deleting (which unpublishes the
 * service), and the users and names publishing needs to know about.
 */
function contentRoutes(): RouteSpec[] {
  const content = `${PORTAL_ROOT}/content`;
  const userItem = `${content}/users/{username}/items/{itemId}`;
  const GP = ["GET", "POST"] as const;
  const sharing = { items: "write", services: "write", layers: "write", groups: "write" } as const;
  return [
    // Its page offers the groups the item may be shared with, and a hosted feature service's editing settings (read
    // from its service record, with its server's name for the admin address the form posts to).
    route({
      id: "item-get",
      read: true,
      methods: GP,
      path: `${content}/items/{itemId}`,
      tables: { items: "read", groups: "read", services: "read", servers: "read" },
    }),
    route({ id: "item-share", methods: GP, path: `${content}/items/{itemId}/share`, tables: sharing }),
    route({
      id: "item-unshare",
      handler: "item-share",
      methods: GP,
      path: `${content}/items/{itemId}/unshare`,
      tables: sharing,
    }),
    route({ id: "user-item-share", handler: "item-share", methods: GP, path: `${userItem}/share`, tables: sharing }),
    route({
      id: "user-item-unshare",
      handler: "item-share",
      methods: GP,
      path: `${userItem}/unshare`,
      tables: sharing,
    }),
    // A data store's item changes and goes with the data store (its connection, its secret).
    route({
      id: "item-update",
      methods: GP,
      path: `${userItem}/update`,
      tables: { items: "write", services: "write", datastores: "write" },
      datastoreSecrets: "write",
      // An item's text larger than a table record is kept in the item files.
      itemFiles: "write",
    }),
    route({
      id: "item-delete",
      methods: GP,
      path: `${userItem}/delete`,
      tables: { ...sharing, datastores: "write" },
      emits: true,
      datastoreSecrets: "write",
      itemFiles: "write",
      hostedData: "write",
    }),
    // Uploading a file is adding its item; so is registering a data store. The same function analyzes uploaded
    // files, publishes them as hosted layers, exports hosted layers back to files, makes empty hosted services
    // (createService) and changes hosted services' definitions on the hosting server's admin wire (one function, its
    // operations at their own paths: CONTENT_FILES), and keeps members' folders (USER_CONTENT_OPERATIONS).
    route({
      id: "item-add",
      methods: GP,
      // One greedy route for every operation under a member's content (the routes of other functions there, more
      // specific, keep their paths), three aliases, and eight POST-only aliases for editing (a layer's applyEdits,
      // addFeatures, updateFeatures, deleteFeatures, the service's applyEdits, and a feature's addAttachment,
      // updateAttachment and deleteAttachments): 16 API routes where one per operation took 42.
      path: CONTENT_FILES.userContent,
      alsoAt: [
        CONTENT_FILES.analyze,
        CONTENT_FILES.admin,
        CONTENT_FILES.append,
        ...[...EDIT_PATHS, SERVICE_DEFINITION.hosted].map((path) => ({ path, methods: ["POST"] as const })),
      ],
      // Deleting a folder deletes its items as item-delete does (their layer pairs, their groups' records).
      tables: {
        items: "write",
        datastores: "write",
        servers: "read",
        services: "write",
        jobs: "write",
        layers: "write",
        groups: "write",
      },
      datastoreSecrets: "write",
      itemFiles: "write",
      hostedData: "write",
      // A large file's publish is a job (shared/hosted/publish-job.ts).
      startsWorkflow: true,
      emits: true,
    }),
    route({
      id: "item-data",
      methods: GP,
      path: `${content}/items/{itemId}/data`,
      tables: { items: "read", datastores: "read" },
      itemFiles: "read",
    }),
    route({ id: "user-content", methods: GP, path: `${content}/users/{username}`, tables: { items: "read" } }),
    route({ id: "item-search", read: true, methods: GP, path: `${PORTAL_ROOT}/search`, tables: { items: "read" } }),
    route({
      id: "service-name-available",
      methods: GP,
      path: `${PORTAL_ROOT}/portals/{portalId}/isServiceNameAvailable`,
      tables: { servers: "read", services: "read" },
    }),
    route({
      id: "community-user",
      methods: GP,
      path: `${PORTAL_ROOT}/community/users/{username}`,
      tables: { groups: "read" },
    }),
    // Groups, their members, invitations and join requests: everything under community/ that no other route
    // serves (community/createGroup, community/groups[/<id>[/<operation>]], community/users/<u>/invitations…).
    // Deleting a group unshares its items, so it writes what sharing writes.
    route({
      id: "community-groups",
      methods: GP,
      path: `${PORTAL_ROOT}/community/{path+}`,
      operations: [
        "createGroup",
        "groups",
        "groups/{groupId}",
        "groups/{groupId}/users",
        "groups/{groupId}/update",
        "groups/{groupId}/delete",
        "groups/{groupId}/reassign",
        "groups/{groupId}/join",
        "groups/{groupId}/leave",
        "groups/{groupId}/createApplication",
        "groups/{groupId}/addUsers",
        "groups/{groupId}/removeUsers",
        "groups/{groupId}/invite",
        "groups/{groupId}/applications",
        "groups/{groupId}/applications/{username}",
        "groups/{groupId}/applications/{username}/{decision}",
        "users/{username}/invitations",
        "users/{username}/invitations/{groupId}/{decision}",
        // People (shared/user-admin.ts): an administrator's, and each member's own profile.
        "createUser",
        "users/{username}/update",
        "users/{username}/disable",
        "users/{username}/enable",
        "users/{username}/delete",
        "users/{username}/resetPassword",
      ],
      // People: deleting a member of a custom role counts its holders down (roles); a password change checks the
      // current one against the sign-in lockout, and a reset clears it (tokens).
      tables: { ...sharing, users: "write", roles: "write", tokens: "write" },
      // A password change checks the current one through the sign-in lockout, which raises its event when it locks.
      emits: true,
    }),
    // What no other content route serves: a group's items (content/groups/<id>), an item's groups
    // (content/items/<id>/groups), its resources (their list, and one by its name of up to four parts), its thumbnail
    // and its related items.
    route({
      id: "content-groups",
      methods: GP,
      path: `${content}/{path+}`,
      operations: [
        "groups/{groupId}",
        "items/{itemId}/groups",
        "items/{itemId}/resources",
        "items/{itemId}/resources/{r1}",
        "items/{itemId}/resources/{r1}/{r2}",
        "items/{itemId}/resources/{r1}/{r2}/{r3}",
        "items/{itemId}/resources/{r1}/{r2}/{r3}/{r4}",
        "items/{itemId}/info/thumbnail/{name}",
        "items/{itemId}/relatedItems",
      ],
      tables: { groups: "read", items: "read" },
      itemFiles: "read",
    }),
    route({ id: "portal-users", methods: GP, path: `${PORTAL_ROOT}/portals/{portalId}/users` }),
  ];
}

/**
 * OAuth 2.0, the sign-in page and the registration of applications. The OAuth endpoints and the sign-in page are
 * also served without `rest` (`sharing/oauth2/…`), where ArcGIS Enterprise and Online serve them too and where
 * the ArcGIS Maps SDK for JavaScript sends its sign-in.
 */
function signInRoutes(): RouteSpec[] {
  const oauth = `${PORTAL_ROOT}/oauth2`;
  const bare = `${SHARING_ROOT}/oauth2`;
  const apps = `${PORTAL_ROOT}/portals/{portalId}/apps`;
  const GP = ["GET", "POST"] as const;
  const at = (name: string) => ({ path: `${oauth}/${name}`, alsoAt: [`${bare}/${name}`] });
  return [
    // The three ways a password comes in share one lockout, which raises an event.
    route({ id: "oauth-authorize", methods: GP, ...at("authorize"), tables: { tokens: "write" }, emits: true }),
    route({ id: "oauth-token", methods: GP, ...at("token"), tables: { tokens: "write" }, emits: true }),
    route({ id: "oauth-revoke", methods: GP, ...at("revokeToken"), tables: { tokens: "write" } }),
    route({ id: "oauth-signin", methods: GP, ...at("signin"), tables: { tokens: "write" }, emits: true }),
    route({ id: "oauth-signout", methods: GP, ...at("signout"), tables: { tokens: "write" } }),
    route({ id: "app-list", methods: GP, path: apps }),
    route({ id: "app-register", methods: GP, path: `${apps}/register`, tables: { apps: "write" } }),
    route({ id: "app-unregister", methods: GP, path: `${apps}/{clientId}/unregister`, tables: { apps: "write" } }),
  ];
}

function dataStoreRoutes(): RouteSpec[] {
  const portal = `${PORTAL_ROOT}/portals/{portalId}`;
  const stores = `${portal}/datastores`;
  const GP = ["GET", "POST"] as const;
  const jobWriter = { jobs: "write", datastores: "read", servers: "read", services: "write" } as const;
  return [
    route({ id: "job-get", methods: GP, path: `${portal}/jobs/{jobId}`, tables: { jobs: "write", services: "write" } }),
    route({
      id: "datastore-describe",
      methods: GP,
      emits: true,
      path: `${stores}/describe`,
      tables: jobWriter,
      startsWorkflow: true,
      readsStorage: true,
    }),
    route({
      id: "datastore-publish",
      methods: GP,
      emits: true,
      path: `${stores}/publish`,
      tables: jobWriter,
      startsWorkflow: true,
      readsStorage: true,
    }),
    route({
      id: "datastore-publish-layers",
      methods: GP,
      emits: true,
      path: `${stores}/allDatasets/publishLayers`,
      tables: jobWriter,
      startsWorkflow: true,
    }),
    // Both paths ArcGIS documents for it: one function.
    route({
      id: "datastore-get-layers",
      methods: GP,
      path: `${stores}/getLayers`,
      alsoAt: [`${stores}/allDatasets/getLayers`],
      tables: { datastores: "read", layers: "read", cursors: "write" },
    }),
    // The operations on a data store registered through the portal (validate, addToServer, getServers,
    // refreshServer, removeFromServer, allDatasets/deleteLayers): one function, its grants the union of theirs.
    // Deleting a layer deletes its item as item-delete does, with the item's entries in the groups it was shared with.
    route({
      id: "datastore-manage",
      methods: GP,
      path: `${stores}/{operation+}`,
      operations: [
        "validate",
        "addToServer",
        "getServers",
        "refreshServer",
        "removeFromServer",
        "allDatasets/deleteLayers",
      ],
      tables: {
        datastores: "write",
        servers: "read",
        items: "write",
        layers: "write",
        services: "write",
        groups: "write",
      },
      datastoreSecrets: "read",
      emits: true,
    }),
  ];
}

/** A workflow task: a function the state machine calls (functions/<id>.ts), with the tables it may touch. */
export interface TaskSpec {
  readonly id: string;
  readonly tables: Readonly<Record<string, Access>>;
  readonly readsStorage?: boolean;
  readonly emits?: boolean;
  /** Answers callers' task tokens (states:SendTaskSuccess and SendTaskFailure). */
  readonly answersCallers?: boolean;
  /** Uploaded items' files, as a route's `itemFiles`. */
  readonly itemFiles?: Access;
  /** Hosted layers' data, as a route's `hostedData`. */
  readonly hostedData?: Access;
  /** Its time limit on AWS, in minutes (5 unless said: Lambda's limit is 15). */
  readonly timeoutMinutes?: number;
  /** Node's options on AWS (`NODE_OPTIONS`), where its defaults do not suit the work. */
  readonly nodeOptions?: string;
}

/** The jobs workflow: one Amazon States Language file (JSONPath); each Task's Resource is `${<Pascal id>}`. */
export const WORKFLOW = {
  file: "infra/workflows/jobs.asl.json",
  tasks: [
    { id: "task-describe", tables: { jobs: "read", datastores: "read", servers: "read" }, readsStorage: true },
    {
      id: "task-publish-service",
      tables: { jobs: "read", datastores: "read", servers: "read", services: "write", items: "write" },
      readsStorage: true,
    },
    {
      // It lists the datasets of the store's folder, bucket or database, so it reads them as describe does.
      id: "task-publish-layers",
      tables: { datastores: "read", servers: "read", services: "write", layers: "write", items: "write" },
      readsStorage: true,
    },
    {
      // Reads an uploaded file and keeps a hosted layer's data: the longest task (a file of MAX_ITEM_FILE_MB).
      id: "task-publish-hosted",
      tables: { items: "write", servers: "read", services: "write" },
      itemFiles: "read",
      hostedData: "write",
      timeoutMinutes: 15,
      // V8 grows its young generation to 64 MB under publishing's allocation rate; 8 MB keeps a million-row publish
      // near 236 MB of RSS for ~4% more CPU (docs/performance.md, the publish bench).
      nodeOptions: "--max-semi-space-size=8",
    },
    { id: "task-complete-job", tables: { jobs: "write", ...EMITTER_TABLES }, emits: true },
    {
      // A failed hosted publish drops the data it kept (hostedData), through the hosted store, whose removal of
      // attachments' bytes gives back what a service's item counted (items; none for a failed publish's new data).
      id: "task-fail-job",
      tables: { jobs: "write", services: "write", items: "write", ...EMITTER_TABLES },
      hostedData: "write",
      emits: true,
    },
    { id: "task-notify-caller", tables: { jobs: "read" }, answersCallers: true },
  ] satisfies readonly TaskSpec[] as readonly TaskSpec[],
} as const;

/**
 * The operations function: what other AWS services invoke (Lambda Invoke, IAM the authority) to call mapgate
 * without a password or token. `{operation, portalId, params, taskToken?}` runs the named route's own handler
 * as the registered member the caller acts as, and answers the JSON that route answers. An operation names its
 * route by id, or, for a route with a greedy `{path+}`, its id and the sub-path it fills it with; the path's
 * `{name}` parameters are taken out of `params`.
 */
export const INVOCATION = {
  id: "operations",
  operations: {
    describe: "datastore-describe",
    publish: "datastore-publish",
    publishLayers: "datastore-publish-layers",
    getLayers: "datastore-get-layers",
    getJob: "job-get",
    self: "portal-self",
    getItem: "item-get",
    search: "item-search",
    shareItem: "item-share",
    unshareItem: "item-unshare",
    listRoles: "role-list",
    createRole: "role-create",
    searchGroups: { route: "community-groups", path: "groups" },
    createGroup: { route: "community-groups", path: "createGroup" },
    getGroup: { route: "community-groups", path: "groups/{groupId}" },
    updateGroup: { route: "community-groups", path: "groups/{groupId}/update" },
    deleteGroup: { route: "community-groups", path: "groups/{groupId}/delete" },
    getGroupUsers: { route: "community-groups", path: "groups/{groupId}/users" },
    addGroupUsers: { route: "community-groups", path: "groups/{groupId}/addUsers" },
    removeGroupUsers: { route: "community-groups", path: "groups/{groupId}/removeUsers" },
    getGroupContent: { route: "content-groups", path: "groups/{groupId}" },
  },
  /** Operations that start a job: they take a task token, answered when the job ends. */
  jobs: ["describe", "publish", "publishLayers"],
} as const;

export type InvokedOperation = keyof typeof INVOCATION.operations;

/** The route an operation runs, and the sub-path its greedy `{path+}` takes (if it has one). */
export function invokedRoute(operation: InvokedOperation): { readonly route: string; readonly path?: string } {
  const spec: string | { readonly route: string; readonly path: string } = INVOCATION.operations[operation];
  return typeof spec === "string" ? { route: spec } : spec;
}

/** A function that no route serves: the operations function, and events-redeliver. */
export interface FunctionSpec extends TaskSpec {
  readonly startsWorkflow?: boolean;
  readonly secrets: readonly SecretName[];
}

/** The operations function's reach: the union of its routes', the callers it reads, and task tokens it fails. */
export function invocationFunction(): FunctionSpec & Pick<RouteSpec, "itemFiles"> {
  const routes = (Object.keys(INVOCATION.operations) as InvokedOperation[]).map((operation) => {
    const id = invokedRoute(operation).route;
    const found = ROUTES.find((r) => r.id === id);
    if (!found) throw new Error(`INVOCATION names ${id}, which is no route`);
    return found;
  });
  const tables: Record<string, Access> = { callers: "read" };
  for (const r of routes) {
    for (const [t, a] of Object.entries(r.tables)) if (tables[t] !== "write") tables[t] = a;
  }
  return {
    id: INVOCATION.id,
    tables,
    secrets: [],
    readsStorage: routes.some((r) => r.readsStorage),
    startsWorkflow: routes.some((r) => r.startsWorkflow),
    emits: routes.some((r) => r.emits),
    // The content family it calls for a group's content also serves items' resources and thumbnails (one bundle).
    ...(routes.some((r) => r.itemFiles) ? { itemFiles: "read" as const } : {}),
    // A job operation that fails before its job starts answers the waiting workflow at once.
    answersCallers: true,
  };
}

/**
 * Sends again, every minute, the events the bus did not take when they were raised; and, once an hour, sweeps what no
 * record names (hosted data a crash left, uploads in parts abandoned for a week: shared/hosted/sweep.ts), so the
 * sweep costs no function, role or schedule of its own.
 */
export const REDELIVERY: FunctionSpec & Pick<RouteSpec, "itemFiles" | "hostedData" | "datastoreSecrets"> = {
  id: "events-redeliver",
  tables: { outbox: "write", items: "write" },
  secrets: [],
  emits: true,
  itemFiles: "write",
  hostedData: "write",
  // An edit of a layer read by reference that a crash left awaiting its commit is settled by asking its database the
  // transaction's status (shared/features/byref-commit.ts): the data stores' passwords, and their VPC.
  datastoreSecrets: "read",
};

/** `task-publish-layers` → `TaskPublishLayers`: the substitution variable a Task's Resource names. */
export const taskVariable = (id: string) => id.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

function roleRoutes(): RouteSpec[] {
  const portal = `${PORTAL_ROOT}/portals/{portalId}`;
  const role = ROLE_PATHS.role;
  const GP = ["GET", "POST"] as const;
  return [
    route({ id: "role-create", methods: GP, path: `${portal}/createRole`, tables: { roles: "write" }, emits: true }),
    route({ id: "role-list", methods: GP, path: `${portal}/roles` }),
    route({ id: "role-get", methods: GP, path: role, alsoAt: [ROLE_PATHS.privileges] }),
    route({ id: "role-update", methods: GP, path: `${role}/update`, tables: { roles: "write" }, emits: true }),
    route({ id: "role-delete", methods: GP, path: `${role}/delete`, tables: { roles: "write" }, emits: true }),
    route({
      id: "role-set-privileges",
      methods: GP,
      path: `${role}/setPrivileges`,
      tables: { roles: "write" },
      emits: true,
    }),
    route({
      id: "user-update-role",
      methods: GP,
      path: `${portal}/updateuserrole`,
      tables: { users: "write", roles: "write" },
      emits: true,
    }),
  ];
}

/**
 * Whether a route takes any method: one `ANY` route instead of a GET and a POST route (a stack holds at most 500
 * resources, and every route is one); the shared pipeline answers OPTIONS (CORS preflights, which `ANY` brings
 * to the route's function) and refuses methods other than GET and POST itself.
 */
export const takesAnyMethod = (route: RouteSpec): boolean =>
  route.methods !== "$default" && route.methods.includes("GET") && route.methods.includes("POST");

/**
 * Every path a route answers with the methods it takes there: its own, then its aliases (`alsoAt`), an alias
 * without methods of its own taking the route's. `any`: one `ANY` route (GET and POST both).
 */
export function routeAddresses(
  route: RouteSpec,
): readonly { readonly path: string; readonly methods: readonly ("GET" | "POST")[]; readonly any: boolean }[] {
  if (route.methods === "$default") return [];
  const own = route.methods;
  return [route.path, ...(route.alsoAt ?? [])].map((a) => {
    const methods = typeof a === "string" ? own : a.methods;
    return {
      path: typeof a === "string" ? a : a.path,
      methods,
      any: methods.includes("GET") && methods.includes("POST"),
    };
  });
}

/** Every path a route answers: its own, then its aliases (`alsoAt`). */
export const routePaths = (route: RouteSpec): readonly string[] => [
  route.path,
  ...(route.alsoAt ?? []).map((a) => (typeof a === "string" ? a : a.path)),
];

/**
 * The route keys API Gateway matches a route by (and sets on the event): `ANY /path`, `GET /path`, `$default`;
 * its own path's first, then its aliases'.
 */
export function routeKeys(route: RouteSpec): string[] {
  if (route.methods === "$default") return ["$default"];
  return routeAddresses(route).flatMap((a) => (a.any ? [`ANY ${a.path}`] : a.methods.map((m) => `${m} ${a.path}`)));
}

export function tableEnvName(table: string): string {
  return `TABLE_${table.toUpperCase()}`;
}
