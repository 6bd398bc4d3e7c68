// Configuration is read from the environment once, at cold start, and validated there: a function
// that is missing a variable its construct should have set fails loudly at start, not mid-request.
import { AsyncLocalStorage } from "node:async_hooks";
import { TABLES, type TableName, tableEnvName } from "#shared/system.ts";

export interface Config {
  readonly tables: Readonly<Partial<Record<TableName, string>>>;
  /** Either a Secrets Manager id (AWS) or a file path (local engine) holding the token key. */
  readonly tokenKey: { readonly secretId: string } | { readonly file: string } | undefined;
  /**
   * `PUBLIC_HTTPS_ORIGIN`: the deployment's public HTTPS origin (a custom domain, the CDN), without trailing slashes;
   * it may carry a base path. Unset: absolute URLs are built from the address each request arrived at.
   */
  readonly publicOrigin: string | undefined;
  /** The CDN's edge key (AWS, with a CDN): what proves a request came through mapgate's own distribution. */
  readonly edgeKeySecretId: string | undefined;
  readonly maxBodyBytes: number;
  /** Sign-in lockout: this many failures within the window lock the account for lockoutMs. */
  readonly signin: { readonly maxFailures: number; readonly failureWindowMs: number; readonly lockoutMs: number };
  /** The SOAP catalog's target namespace and the message format it reports. */
  readonly soap: { readonly namespace: string; readonly messageFormat: string };
  /** OAuth 2.0 lifetimes: access tokens (also the sign-in cookie's token), refresh tokens, authorization codes. */
  readonly oauth: {
    readonly accessTokenMinutes: number;
    readonly refreshTokenMinutes: number;
    readonly codeSeconds: number;
  };
  /** The jobs state machine, for functions that start executions. */
  readonly stateMachineArn: string | undefined;
  /** mapgate's EventBridge bus, for functions that raise events. */
  readonly eventBusName: string | undefined;
  /**
   * Where database stores' passwords are kept, for the functions that connect to them: Secrets Manager under a
   * name prefix (AWS), or a folder of files readable only by the engine's user (local engine).
   */
  readonly datastoreSecrets: { readonly prefix: string } | { readonly dir: string } | undefined;
  /** What users may register as data stores, and where a database connection may go. */
  readonly datastorePolicy: DataStorePolicy;
  /** Where uploaded item files are kept: the stack's bucket (AWS) or a folder (local engine). */
  readonly itemFiles: { readonly bucket: string } | { readonly dir: string } | undefined;
  /**
   * Where hosted layers' data is kept (one GeoPackage per hosted service): under `hosted/` of the item-files bucket
   * (AWS) or a folder of the data folder (local engine).
   */
  readonly hostedData: { readonly bucket: string } | { readonly dir: string } | undefined;
  /**
   * Hosted layers on a PostgreSQL + PostGIS database instead (shared/hosted/postgis-store.ts): `HOSTED_DATABASE`, a
   * libpq URI without its password, and where the password is, `HOSTED_DATABASE_SECRET_ID` (Secrets Manager: the
   * JSON RDS keeps, `{"password": …}`) or `HOSTED_DATABASE_SECRET_FILE` (the same JSON in a file of the data folder).
   */
  readonly hostedDatabase:
    { readonly uri: string; readonly secret: { readonly secretId: string } | { readonly file: string } } | undefined;
  /** How many bytes of uploaded files one member, and one organization, may keep. */
  readonly storageQuota: { readonly userBytes: number; readonly organizationBytes: number };
  /**
   * The largest file uploaded in parts, once assembled: the commit streams it within one request's time (29 s on
   * AWS), so the default stays well within what a function copies in that time.
   */
  readonly maxItemFileBytes: number;
  /**
   * A file up to this size is published within its request; a larger one by a job (shared/hosted/publish-job.ts),
   * which has 15 minutes where a request has 29 s. `PUBLISH_IN_REQUEST_MB`, 0 = every publish is a job.
   */
  readonly publishInRequestBytes: number;
}

/**
 * The stack sets the stricter side of each on AWS (where a function's loopback and link-local addresses are its
 * runtime's and the instance metadata's, and no folder of the operator's is mounted); the local engine leaves
 * them open, as its databases and folders are the operator's own machine.
 */
export interface DataStorePolicy {
  /** `DATASTORE_FOLDERS=refuse`: folder stores cannot be registered through the portal. */
  readonly folders: boolean;
  /** `DATASTORE_LOCAL_HOSTS=refuse`: a database at a loopback, link-local or unspecified address is refused. */
  readonly localHosts: boolean;
  /** `DATASTORE_TLS=require`: a database connection is encrypted (sslmode disable refused, prefer made require). */
  readonly requireTls: boolean;
  /** `CLOUD_STORE_BUCKETS=a,b`: the buckets cloud stores may name (the ones the stack grants); unset: any. */
  readonly cloudStoreBuckets: readonly string[] | undefined;
}

