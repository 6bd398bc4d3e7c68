// `npm run admin -- <command>`: operate an organization on either engine.
//   local (default): the data folder of a local engine (running or not)
//   AWS:             --stack <name>, with the operator's own AWS credentials and the stack's outputs
import { existsSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { CloudFormationClient, DescribeStacksCommand } from "@aws-sdk/client-cloudformation";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { followEvents } from "./events.ts";
import { formatMetrics, sumMetrics } from "./metrics.ts";
import { OPERATIONS_FUNCTION_ARN } from "../local/lambda.ts";
import { TABLES, tableEnvName } from "#shared/system.ts";
import { generatePassword } from "#shared/auth/passwords.ts";
import type { DataStore, Dataset } from "#shared/stores/datastores.ts";
import type { StoreLocation } from "#shared/storage/storage.ts";
import { updatePortal } from "#shared/stores/portals.ts";
import { alive, DATASTORE_SECRETS_FOLDER, markPasswordReset, openDataFolder } from "../local/data-folder.ts";
import { createTables, localTableName, startDynamo } from "../local/dynamo.ts";
import {
  AdminInputError,
  addUser,
  bootstrapOrganization,
  backfillItems,
  describeOrganizations,
  registerDataStore,
  registerServer,
  resetUserPassword,
} from "./operations.ts";

import { appRegistrationAnswer, readAppRegistration } from "#shared/oauth/apps.ts";
import { listPortalApps, registerApp } from "#shared/stores/apps.ts";
import { getUser } from "#shared/stores/users.ts";
import { listCallers } from "#shared/stores/callers.ts";
import { registerCaller, removeCaller } from "./callers.ts";

const USAGE = `usage: npm run admin -- <command> [options]

commands:
  bootstrap          --name <organization> --admin <username> [--all-ssl true] [--require-tokens true]
                     [--max-token-minutes <n>]            (password: MAPGATE_ADMIN_PASSWORD or generated)
  add-user           --portal <id> --username <name> --role org_admin|org_publisher|org_user
                                                          (password: MAPGATE_USER_PASSWORD or generated)
  reset-password     --user <name>                       (a new random password, shown once (on AWS: kept in Secrets
                                                          Manager); every token and session of the user stops
                                                          working at once; failed sign-ins and a lock are cleared)
  register-server    --portal <id> --name <path name> [--url https://…]   (no --url: hosted here at /<name>)
  register-datastore --portal <id> [--file <store.json>] [--title <t> --owner <username> --server <serverId>]
                     [--kind folder --path <absolute folder> | --kind cloudStore --bucket <name> [--prefix <p>]
                      | --postgres <postgresql://user:pw@host:port/db | ArcGIS connection string | - >]
                                                          (flags override the file; folder stores are local only;
                                                          --postgres - reads MAPGATE_POSTGRES; the password is
                                                          kept as the store's secret, never printed)
  update-portal      --portal <id> [--all-ssl true|false] [--require-tokens true|false] [--max-token-minutes <n>]
                     [--password-grant true|false]        (allow the OAuth password grant)
  register-app       --portal <id> --name <app name> --type browser|native|server --owner <username>
                     --redirect-uri <uri> [--redirect-uri <uri> …] [--exchange-without-secret]
                                                          (prints the client id; a server app's client secret
                                                          is printed once, only its hash is kept)
  list-apps          --portal <id>
  backfill-items                                          (items for what was published before items existed)
  register-caller    --portal <id> --principal <IAM role ARN> --username <member> [--role <role>]
                                                          (another AWS service calls mapgate as this member;
                                                          with --role the member is created with that role and
                                                          no usable password; prints the alias ARN to invoke)
  remove-caller      --principal <IAM role ARN>
  list-callers
  events             [--follow]                            (local: the events the bus took, one JSON per line)
  metrics            [--file <log>] [--json]               (sums the metric lines of a local engine's log, read
                                                          from the file or standard input: npm start | tee log)
  list

target (one of):
  --data-dir <folder>   a local engine's data folder (default: MAPGATE_DATA_DIR or .mapgate)
  --stack <name>        a deployed stack (AWS credentials and region from the usual AWS variables)`;

function parse() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        "data-dir": { type: "string" },
        stack: { type: "string" },
        name: { type: "string" },
        admin: { type: "string" },
        "all-ssl": { type: "string" },
        "require-tokens": { type: "string" },
        "max-token-minutes": { type: "string" },
        portal: { type: "string" },
        username: { type: "string" },
        user: { type: "string" },
        role: { type: "string" },
        url: { type: "string" },
        file: { type: "string" },
        path: { type: "string" },
        bucket: { type: "string" },
        postgres: { type: "string" },
        prefix: { type: "string" },
        title: { type: "string" },
        kind: { type: "string" },
        server: { type: "string", multiple: true },
        "password-grant": { type: "string" },
        type: { type: "string" },
        owner: { type: "string" },
        "redirect-uri": { type: "string", multiple: true },
        "exchange-without-secret": { type: "boolean" },
        principal: { type: "string" },
        follow: { type: "boolean" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  } catch (err) {
    console.error(`mapgate admin: ${(err as Error).message}\n${USAGE}`);
    process.exit(2);
  }
}

