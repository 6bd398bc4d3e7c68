// Operator actions on an organization, shared by `npm run admin` (either engine) and the local engine's
// first-start bootstrap. They go through the same stores the handlers use.
import { generatePassword, hashPassword } from "#shared/auth/passwords.ts";
import { itemId, shortId } from "#shared/ids.ts";
import { cacheTypeOf, readCacheInfo } from "#shared/caches/probe.ts";
import { storageAt } from "#shared/storage/open.ts";
import { safeRelativePath } from "#shared/storage/storage.ts";
import {
  DataStoreInputError,
  type NewDataStore as SharedNewDataStore,
  registerDataStore as registerSharedDataStore,
} from "#shared/datastore-registration.ts";
import { type DataStore, listPortalDataStores } from "#shared/stores/datastores.ts";
import {
  claimDefaultPortal,
  createPortal,
  getDefaultPortalId,
  getPortal,
  listPortals,
  MAX_TOKEN_MINUTES,
  type Portal,
} from "#shared/stores/portals.ts";
import {
  createServer,
  getServer,
  listPortalServers,
  RESERVED_SERVER_NAMES,
  SERVER_NAME,
  type Server,
  serverUrl,
} from "#shared/stores/servers.ts";
import { dataStoreItem, serviceItem } from "#shared/items.ts";
import { CACHED_CAPABILITIES, restServiceUrl } from "#shared/publishing.ts";
import type { Access, ServiceType } from "#shared/stores/service-keys.ts";
import {
  createService,
  getServiceInfo,
  readCatalog,
  type Service,
  type ServiceExtension,
} from "#shared/stores/services.ts";
import { putMissingItem } from "#shared/stores/items.ts";
import { forEachPairPage } from "#shared/stores/layers.ts";
import { clearAttempts } from "#shared/stores/signin.ts";
import { BUILT_IN_ROLES, createUser, getUser, listPortalUsers, resetPassword } from "#shared/stores/users.ts";

export class AdminInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "AdminInputError";
  }
}

const USERNAME = /^[A-Za-z0-9_.@-]{1,128}$/;

export interface NewUser {
  readonly username: string;
  readonly role: string;
  readonly fullName?: string;
  readonly email?: string;
  /** Omitted: one is generated and returned (the only time it is ever shown). */
  readonly password?: string | undefined;
}

export interface CreatedUser {
  readonly username: string;
  readonly role: string;
  readonly generatedPassword?: string;
}

function checkPassword(password: string): void {
  if (password.length < 8 || password.length > 256) {
    throw new AdminInputError("a password must have between 8 and 256 characters");
  }
}

function checkUsername(username: string): void {
  if (!USERNAME.test(username)) {
    throw new AdminInputError(`username ${JSON.stringify(username)} must be 1–128 letters, digits or _.@-`);
  }
}

export async function addUser(portalId: string, spec: NewUser): Promise<CreatedUser> {
  checkUsername(spec.username);
  if (!(BUILT_IN_ROLES as readonly string[]).includes(spec.role)) {
    throw new AdminInputError(`role must be one of ${BUILT_IN_ROLES.join(", ")}`);
  }
  if (!(await getPortal(portalId))) throw new AdminInputError(`no portal ${portalId}`);
  if (spec.password !== undefined) checkPassword(spec.password);
  if (await getUser(spec.username)) throw new AdminInputError(`the username ${spec.username} is taken`);
  const password = spec.password ?? generatePassword();
  const now = Date.now();
  await createUser({
    username: spec.username,
    portalId,
    role: spec.role,
    fullName: spec.fullName ?? spec.username,
    email: spec.email ?? "",
    passwordHash: await hashPassword(password),
    created: now,
    modified: now,
  });
  return {
    username: spec.username,
    role: spec.role,
    ...(spec.password === undefined ? { generatedPassword: password } : {}),
  };
}

/**
 * Gives a user a new password. In the same write the user's token generation goes up, so every token, sign-in
 * session, refresh token and authorization code issued before stops working on its next use (each request reads
 * the user); failed sign-ins counted against the user are forgotten, a lock included.
 */
export async function resetUserPassword(username: string, password: string): Promise<{ username: string }> {
  checkUsername(username);
  checkPassword(password);
  const user = await resetPassword(username, await hashPassword(password));
  if (!user) throw new AdminInputError(`no user ${username}`);
  await clearAttempts(username);
  return { username: user.username };
}