function choice(env: Env, name: string, strict: string): boolean {
  const raw = env[name];
  if (raw === undefined || raw === "" || raw === "allow") return false;
  if (raw === strict) return true;
  throw new Error(`${name} must be allow or ${strict}, got ${JSON.stringify(raw)}`);
}

const SOAP_FORMATS = [
  "vendorServiceCatalogMessageFormatBin",
  "vendorServiceCatalogMessageFormatSoap",
  "vendorServiceCatalogMessageFormatSoapOrBin",
];

/**
 * What an operator may tune (docs/local-engine.md, "Configuration"): environment variables locally, CDK context of
 * the same name on AWS (`-c SIGNIN_MAX_FAILURES=10`), set on every function and checked by the same rules at synth.
 */
export const TUNABLES = [
  "MAX_BODY_BYTES",
  "SIGNIN_MAX_FAILURES",
  "SIGNIN_FAILURE_WINDOW_SECONDS",
  "SIGNIN_LOCKOUT_SECONDS",
  "SOAP_NAMESPACE",
  "SOAP_MESSAGE_FORMAT",
  "OAUTH_ACCESS_TOKEN_MINUTES",
  "OAUTH_REFRESH_TOKEN_MINUTES",
  "OAUTH_CODE_SECONDS",
  "STORAGE_QUOTA_USER_MB",
  "STORAGE_QUOTA_ORGANIZATION_MB",
  "MAX_ITEM_FILE_MB",
  "PUBLISH_IN_REQUEST_MB",
] as const;

type Env = Readonly<Record<string, string | undefined>>;

function positiveInt(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return n;
}

/** A whole number from 0 to `max` (0 is a setting: none). */
function wholeUpTo(env: Env, name: string, fallback: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0 || n > max)
    throw new Error(`${name} must be a whole number from 0 to ${max}, got ${JSON.stringify(raw)}`);
  return n;
}

function bounded(env: Env, name: string, fallback: number, max: number): number {
  const n = positiveInt(env, name, fallback);
  if (n > max) throw new Error(`${name} may be at most ${max}, got ${n}`);
  return n;
}