const { values, positionals } = parse();

function need(name: keyof typeof values): string {
  const v = values[name];
  if (typeof v !== "string" || v === "") throw new AdminInputError(`--${name} is required`);
  return v;
}

function flag(name: "all-ssl" | "require-tokens" | "password-grant"): boolean | undefined {
  const v = values[name];
  if (v === undefined) return undefined;
  if (v === "true" || v === "") return true;
  if (v === "false") return false;
  throw new AdminInputError(`--${name} takes true or false`);
}

function minutes(): number | undefined {
  const v = values["max-token-minutes"];
  return v === undefined ? undefined : Number(v);
}

interface NewPassword {
  readonly password: string;
  /**
   * What the command prints about it, as fields of its JSON answer. `password` holds the password and nothing else
   * (`jq -r .password` gives it), and only where it is shown once (a generated one, locally); otherwise the fields
   * say where it is (`passwordFrom` the environment variable, `passwordSecret` the secret's ARN on AWS).
   */
  readonly printed: Readonly<Record<string, string>>;
}

interface Target {
  /** The operations function's ARN (callers invoke an alias of it). */
  readonly operationsFunction: string;
  /**
   * Gives a registered caller its alias, whose resource policy allows the principal alone (AWS), or takes it
   * away; the local engine's Lambda reads the callers table instead.
   */
  alias(callerId: string, principalArn: string, present: boolean): Promise<void>;
  /**
   * A password for a user: from `envName` if set, or generated and kept (AWS, as the secret `purpose`) or shown
   * once (local).
   */
  password(username: string, envName: string | undefined, purpose?: string): Promise<NewPassword>;
  /** A local engine's data folder (undefined on AWS). */
  readonly dataDir?: string;
  /** Refuses a data store location the target's functions cannot read. */
  checkLocation(location: StoreLocation | undefined): Promise<void>;
  close(): Promise<void>;
}

const localTarget = { operationsFunction: OPERATIONS_FUNCTION_ARN, alias: async () => undefined };

/** On AWS: the caller's alias of the operations function (on $LATEST) and the permission naming its principal. */
async function callerAlias(fn: string, callerId: string, principalArn: string, present: boolean): Promise<void> {
  const { LambdaClient, CreateAliasCommand, AddPermissionCommand, DeleteAliasCommand } =
    await import("@aws-sdk/client-lambda");
  const lambda = new LambdaClient({});
  if (!present) {
    // The alias's permissions go with it.
    await lambda.send(new DeleteAliasCommand({ FunctionName: fn, Name: callerId })).catch((err: Error) => {
      if (err.name !== "ResourceNotFoundException") throw err;
    });
    return;
  }
  // Left over by an earlier attempt that failed halfway: reused, so registering again mends it.
  const leftOver = (err: Error) => {
    if (err.name !== "ResourceConflictException") throw err;
  };
  await lambda
    .send(
      new CreateAliasCommand({
        FunctionName: fn,
        Name: callerId,
        FunctionVersion: "$LATEST",
        Description: `mapgate caller ${principalArn}`.slice(0, 256),
      }),
    )
    .catch(leftOver);
  try {
    await lambda
      .send(
        new AddPermissionCommand({
          FunctionName: fn,
          Qualifier: callerId,
          StatementId: callerId,
          Action: "lambda:InvokeFunction",
          Principal: principalArn,
        }),
      )
      .catch(leftOver);
  } catch (err) {
    // No alias without its permission (and no record: the caller removes it).
    await lambda.send(new DeleteAliasCommand({ FunctionName: fn, Name: callerId })).catch(() => undefined);
    throw err;
  }
}