export interface NewOrganization {
  readonly name: string;
  readonly allSSL?: boolean;
  readonly maxTokenExpirationMinutes?: number;
  readonly requireTokens?: boolean;
  readonly admin: Omit<NewUser, "role">;
}

export async function bootstrapOrganization(spec: NewOrganization): Promise<{ portal: Portal; admin: CreatedUser }> {
  const name = spec.name.trim();
  if (!name || name.length > 250) throw new AdminInputError("an organization name has 1–250 characters");
  const maxMinutes = spec.maxTokenExpirationMinutes ?? MAX_TOKEN_MINUTES;
  if (!Number.isSafeInteger(maxMinutes) || maxMinutes < 1 || maxMinutes > MAX_TOKEN_MINUTES) {
    throw new AdminInputError(`the token expiration limit is 1–${MAX_TOKEN_MINUTES} minutes`);
  }
  // Everything about the first administrator is checked before the organization exists: a bootstrap
  // that fails must not leave an organization nobody can administer.
  checkUsername(spec.admin.username);
  if (spec.admin.password !== undefined) checkPassword(spec.admin.password);
  if (await getUser(spec.admin.username)) throw new AdminInputError(`the username ${spec.admin.username} is taken`);
  const now = Date.now();
  const portal: Portal = {
    portalId: shortId(),
    name,
    allSSL: spec.allSSL ?? false,
    maxTokenExpirationMinutes: maxMinutes,
    requireTokens: spec.requireTokens ?? false,
    allowPasswordGrant: false,
    allowedOrigins: [],
    created: now,
    modified: now,
  };
  await createPortal(portal);
  const admin = await addUser(portal.portalId, { ...spec.admin, role: "org_admin" });
  await claimDefaultPortal(portal.portalId);
  return { portal, admin };
}

export interface NewServer {
  /** Path segment a hosted server answers under (e.g. `arcgis` → `/arcgis/rest/info`). */
  readonly name: string;
  /** The URL of a server hosted elsewhere; omitted for a server this deployment hosts. */
  readonly url?: string | undefined;
  readonly role?: Server["serverRole"];
}

export async function registerServer(portalId: string, spec: NewServer): Promise<Server> {
  if (!(await getPortal(portalId))) throw new AdminInputError(`no portal ${portalId}`);
  if (!SERVER_NAME.test(spec.name) || RESERVED_SERVER_NAMES.has(spec.name.toLowerCase())) {
    throw new AdminInputError(
      `server name ${JSON.stringify(spec.name)} must be a letter then letters, digits, _ or -, and not ${[...RESERVED_SERVER_NAMES].map((n) => `"${n}"`).join(", ")}`,
    );
  }
  if (spec.url !== undefined) {
    let url: URL;
    try {
      url = new URL(spec.url);
    } catch {
      throw new AdminInputError(`${spec.url} is not a URL`);
    }
    if (url.protocol !== "https:") throw new AdminInputError("a federated server's URL must use https");
  }
  const server: Server = {
    serverId: shortId(),
    portalId,
    name: spec.name,
    hosted: spec.url === undefined,
    ...(spec.url !== undefined ? { externalUrl: spec.url.replace(/\/+$/, "") } : {}),
    serverRole: spec.role ?? "FEDERATED_SERVER",
    created: Date.now(),
  };
  try {
    await createServer(server);
  } catch (err) {
    if (err instanceof Error && err.name === "ConditionalCheckFailedException") {
      throw new AdminInputError(`a hosted server named ${spec.name} exists already`);
    }
    throw err;
  }
  return server;
}

export type NewDataStore = Omit<SharedNewDataStore, "checkConnection" | "database" | "name">;

/**
 * Registers a data store by the shared rules (shared/datastore-registration.ts), a database's connection
 * proven by logging in first.
 */
export async function registerDataStore(portalId: string, spec: NewDataStore): Promise<DataStore> {
  if (!(await getPortal(portalId))) throw new AdminInputError(`no portal ${portalId}`);
  // The operator registers a store where it serves; the portal's registration adds servers after (addToServer).
  if (spec.serverIds.length === 0) throw new AdminInputError("a data store is registered with at least one server");
  try {
    return await registerSharedDataStore(portalId, { ...spec, checkConnection: true });
  } catch (err) {
    if (err instanceof DataStoreInputError) throw new AdminInputError(err.message);
    throw err;
  }
}