function soapNamespace(env: Env): string {
  const ns = env.SOAP_NAMESPACE || "http://www.esri.com/schemas/ArcGIS/10.8";
  if (!/^(https?|urn):[^\s<>"&]+$/.test(ns)) throw new Error(`SOAP_NAMESPACE must be a URI, got ${JSON.stringify(ns)}`);
  return ns;
}

function soapFormat(env: Env): string {
  const f = env.SOAP_MESSAGE_FORMAT || "vendorServiceCatalogMessageFormatSoap";
  if (!SOAP_FORMATS.includes(f)) throw new Error(`SOAP_MESSAGE_FORMAT must be one of ${SOAP_FORMATS.join(", ")}`);
  return f;
}

/**
 * A public origin as `name` gave it (the functions' `PUBLIC_HTTPS_ORIGIN`, the CDK app's `-c publicOrigin`), without
 * trailing slashes: https, optionally with a path, nothing else.
 */
export function parsePublicOrigin(raw: string, name: string): string {
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url?.protocol !== "https:" || url.search || url.hash || url.username || url.password)
    throw new Error(`${name} must be an https:// origin, optionally with a path, got ${JSON.stringify(raw)}`);
  return raw.replace(/\/+$/, "");
}

/** The configuration an environment describes; throws naming the first variable that is wrong. */
export function readConfig(env: Env): Config {
  const tables: Partial<Record<TableName, string>> = {};
  for (const { name } of TABLES) {
    const v = env[tableEnvName(name)];
    if (v) tables[name] = v;
  }
  const secretId = env.TOKEN_KEY_SECRET_ID;
  const file = env.TOKEN_KEY_FILE;
  return {
    tables,
    tokenKey: secretId ? { secretId } : file ? { file } : undefined,
    // Empty means unset, as the stack and the engine leave it when there is none.
    publicOrigin: env.PUBLIC_HTTPS_ORIGIN
      ? parsePublicOrigin(env.PUBLIC_HTTPS_ORIGIN, "PUBLIC_HTTPS_ORIGIN")
      : undefined,
    edgeKeySecretId: env.EDGE_KEY_SECRET_ID || undefined,
    // A form body travels base64-encoded in Lambda's 6 MB event: past ~4.4 MB no request could reach the limit.
    maxBodyBytes: bounded(env, "MAX_BODY_BYTES", 1024 * 1024, 4_400_000),
    signin: {
      maxFailures: positiveInt(env, "SIGNIN_MAX_FAILURES", 5),
      failureWindowMs: positiveInt(env, "SIGNIN_FAILURE_WINDOW_SECONDS", 15 * 60) * 1000,
      lockoutMs: positiveInt(env, "SIGNIN_LOCKOUT_SECONDS", 15 * 60) * 1000,
    },
    soap: { namespace: soapNamespace(env), messageFormat: soapFormat(env) },
    oauth: {
      // Two weeks, as the original; at most the 15 days any token may last.
      accessTokenMinutes: bounded(env, "OAUTH_ACCESS_TOKEN_MINUTES", 14 * 24 * 60, 15 * 24 * 60),
      refreshTokenMinutes: bounded(env, "OAUTH_REFRESH_TOKEN_MINUTES", 14 * 24 * 60, 90 * 24 * 60),
      // RFC 6749 §4.1.2: codes live at most ten minutes.
      codeSeconds: bounded(env, "OAUTH_CODE_SECONDS", 120, 600),
    },
    stateMachineArn: env.STATE_MACHINE_ARN || undefined,
    eventBusName: env.EVENT_BUS_NAME || undefined,
    datastoreSecrets: env.DATASTORE_SECRET_PREFIX
      ? { prefix: env.DATASTORE_SECRET_PREFIX }
      : env.DATASTORE_SECRETS_DIR
        ? { dir: env.DATASTORE_SECRETS_DIR }
        : undefined,
    datastorePolicy: {
      folders: !choice(env, "DATASTORE_FOLDERS", "refuse"),
      localHosts: !choice(env, "DATASTORE_LOCAL_HOSTS", "refuse"),
      requireTls: choice(env, "DATASTORE_TLS", "require"),
      cloudStoreBuckets:
        env.CLOUD_STORE_BUCKETS === undefined
          ? undefined
          : env.CLOUD_STORE_BUCKETS.split(",")
              .map((b) => b.trim())
              .filter(Boolean),
    },
    itemFiles: bucketOrFolder(env, "ITEM_FILES"),
    hostedData: bucketOrFolder(env, "HOSTED_DATA"),
    hostedDatabase: hostedDatabase(env),
    storageQuota: {
      userBytes: bounded(env, "STORAGE_QUOTA_USER_MB", 2 * 1024, 1024 * 1024) * MB,
      organizationBytes: bounded(env, "STORAGE_QUOTA_ORGANIZATION_MB", 100 * 1024, 1024 * 1024 * 1024) * MB,
    },
    maxItemFileBytes: bounded(env, "MAX_ITEM_FILE_MB", 256, 5 * 1024) * MB,
    publishInRequestBytes: wholeUpTo(env, "PUBLISH_IN_REQUEST_MB", 8, 64) * MB,
  };
}

const MB = 1024 * 1024;

/** `<NAME>_BUCKET` (the stack's bucket, on AWS) or `<NAME>_DIR` (a folder of the data folder, locally). */
function bucketOrFolder(env: Env, name: string): { bucket: string } | { dir: string } | undefined {
  const bucket = env[`${name}_BUCKET`];
  const dir = env[`${name}_DIR`];
  return bucket ? { bucket } : dir ? { dir } : undefined;
}

/** `HOSTED_DATABASE` and its secret: both or neither; the URI never carries the password (it would reach logs). */
function hostedDatabase(env: Env): Config["hostedDatabase"] {
  const uri = env.HOSTED_DATABASE;
  if (!uri) return undefined;
  if (!/^postgres(?:ql)?:\/\//i.test(uri)) throw new Error("HOSTED_DATABASE must be a postgresql:// URI");
  // user:password@ is refused without repeating the value (it may be a password).
  if (/^postgres(?:ql)?:\/\/[^/@?]*:[^/@?]*@/i.test(uri))
    throw new Error("HOSTED_DATABASE must not hold a password: give it as HOSTED_DATABASE_SECRET_ID or _SECRET_FILE");
  const secretId = env.HOSTED_DATABASE_SECRET_ID;
  const file = env.HOSTED_DATABASE_SECRET_FILE;
  if (!secretId && !file)
    throw new Error("HOSTED_DATABASE needs HOSTED_DATABASE_SECRET_ID or HOSTED_DATABASE_SECRET_FILE");
  return { uri, secret: secretId ? { secretId } : { file: file as string } };
}

let cached: Config | undefined;

export function config(): Config {
  cached ??= readConfig(process.env);
  return cached;
}

/**
 * The tables the running function was granted, where one process runs many functions (the local engine runs
 * each route's handler and each workflow task inside `grants.run(...)`): there, as on AWS, where a function's
 * environment names only its own tables, a table the route does not declare is out of reach.
 */
export const grants = new AsyncLocalStorage<ReadonlySet<string>>();

/** The real name of a table this function was granted; a missing grant is a deployment fault. */
export function tableName(name: TableName): string {
  const granted = grants.getStore();
  const real = granted && !granted.has(name) ? undefined : config().tables[name];
  if (!real) throw new Error(`${tableEnvName(name)} is not set: this function was not granted the ${name} table`);
  return real;
}