/** Points the shared stores at the target's tables. */
async function connect(): Promise<Target> {
  if (values.stack) {
    const cfn = new CloudFormationClient({});
    const { Stacks } = await cfn.send(new DescribeStacksCommand({ StackName: values.stack }));
    const outputs = new Map((Stacks?.[0]?.Outputs ?? []).map((o) => [o.OutputKey, o.OutputValue]));
    for (const t of TABLES) {
      const key = `Table${t.name[0]?.toUpperCase()}${t.name.slice(1)}`;
      const real = outputs.get(key);
      if (!real) throw new Error(`stack ${values.stack} has no output ${key}: is it a mapgate stack?`);
      process.env[tableEnvName(t.name)] = real;
    }
    // Database stores registered through this command keep their passwords where the stack's functions read them.
    const secretPrefix = outputs.get("DatastoreSecretPrefix");
    if (secretPrefix) process.env.DATASTORE_SECRET_PREFIX = secretPrefix;
    // And under the stack's rules: its functions' own addresses refused, TLS required (unless it allows them).
    process.env.DATASTORE_LOCAL_HOSTS = outputs.get("DatabaseLocalHosts") ?? "refuse";
    process.env.DATASTORE_TLS = outputs.get("DatabaseTls") ?? "require";
    const sm = new SecretsManagerClient({});
    // Asked for only by the caller commands: a stack deployed before callers existed still serves the others.
    const operationsFunction = outputs.get("OperationsFunctionArn") ?? "";
    return {
      operationsFunction,
      alias: (callerId, principalArn, present) => {
        if (!operationsFunction)
          throw new AdminInputError(`stack ${values.stack} has no operations function: deploy it again`);
        return callerAlias(operationsFunction, callerId, principalArn, present);
      },
      // On AWS a generated password is never printed: it is stored in Secrets Manager *before* the user
      // is created, so a failure to store it can never leave a user whose password nobody knows.
      password: async (username, envName, purpose = "initial-password"): Promise<NewPassword> => {
        const given = envName ? process.env[envName] : undefined;
        if (envName && given) return { password: given, printed: { passwordFrom: envName } };
        const password = generatePassword();
        const name = `${values.stack}/users/${username}/${purpose}`;
        const out = await sm.send(new CreateSecretCommand({ Name: name, SecretString: password }));
        return { password, printed: { passwordSecret: out.ARN ?? name } };
      },
      checkLocation: async (location) => {
        if (location && "folder" in location) {
          throw new AdminInputError("the functions of a stack mount no folder of this machine: register a cloudStore");
        }
        const granted = (outputs.get("CloudStoreBuckets") ?? "").split(",").filter(Boolean);
        if (location && "bucket" in location && !granted.includes(location.bucket)) {
          throw new AdminInputError(
            `the stack's functions may not read bucket ${location.bucket}: deploy with -c cloudStoreBuckets=${[...granted, location.bucket].join(",")} first`,
          );
        }
      },
      close: async () => undefined,
    };
  }
  const dataDir = resolve(values["data-dir"] ?? process.env.MAPGATE_DATA_DIR ?? ".mapgate");
  for (const t of TABLES) process.env[tableEnvName(t.name)] = localTableName(t.name);
  Object.assign(process.env, {
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    DATASTORE_SECRETS_DIR: join(dataDir, DATASTORE_SECRETS_FOLDER),
  });
  const password = async (_username: string, envName: string | undefined): Promise<NewPassword> => {
    const given = envName ? process.env[envName] : undefined;
    if (envName && given) return { password: given, printed: { passwordFrom: envName } };
    const generated = generatePassword();
    return {
      password: generated,
      printed: { password: generated, passwordNote: "shown only now: mapgate keeps only its hash" },
    };
  };
  const stateFile = resolve(dataDir, "engine.json");
  const state = existsSync(stateFile)
    ? (JSON.parse(readFileSync(stateFile, "utf8")) as { dynamoEndpoint: string; s3Endpoint?: string; pid: number })
    : undefined;
  if (state && alive(state.pid)) {
    // A running engine owns the folder: talk to its store (and its S3 server, for cloud stores).
    process.env.AWS_ENDPOINT_URL_DYNAMODB = state.dynamoEndpoint;
    if (state.s3Endpoint)
      Object.assign(process.env, { AWS_ENDPOINT_URL_S3: state.s3Endpoint, S3_FORCE_PATH_STYLE: "true" });
    return { ...localTarget, dataDir, password, checkLocation: async () => undefined, close: async () => undefined };
  }
  // No engine (or one that died and left its state behind): open the folder ourselves.
  const folder = await openDataFolder(dataDir, "localhost");
  const dynamo = await startDynamo(folder.dynamoPath);
  await createTables(dynamo.endpoint);
  process.env.AWS_ENDPOINT_URL_DYNAMODB = dynamo.endpoint;
  return {
    ...localTarget,
    dataDir,
    password,
    checkLocation: async () => undefined,
    close: async () => {
      await dynamo.close();
      await folder.release();
    },
  };
}