export async function describeOrganizations() {
  const defaultId = await getDefaultPortalId();
  const portals = await listPortals();
  return Promise.all(
    portals.map(async (portal) => ({
      ...portal,
      isDefault: portal.portalId === defaultId,
      users: (await listPortalUsers(portal.portalId)).map(({ username, role }) => ({ username, role })),
      servers: await listPortalServers(portal.portalId),
      datastores: await listPortalDataStores(portal.portalId),
    })),
  );
}

export interface NewService {
  /** A cache of a data store the service serves (as publishing would make it); none: listed only. */
  readonly cache?: { readonly store: DataStore; readonly path: string };
  readonly folder?: string;
  readonly name: string;
  readonly type: ServiceType;
  readonly capabilities?: string;
  readonly description?: string;
  readonly owner: string;
  readonly access?: Access;
  readonly extensions?: readonly ServiceExtension[];
}

const SERVICE_NAME = /^[A-Za-z0-9_]{1,120}$/;

/** Lists an existing service in a hosted server's catalog (publishing does the same for new ones). */
export async function registerService(serverId: string, spec: NewService): Promise<Service> {
  const server = await getServer(serverId);
  if (!server) throw new AdminInputError(`no server ${serverId}`);
  const folder = spec.folder ?? "";
  if (folder && !SERVICE_NAME.test(folder))
    throw new AdminInputError(`folder ${JSON.stringify(folder)} must be letters, digits or _`);
  if (!SERVICE_NAME.test(spec.name))
    throw new AdminInputError(`service name ${JSON.stringify(spec.name)} must be letters, digits or _`);
  const service: Service = {
    serverId,
    portalId: server.portalId,
    folder,
    name: spec.name,
    type: spec.type,
    capabilities: spec.capabilities ?? "",
    description: spec.description ?? "",
    tags: [],
    itemId: itemId(),
    owner: spec.owner,
    access: spec.access ?? "public",
    extensions: spec.extensions ?? [],
    created: Date.now(),
  };
  const url = restServiceUrl(serverUrl(server, ""), folder, spec.name, spec.type);
  if (!spec.cache) {
    await createService(service, serviceItem(service, url));
    return service;
  }
  const { store, path } = spec.cache;
  if (!store.location) throw new AdminInputError(`data store ${store.datastoreId} has no storage`);
  const storage = await storageAt(store.location);
  const type = await cacheTypeOf(storage, safeRelativePath(path));
  if (!type) throw new AdminInputError(`${path} is not a cache of data store ${store.datastoreId}`);
  const info = await readCacheInfo(storage, path, type);
  const served: Service = {
    ...service,
    // What the cache answers, whatever was asked for: a tile cache has no export, identify or query.
    capabilities: CACHED_CAPABILITIES[spec.type] ?? service.capabilities,
    source: { datastoreId: store.datastoreId, location: store.location, path: info.path },
  };
  await createService(served, serviceItem(served, url, { info }), info);
  return served;
}

/**
 * Gives every service, bulk-published layer and data store that has no portal item (made before items
 * existed) its item, as publishing makes them now; answers how many were made. Safe to run again.
 */
export async function backfillItems(): Promise<{ created: number }> {
  let created = 0;
  for (const portal of await listPortals()) {
    const layers = new Map<string, { datastoreId: string; path: string }>();
    for (const store of await listPortalDataStores(portal.portalId)) {
      if (await putMissingItem(dataStoreItem(store))) created++;
      await forEachPairPage(store.datastoreId, (pairs) => {
        for (const p of pairs) layers.set(p.layer.id, { datastoreId: store.datastoreId, path: p.dataset.path });
        return true;
      });
    }
    for (const server of await listPortalServers(portal.portalId)) {
      for (const service of (await readCatalog(server.serverId)).services) {
        const url = restServiceUrl(serverUrl(server, ""), service.folder, service.name, service.type);
        const info = await getServiceInfo(service);
        const pair = layers.get(service.itemId);
        const item = serviceItem(service, url, { ...(info ? { info } : {}), ...(pair ? { pair } : {}) });
        if (await putMissingItem(item)) created++;
      }
    }
  }
  return { created };
}