async function run(command: string): Promise<unknown> {
  const target = await connect();
  try {
    switch (command) {
      case "bootstrap": {
        const allSSL = flag("all-ssl");
        const requireTokens = flag("require-tokens");
        const max = minutes();
        const username = need("admin");
        const name = need("name");
        const secret = await target.password(username, "MAPGATE_ADMIN_PASSWORD");
        const { portal, admin } = await bootstrapOrganization({
          name,
          ...(allSSL !== undefined ? { allSSL } : {}),
          ...(requireTokens !== undefined ? { requireTokens } : {}),
          ...(max !== undefined ? { maxTokenExpirationMinutes: max } : {}),
          admin: { username, password: secret.password },
        });
        return { portal, admin: admin.username, ...secret.printed };
      }
      case "add-user": {
        const portalId = need("portal");
        const username = need("username");
        const role = need("role");
        const secret = await target.password(username, "MAPGATE_USER_PASSWORD");
        const user = await addUser(portalId, { username, role, password: secret.password });
        return { username: user.username, role: user.role, ...secret.printed };
      }
      case "reset-password": {
        const username = need("user");
        if (!(await getUser(username))) throw new AdminInputError(`no user ${username}`);
        // A timestamp names the secret on AWS: each reset keeps its own, and none overwrites the first password's.
        const stamp = new Date().toISOString().replace(/[:.]/g, "-");
        const secret = await target.password(username, undefined, `password-reset-${stamp}`);
        await resetUserPassword(username, secret.password);
        // The first start's file of demo passwords no longer holds this one: it says so instead.
        if (target.dataDir) await markPasswordReset(target.dataDir, username);
        return { username, ...secret.printed, tokens: "every earlier token and session of this user is refused" };
      }
      case "register-server":
        return await registerServer(need("portal"), { name: need("name"), url: values.url });
      case "register-datastore": {
        const spec = (values.file ? JSON.parse(readFileSync(values.file, "utf8")) : {}) as {
          title?: string;
          owner?: string;
          kind?: DataStore["kind"];
          serverIds?: string[];
          datasets?: Dataset[];
          cachedLayers?: unknown[];
          location?: StoreLocation;
        };
        if (spec.cachedLayers?.length) {
          throw new AdminInputError(
            "cachedLayers are not registered: caches are found in the store's folder or bucket (--path, --bucket)",
          );
        }
        const location: StoreLocation | undefined = values.path
          ? { folder: resolve(values.path) }
          : values.bucket
            ? { bucket: values.bucket, prefix: values.prefix ?? "" }
            : spec.location;
        // `--postgres -` reads the connection string from MAPGATE_POSTGRES, out of the process list and history.
        const postgres = values.postgres === "-" ? process.env.MAPGATE_POSTGRES : values.postgres;
        if (values.postgres === "-" && !postgres)
          throw new AdminInputError("--postgres - reads MAPGATE_POSTGRES, which is not set");
        const kind = (values.kind ??
          spec.kind ??
          (values.path ? "folder" : values.bucket ? "cloudStore" : postgres ? "database" : undefined)) as
          DataStore["kind"] | undefined;
        if (!kind || !["database", "folder", "cloudStore", "objectStore"].includes(kind)) {
          throw new AdminInputError("--kind (or the file's kind) must be database, folder, cloudStore or objectStore");
        }
        await target.checkLocation(location);
        return await registerDataStore(need("portal"), {
          title: values.title ?? spec.title ?? "",
          owner: values.owner ?? spec.owner ?? "",
          kind,
          serverIds: values.server ?? spec.serverIds ?? [],
          datasets: spec.datasets ?? [],
          ...(location ? { location } : {}),
          ...(postgres !== undefined ? { postgres } : {}),
        });
      }
      case "update-portal": {
        const allSSL = flag("all-ssl");
        const requireTokens = flag("require-tokens");
        const allowPasswordGrant = flag("password-grant");
        const max = minutes();
        if (max !== undefined && (!Number.isSafeInteger(max) || max < 1 || max > 21600)) {
          throw new AdminInputError("--max-token-minutes is 1–21600");
        }
        return await updatePortal(need("portal"), {
          ...(allSSL !== undefined ? { allSSL } : {}),
          ...(requireTokens !== undefined ? { requireTokens } : {}),
          ...(allowPasswordGrant !== undefined ? { allowPasswordGrant } : {}),
          ...(max !== undefined ? { maxTokenExpirationMinutes: max } : {}),
        });
      }
      case "register-app": {
        const portalId = need("portal");
        const owner = await getUser(need("owner"));
        if (!owner || owner.portalId !== portalId) throw new AdminInputError("--owner must be a member of --portal");
        const input = readAppRegistration({
          name: values.name,
          appType: values.type,
          redirectUris: values["redirect-uri"] ?? [],
          exchangeWithoutSecret: values["exchange-without-secret"] === true,
        });
        if (!input.ok) throw new AdminInputError(input.problems.join("\n"));
        const { app, clientSecret } = await registerApp({ ...input.value, portalId, owner: owner.username });
        return appRegistrationAnswer(app, clientSecret);
      }
      case "list-apps":
        return (await listPortalApps(need("portal"))).map((app) => appRegistrationAnswer(app, undefined));
      case "backfill-items":
        return await backfillItems();
      case "register-caller": {
        const portalId = need("portal");
        const principalArn = need("principal");
        const username = need("username");
        if (values.role) {
          // A member of its own for the caller: its password is never shown, so nobody signs in as it.
          await addUser(portalId, { username, role: values.role, password: generatePassword() });
        }
        return await registerCaller({ portalId, principalArn, username }, target);
      }
      case "remove-caller":
        return await removeCaller(need("principal"), target);
      case "list-callers":
        return await listCallers();
      case "list":
        return await describeOrganizations();
      default:
        throw new AdminInputError(`unknown command ${JSON.stringify(command)}\n${USAGE}`);
    }
  } finally {
    await target.close();
  }
}

const command = positionals[0];
if (values.help || !command) {
  console.log(USAGE);
  process.exit(command ? 0 : 2);
}
if (command === "metrics") {
  if (values.stack) {
    console.error(
      "mapgate admin: on AWS, the metrics are in CloudWatch (namespace mapgate): see the stack's dashboard (output DashboardUrl)",
    );
    process.exit(2);
  }
  const file = values.file;
  if (!file && process.stdin.isTTY) {
    console.error("mapgate admin: metrics reads a log: --file <log>, or pipe it in (npm run admin -- metrics < log)");
    process.exit(2);
  }
  const text = file ? readFileSync(resolve(file), "utf8") : readFileSync(0, "utf8");
  const summary = sumMetrics(text.split("\n"));
  console.log(values.json ? JSON.stringify(summary, null, 2) : formatMetrics(summary));
  process.exit(0);
}
if (command === "events") {
  if (values.stack) {
    console.error(
      "mapgate admin: on AWS, events are on the stack's bus (output EventBusName): add a rule with a target (CloudWatch Logs, SQS) to read them",
    );
    process.exit(2);
  }
  const dataDir = resolve(values["data-dir"] ?? process.env.MAPGATE_DATA_DIR ?? ".mapgate");
  await followEvents(dataDir, values.follow === true, (line) => process.stdout.write(`${line}\n`));
  process.exit(0);
}
try {
  console.log(JSON.stringify(await run(command), null, 2));
} catch (err) {
  if (err instanceof AdminInputError) console.error(`mapgate admin: ${err.message}`);
  else if (err instanceof Error && err.name === "ConditionalCheckFailedException")
    console.error("mapgate admin: no such portal");
  else console.error("mapgate admin:", err instanceof Error ? err.message : err);
  process.exit(2);
}
