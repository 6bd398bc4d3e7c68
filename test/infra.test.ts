// The synthesized CloudFormation template holds exactly what the system description declares.
import { App, type NestedStack, Validations } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { CACHED_PATH, CDN_MAX_TTL_SECONDS, CREDENTIALS_HEADER } from "#infra/aws/cdn.ts";
import { DEFAULT_THRESHOLDS } from "#infra/aws/monitoring.ts";
import { MapgateStack } from "#infra/aws/stack.ts";
import {
  invocationFunction,
  REDELIVERY,
  ROUTES,
  routeKeys,
  SECRETS,
  TABLES,
  tableEnvName,
  WORKFLOW,
} from "#shared/system.ts";
import { readConfig, TUNABLES } from "#shared/config.ts";
import { EDGE_KEY_HEADER, VIEWER_ADDRESS_HEADER } from "#shared/http/edge.ts";
import { METRIC, NAMESPACE } from "#shared/metrics.ts";

const BUCKET = "mapgate-caches-test";

type Resource = { Type: string; Properties: Record<string, unknown> };
let template: Template;
let routesTemplate: Template;
let stack: MapgateStack;
let resources: [string, Resource][];
let synthError: unknown;

beforeAll(() => {
  // Bundling is skipped here (the synth command bundles for real); everything else is synthesized.
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  stack = new MapgateStack(app, "mapgate-test", { cloudStoreBuckets: [BUCKET] });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch (err) {
    synthError = err;
  }
  template = Template.fromStack(stack);
  routesTemplate = Template.fromStack(routesOf(stack));
  // The routes' nested stack and the parent, read as one: where a resource lives is the next test's business.
  resources = [template, routesTemplate].flatMap((t) =>
    Object.entries(t.toJSON().Resources as Record<string, Resource>),
  );
  // Synthesizing the stack with cdk-nag takes ~20 s alone, minutes on cores other suites share.
}, 300_000);

function routesOf(s: MapgateStack) {
  if (!s.routes) throw new Error("the stack made no routes' stack");
  return s.routes;
}

const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);

/** What a function may do with data stores' passwords (the stack's rule, restated). */
const secretsLevel = (spec: { readsStorage?: boolean; datastoreSecrets?: "read" | "write" }) =>
  spec.datastoreSecrets === "write"
    ? "write"
    : spec.readsStorage || spec.datastoreSecrets === "read"
      ? "read"
      : undefined;
/** The variables set beside those grants: the secrets' prefix and the rules of registration on AWS. */
const DATASTORE_ENV = [
  "DATASTORE_SECRET_PREFIX",
  "DATASTORE_FOLDERS",
  "DATASTORE_LOCAL_HOSTS",
  "DATASTORE_TLS",
  "CLOUD_STORE_BUCKETS",
];
/** A policy statement on the item-files bucket's objects (its resource names the bucket by its logical id). */
const itemFilesStatement = (st: { Resource: unknown }) =>
  JSON.stringify(st.Resource).includes("ItemFiles") && JSON.stringify(st.Resource).includes("/items/*");
/** A policy statement on the hosted layers' data (`hosted/` of the same bucket). */
const hostedDataStatement = (st: { Resource: unknown }) =>
  JSON.stringify(st.Resource).includes("ItemFiles") && JSON.stringify(st.Resource).includes("/hosted/*");
const objectActions = (level: "read" | "write" | undefined, parts = false) =>
  level === "write"
    ? [["s3:GetObject", "s3:PutObject", "s3:DeleteObject", ...(parts ? ["s3:AbortMultipartUpload"] : [])]]
    : level === "read"
      ? ["s3:GetObject"]
      : [];
/** The listing of the item-files bucket a writer of uploaded files gets (an item's parts), under `items/` alone. */
const itemPartsListing = (st: { Action: unknown; Resource: unknown }) =>
  st.Action === "s3:ListBucket" && JSON.stringify(st.Resource).includes("ItemFiles");
const pascal = (id: string) => id.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

function functionFor(routeId: string): Resource {
  const found = ofType("AWS::Lambda::Function").find(([id]) => id.startsWith(`${pascal(routeId)}Function`));
  if (!found) throw new Error(`no function for ${routeId}`);
  return found[1];
}

describe("infrastructure", () => {
  it("passes cdk-nag's AwsSolutions checks", () => {
    expect(synthError).toBeUndefined();
  });

  it("declares every table with its keys, indexes, TTL, point-in-time recovery and encryption", () => {
    const tables = ofType("AWS::DynamoDB::GlobalTable").map(([, r]) => r.Properties);
    expect(tables).toHaveLength(TABLES.length);
    for (const spec of TABLES) {
      const t = tables.find(
        (p) =>
          (p.KeySchema as { AttributeName: string; KeyType: string }[]).some(
            (k) => k.KeyType === "HASH" && k.AttributeName === spec.partitionKey,
          ) &&
          ((p.GlobalSecondaryIndexes as { IndexName: string }[] | undefined) ?? []).map((i) => i.IndexName).join() ===
            ("indexes" in spec ? spec.indexes.map((i) => i.name).join() : ""),
      );
      expect(t, spec.name).toBeDefined();
      expect(t?.BillingMode).toBe("PAY_PER_REQUEST");
      expect(t?.SSESpecification).toEqual({ SSEEnabled: true, SSEType: "KMS" });
      const replica = (t?.Replicas as Record<string, unknown>[] | undefined)?.[0];
      expect(replica?.PointInTimeRecoverySpecification).toEqual({ PointInTimeRecoveryEnabled: true });
      expect(replica?.DeletionProtectionEnabled).toBe(true);
      if ("ttlAttribute" in spec) {
        expect(t?.TimeToLiveSpecification).toEqual({ AttributeName: spec.ttlAttribute, Enabled: true });
      }
    }
  });

  it("routes every declared path and method (and $default) to its own function", () => {
    const keys = ofType("AWS::ApiGatewayV2::Route").map(([, r]) => r.Properties.RouteKey);
    // A path's GET and POST are one ANY route (the pipeline answers OPTIONS and refuses other methods); an
    // alias (`alsoAt`) is one more route of its own.
    const expected = ROUTES.flatMap((r) => {
      const own = r.methods;
      if (own === "$default") return ["$default"];
      // An alias with methods of its own (a POST-only edit operation) takes only those.
      return [r.path, ...(r.alsoAt ?? [])].flatMap((alias) => {
        const path = typeof alias === "string" ? alias : alias.path;
        const methods = typeof alias === "string" ? own : alias.methods;
        return methods.includes("GET") && methods.includes("POST")
          ? [`ANY ${path}`]
          : methods.map((m) => `${m} ${path}`);
      });
    });
    // An alias reaches the same function as its route: one integration per function, not per route.
    const integrationsOf = new Map<string, Set<string>>();
    for (const [, r] of ofType("AWS::ApiGatewayV2::Route")) {
      const spec = ROUTES.find((s) => routeKeys(s).includes(String(r.Properties.RouteKey)));
      if (spec)
        integrationsOf.set(
          spec.id,
          (integrationsOf.get(spec.id) ?? new Set()).add(JSON.stringify(r.Properties.Target)),
        );
    }
    for (const [id, targets] of integrationsOf) expect(targets.size, id).toBe(1);
    expect(ROUTES.filter((r) => r.alsoAt).map((r) => r.id)).toEqual(
      expect.arrayContaining(["oauth-authorize", "oauth-token", "services-directory", "datastore-get-layers"]),
    );
    expect([...keys].sort()).toEqual([...expected].sort());
    // Routes, workflow tasks, the operations function and events-redeliver.
    expect(ofType("AWS::Lambda::Function")).toHaveLength(ROUTES.length + WORKFLOW.tasks.length + 2);
    const integrations = ofType("AWS::ApiGatewayV2::Integration").map(([, r]) => r.Properties);
    for (const i of integrations) expect(i.PayloadFormatVersion).toBe("2.0");
  });

  it("gives each function one invoke permission, for this API only, so the stack stays under 500 resources", () => {
    const all = ofType("AWS::Lambda::Permission").map(([, r]) => r.Properties);
    // Besides the API's: the schedule's, for events-redeliver alone.
    const scheduled = all.filter((p) => p.Principal === "events.amazonaws.com");
    expect(scheduled.map((p) => JSON.stringify(p.FunctionName))).toEqual([
      expect.stringContaining(`${pascal(REDELIVERY.id)}Function`),
    ]);
    const permissions = all.filter((p) => p.Principal !== "events.amazonaws.com");
    expect(permissions).toHaveLength(ROUTES.length);
    for (const p of permissions) {
      expect(p.Principal).toBe("apigateway.amazonaws.com");
      // The $default route is invoked as `<api>/<stage>/$default`: its permission is `<api>/*/*`, the others'
      // `<api>/*/*/*` (any stage, method and path of this API).
      const fn = JSON.stringify(p.FunctionName);
      expect(JSON.stringify(p.SourceArn)).toMatch(fn.includes("NotFound") ? /\/\*\/\*"/ : /\/\*\/\*\/\*"/);
    }
    // CloudFormation refuses a stack of more than 500 resources. The routes, their integrations and the functions'
    // permissions are in a nested stack of their own (infra/aws/api.ts), the parent keeps the functions; each
    // function passes its ARN to the routes' stack as a parameter (CloudFormation takes at most 200).
    const count = (t: Template) => Object.keys(t.toJSON().Resources as object).length;
    const inRoutes = routesTemplate.toJSON() as { Resources: Record<string, Resource>; Parameters: object };
    expect(
      Object.values(inRoutes.Resources)
        .map((r) => r.Type)
        .filter(
          (t) =>
            !t.startsWith("AWS::ApiGatewayV2::Route") &&
            t !== "AWS::ApiGatewayV2::Integration" &&
            t !== "AWS::Lambda::Permission",
        ),
    ).toEqual([]);
    expect(count(template)).toBeLessThan(400);
    expect(count(routesTemplate)).toBeLessThan(400);
    expect(Object.keys(inRoutes.Parameters).length).toBeLessThan(150);
    // An HTTP API takes at most 300 routes (a quota AWS may raise) and 300 integrations (one it does not).
    expect(ofType("AWS::ApiGatewayV2::Route").length).toBeLessThan(250);
    expect(ofType("AWS::ApiGatewayV2::Integration").length).toBeLessThan(250);
  });

  it("runs each function on nodejs24.x arm64 with its tables' names and the token key's id, and nothing more", () => {
    for (const route of ROUTES) {
      const fn = functionFor(route.id).Properties;
      expect(fn.Runtime).toBe("nodejs24.x");
      expect(fn.Architectures).toEqual(["arm64"]);
      const env = (fn.Environment as { Variables: Record<string, unknown> }).Variables;
      const expectedEnv = [
        ...Object.keys(route.tables).map(tableEnvName),
        ...route.secrets.map((s) => SECRETS[s].env),
        ...(route.startsWorkflow ? ["STATE_MACHINE_ARN"] : []),
        ...(route.emits ? ["EVENT_BUS_NAME"] : []),
        ...(secretsLevel(route) ? DATASTORE_ENV : []),
        ...(route.itemFiles ? ["ITEM_FILES_BUCKET"] : []),
        ...(route.hostedData ? ["HOSTED_DATA_BUCKET"] : []),
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_LOG_LEVEL",
        // The metrics' Stack dimension, and the CDN's origin (absolute URLs point at it: no custom domain here) and
        // edge key (viewer addresses through it).
        "MAPGATE_STACK",
        "PUBLIC_HTTPS_ORIGIN",
        "EDGE_KEY_SECRET_ID",
      ];
      expect(Object.keys(env).sort()).toEqual(expectedEnv.sort());
      // No source maps parsed at start (they ship beside the bundle for reading traces later).
      expect(env).not.toHaveProperty("NODE_OPTIONS");
      expect(fn.LoggingConfig).toBeDefined();
    }
  });

  it("grants each function only the table access its route declares", () => {
    const policies = ofType("AWS::IAM::Policy");
    for (const route of ROUTES) {
      const policy = policies.find(([id]) => id.startsWith(`${pascal(route.id)}RoleDefaultPolicy`));
      if (!policy) throw new Error(`no policy for ${route.id}`);
      const statements = (policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[] }[] })
        .Statement;
      const actions = statements.flatMap((s) => (Array.isArray(s.Action) ? s.Action : [s.Action]));
      const writes = actions.filter((a) => /^dynamodb:(PutItem|UpdateItem|DeleteItem|BatchWriteItem)$/.test(a));
      const writesDeclared = Object.values(route.tables).includes("write");
      expect(writes.length > 0, route.id).toBe(writesDeclared);
      expect(actions.some((a) => a === "*" || a === "dynamodb:*")).toBe(false);
    }
    // No function uses the broad managed execution policy.
    for (const [, role] of ofType("AWS::IAM::Role")) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it("creates the event bus; only functions that raise events may put on it, and on it alone", () => {
    const buses = ofType("AWS::Events::EventBus");
    expect(buses).toHaveLength(1);
    const busId = buses[0]?.[0] ?? "";
    const emitters = new Set(
      [...ROUTES, ...WORKFLOW.tasks, invocationFunction(), REDELIVERY].filter((f) => f.emits).map((f) => pascal(f.id)),
    );
    const putters = new Set<string>();
    const answerers = new Set<string>();
    // CDK moves statements past IAM's inline limit to managed policies attached to the same role.
    for (const [id, policy] of [...ofType("AWS::IAM::Policy"), ...ofType("AWS::IAM::ManagedPolicy")]) {
      const statements = (policy.Properties.PolicyDocument as { Statement: { Action: unknown; Resource: unknown }[] })
        .Statement;
      for (const st of statements) {
        const actions = [st.Action].flat() as string[];
        if (actions.some((a) => a.startsWith("events:"))) {
          expect(actions).toEqual(["events:PutEvents"]);
          expect(st.Resource).toEqual({ "Fn::GetAtt": [busId, "Arn"] });
          putters.add(id.replace(/Role(DefaultPolicy|OverflowPolicy).*$/, ""));
        }
        if (actions.some((a) => a.startsWith("states:SendTask"))) {
          expect(actions.sort()).toEqual(["states:SendTaskFailure", "states:SendTaskSuccess"]);
          answerers.add(id.replace(/Role(DefaultPolicy|OverflowPolicy).*$/, ""));
        }
      }
    }
    expect(putters).toEqual(emitters);
    expect([...answerers].sort()).toEqual(["Operations", "TaskNotifyCaller"]);
    // The job tasks that end jobs raise events; so do the routes that start them, change roles or lock sign-ins.
    expect(emitters).toContain("TaskCompleteJob");
    expect(emitters).toContain("RoleCreate");
    expect(emitters).toContain("GenerateToken");
  });

  it("outputs what callers and operators need: the operations function, the bus; and schedules redelivery", () => {
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(JSON.stringify(outputs.OperationsFunctionArn?.Value)).toContain("OperationsFunction");
    expect(JSON.stringify(outputs.EventBusName?.Value)).toContain("Events");
    expect(outputs.EventSource?.Value).toBe("mapgate");
    const operations = functionFor("operations").Properties;
    const env = (operations.Environment as { Variables: Record<string, unknown> }).Variables;
    expect(Object.keys(env)).toEqual(expect.arrayContaining(["TABLE_CALLERS", "STATE_MACHINE_ARN", "EVENT_BUS_NAME"]));
    const rules = ofType("AWS::Events::Rule").map(([, r]) => r.Properties);
    expect(rules).toEqual([expect.objectContaining({ ScheduleExpression: "rate(1 minute)" })]);
    // No route reaches the operations function: only the aliases register-caller makes.
    const apiTargets = JSON.stringify(ofType("AWS::ApiGatewayV2::Integration"));
    expect(apiTargets).not.toContain("OperationsFunction");
  });

  it("keeps uploaded files in a private bucket of its own, reached only by the functions declaring them", () => {
    const buckets = ofType("AWS::S3::Bucket").filter(([id]) => id.startsWith("ItemFiles"));
    expect(buckets).toHaveLength(1);
    expect(buckets[0]?.[1].Properties).toMatchObject({
      PublicAccessBlockConfiguration: {
        BlockPublicAcls: true,
        BlockPublicPolicy: true,
        IgnorePublicAcls: true,
        RestrictPublicBuckets: true,
      },
      BucketEncryption: {
        ServerSideEncryptionConfiguration: [{ ServerSideEncryptionByDefault: { SSEAlgorithm: "AES256" } }],
      },
    });
    const policies = ofType("AWS::IAM::Policy");
    for (const spec of ROUTES) {
      const policy = policies.find(([id]) => id.startsWith(`${pascal(spec.id)}RoleDefaultPolicy`));
      const statements = ((
        policy?.[1].Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }
      )?.Statement ?? []) as { Action: string | string[]; Resource: unknown }[];
      expect(
        statements.filter(itemFilesStatement).map((st) => st.Action),
        spec.id,
      ).toEqual(objectActions(spec.itemFiles, true));
      // Listings of the bucket, each under one prefix: an item's parts (item-files writers), a service's attachments
      // (hosted-data writers: removed with the service).
      expect(statements.filter(itemPartsListing), spec.id).toEqual([
        ...(spec.itemFiles === "write"
          ? [expect.objectContaining({ Condition: { StringLike: { "s3:prefix": ["items/*"] } } })]
          : []),
        ...(spec.hostedData === "write"
          ? [expect.objectContaining({ Condition: { StringLike: { "s3:prefix": ["hosted/*"] } } })]
          : []),
      ]);
      expect(
        statements.filter(hostedDataStatement).map((st) => st.Action),
        spec.id,
      ).toEqual(objectActions(spec.hostedData));
    }
  });

  it("grants read access to the cloud stores' buckets only to the functions that read data stores' content", () => {
    const policies = ofType("AWS::IAM::Policy");
    const readers = [...ROUTES, ...WORKFLOW.tasks].filter((r) => r.readsStorage).map((r) => r.id);
    expect(readers).toEqual(
      expect.arrayContaining([
        "service",
        "datastore-describe",
        "datastore-publish",
        "task-describe",
        "task-publish-service",
      ]),
    );
    for (const spec of [...ROUTES, ...WORKFLOW.tasks]) {
      const policy = policies.find(([id]) => id.startsWith(`${pascal(spec.id)}RoleDefaultPolicy`));
      if (!policy) throw new Error(`no policy for ${spec.id}`);
      const statements = (
        policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }
      ).Statement.filter(
        (st) =>
          JSON.stringify(st.Action).includes("s3:") &&
          !itemFilesStatement(st) &&
          !hostedDataStatement(st) &&
          !itemPartsListing(st),
      );
      if (!spec.readsStorage) {
        expect(statements, spec.id).toEqual([]);
        continue;
      }
      expect(statements, spec.id).toEqual([
        expect.objectContaining({ Action: "s3:ListBucket", Resource: `arn:aws:s3:::${BUCKET}` }),
        expect.objectContaining({ Action: "s3:GetObject", Resource: `arn:aws:s3:::${BUCKET}/*` }),
      ]);
    }
    expect(template.toJSON().Outputs.CloudStoreBuckets.Value).toBe(BUCKET);
  });

  it("gives the functions that read data stores or write hosted data 2 GB of temporary storage, the others the default", () => {
    for (const spec of [...ROUTES, ...WORKFLOW.tasks]) {
      const fn = functionFor(spec.id).Properties;
      const stages = spec.readsStorage || spec.hostedData === "write";
      expect(fn.EphemeralStorage, spec.id).toEqual(stages ? { Size: 2048 } : undefined);
    }
  });

  it("lets the functions that connect read database stores' passwords, and those that register write them, under the stack's prefix only", () => {
    const policies = ofType("AWS::IAM::Policy");
    const prefix = template.toJSON().Outputs.DatastoreSecretPrefix.Value as string;
    expect(prefix).toMatch(/\/datastores\/$/);
    // The operator command registers for the stack under the same rules (infra/admin/cli.ts reads these).
    expect(template.toJSON().Outputs.DatabaseLocalHosts.Value).toBe("refuse");
    expect(template.toJSON().Outputs.DatabaseTls.Value).toBe("require");
    const levels = new Map<string, string | undefined>();
    for (const spec of [...ROUTES, ...WORKFLOW.tasks]) {
      const policy = policies.find(([id]) => id.startsWith(`${pascal(spec.id)}RoleDefaultPolicy`));
      if (!policy) throw new Error(`no policy for ${spec.id}`);
      const all = (
        policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }
      ).Statement;
      // Secrets Manager is never granted on `*`: the token key's ARN, or the data stores' prefix.
      for (const st of all.filter((x) => JSON.stringify(x.Action).includes("secretsmanager:")))
        expect(JSON.stringify(st.Resource), spec.id).not.toBe('"*"');
      const statements = all.filter((st) => JSON.stringify(st.Resource).includes("/datastores/"));
      const level = secretsLevel(spec);
      levels.set(spec.id, level);
      if (!level) {
        expect(statements, spec.id).toEqual([]);
        continue;
      }
      expect(statements, spec.id).toHaveLength(1);
      expect(statements[0]?.Action, spec.id).toEqual(
        level === "read"
          ? "secretsmanager:GetSecretValue"
          : ["secretsmanager:CreateSecret", "secretsmanager:PutSecretValue", "secretsmanager:DeleteSecret"],
      );
      expect(JSON.stringify(statements[0]?.Resource)).toContain(`:secret:${prefix}*`);
      const env = (functionFor(spec.id).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env, spec.id).toMatchObject({
        DATASTORE_FOLDERS: "refuse",
        DATASTORE_LOCAL_HOSTS: "refuse",
        DATASTORE_TLS: "require",
        CLOUD_STORE_BUCKETS: BUCKET,
      });
    }
    // Registering, changing and deleting a store's item write its secret; validating and serving read it.
    expect(levels.get("item-add")).toBe("write");
    expect(levels.get("item-update")).toBe("write");
    expect(levels.get("item-delete")).toBe("write");
    expect(levels.get("datastore-manage")).toBe("read");
    expect(levels.get("task-publish-layers")).toBe("read");
    expect(levels.get("item-get")).toBeUndefined();
  });

  it("keeps function logs and access logs with a retention, and logs API access", () => {
    for (const [, lg] of ofType("AWS::Logs::LogGroup")) expect(lg.Properties.RetentionInDays).toBe(30);
    const stage = ofType("AWS::ApiGatewayV2::Stage")[0]?.[1].Properties;
    expect(stage?.StageName).toBe("$default");
    expect((stage?.AccessLogSettings as { Format: string } | undefined)?.Format).toContain("$context.requestId");
  });

  it("keeps the token key in Secrets Manager, retained with the tables when the stack is deleted", () => {
    const secrets = Object.entries(template.toJSON().Resources as Record<string, Record<string, unknown>>).filter(
      ([, r]) => r.Type === "AWS::SecretsManager::Secret",
    );
    // The token key, and the CDN's edge key (see below).
    expect(secrets).toHaveLength(2);
    const [, secret] =
      secrets.find(([, s]) =>
        JSON.stringify((s.Properties as Record<string, unknown>).GenerateSecretString).includes(
          '"GenerateStringKey":"k"',
        ),
      ) ?? [];
    expect((secret?.Properties as Record<string, unknown>).GenerateSecretString).toMatchObject({
      GenerateStringKey: "k",
    });
    expect([secret?.DeletionPolicy, secret?.UpdateReplacePolicy]).toEqual(["Retain", "Retain"]);
    for (const [, table] of Object.entries(template.toJSON().Resources as Record<string, Record<string, unknown>>)) {
      if (table.Type === "AWS::DynamoDB::GlobalTable") expect(table.DeletionPolicy).toBe("Retain");
    }
  });

  it("sets the README's tunables from CDK context on every function, and refuses bad values at synth", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const tuned = new MapgateStack(app, "mapgate-tuned", {
      tunables: { SIGNIN_MAX_FAILURES: "10", OAUTH_CODE_SECONDS: "300" },
    });
    const functions = Object.values(Template.fromStack(tuned).toJSON().Resources as Record<string, Resource>).filter(
      (r) => r.Type === "AWS::Lambda::Function",
    );
    expect(functions).toHaveLength(ROUTES.length + WORKFLOW.tasks.length + 2);
    for (const fn of functions) {
      expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
        SIGNIN_MAX_FAILURES: "10",
        OAUTH_CODE_SECONDS: "300",
      });
    }
    expect([...TUNABLES].sort()).toEqual(
      ["MAX_BODY_BYTES", "OAUTH_ACCESS_TOKEN_MINUTES", "OAUTH_CODE_SECONDS", "OAUTH_REFRESH_TOKEN_MINUTES"]
        .concat(["SIGNIN_FAILURE_WINDOW_SECONDS", "SIGNIN_LOCKOUT_SECONDS", "SIGNIN_MAX_FAILURES"])
        .concat(["SOAP_MESSAGE_FORMAT", "SOAP_NAMESPACE", "STORAGE_QUOTA_ORGANIZATION_MB", "STORAGE_QUOTA_USER_MB"])
        .concat(["MAX_ITEM_FILE_MB", "PUBLISH_IN_REQUEST_MB"])
        .sort(),
    );
    // The synth command checks context values with the functions' own rules (infra/aws/app.ts).
    expect(() => readConfig({ OAUTH_CODE_SECONDS: "900" })).toThrow(/OAUTH_CODE_SECONDS may be at most 600/);
    expect(() => readConfig({ SIGNIN_MAX_FAILURES: "-1" })).toThrow(/SIGNIN_MAX_FAILURES must be a positive/);
    expect(readConfig({ PUBLIC_HTTPS_ORIGIN: "https://gis.example.com/maps//" }).publicOrigin).toBe(
      "https://gis.example.com/maps",
    );
    for (const bad of [
      "http://gis.example.com",
      "gis.example.com",
      "https://gis.example.com/?a=1",
      "https://u:p@x.test",
    ])
      expect(() => readConfig({ PUBLIC_HTTPS_ORIGIN: bad })).toThrow(/PUBLIC_HTTPS_ORIGIN must be an https/);
    // The hosting database: a URI without its password, and where the password is (never in the URI: logs).
    expect(
      readConfig({ HOSTED_DATABASE: "postgresql://mapgate@proxy.test:5432/gis", HOSTED_DATABASE_SECRET_ID: "arn:s" })
        .hostedDatabase,
    ).toEqual({ uri: "postgresql://mapgate@proxy.test:5432/gis", secret: { secretId: "arn:s" } });
    expect(() =>
      readConfig({ HOSTED_DATABASE: "postgresql://mapgate:s3cret@db/gis", HOSTED_DATABASE_SECRET_FILE: "/x" }),
    ).toThrow(/^HOSTED_DATABASE must not hold a password: give it as HOSTED_DATABASE_SECRET_ID or _SECRET_FILE$/);
    expect(() => readConfig({ HOSTED_DATABASE: "postgresql://mapgate@db/gis" })).toThrow(
      /needs HOSTED_DATABASE_SECRET/,
    );
    expect(() => readConfig({ HOSTED_DATABASE: "mysql://db/gis", HOSTED_DATABASE_SECRET_FILE: "/x" })).toThrow(
      /must be a postgresql:\/\/ URI/,
    );
    expect(readConfig({}).hostedDatabase).toBeUndefined();
  });
});

describe("infrastructure in the databases' VPC", () => {
  const VPC = {
    vpcId: "vpc-0a1b2c3d",
    subnetIds: ["subnet-0a1", "subnet-0b2"],
    securityGroupId: "sg-0c3d4e5f6a7b8c9d0",
    routeTableIds: ["rtb-0e4", "rtb-0e4"],
  };
  let vpcResources: [string, Resource][];
  let vpcError: unknown;

  beforeAll(() => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new MapgateStack(app, "mapgate-vpc", { cloudStoreBuckets: [BUCKET], databaseVpc: VPC });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    try {
      app.synth();
    } catch (err) {
      vpcError = err;
    }
    vpcResources = Object.entries(Template.fromStack(stack).toJSON().Resources as Record<string, Resource>);
  });

  const of = (type: string) => vpcResources.filter(([, r]) => r.Type === type);
  const fnOf = (id: string) => of("AWS::Lambda::Function").find(([rid]) => rid.startsWith(`${pascal(id)}Function`));
  /** The functions that connect to databases or read data stores' content: the ones in the VPC. */
  // events-redeliver too: it asks a registered database whether an edit's transaction committed.
  const connecting = [...ROUTES, ...WORKFLOW.tasks, invocationFunction(), REDELIVERY].filter(
    (s) => s.readsStorage || ("datastoreSecrets" in s && s.datastoreSecrets === "read"),
  );

  it("passes cdk-nag's AwsSolutions checks and stays under CloudFormation's 500 resources", () => {
    expect(vpcError).toBeUndefined();
    expect(vpcResources.length).toBeLessThan(470);
  });

  it("puts exactly the functions that connect to databases in the given subnets, with the given security group", () => {
    expect(connecting.map((s) => s.id)).toEqual(
      expect.arrayContaining(["service", "datastore-manage", "task-describe", "task-publish-layers", "operations"]),
    );
    const inVpc = new Set(connecting.map((s) => s.id));
    for (const spec of [...ROUTES, ...WORKFLOW.tasks, invocationFunction(), REDELIVERY]) {
      const fn = fnOf(spec.id)?.[1].Properties;
      if (!inVpc.has(spec.id)) {
        expect(fn?.VpcConfig, spec.id).toBeUndefined();
        continue;
      }
      expect(fn?.VpcConfig, spec.id).toEqual({ SubnetIds: VPC.subnetIds, SecurityGroupIds: [VPC.securityGroupId] });
      // Lambda manages their network interfaces: granted inline (no managed policy), to them alone.
      const policy = of("AWS::IAM::Policy").find(([id]) => id.startsWith(`${pascal(spec.id)}RoleDefaultPolicy`));
      expect(JSON.stringify(policy?.[1].Properties.PolicyDocument), spec.id).toContain("ec2:CreateNetworkInterface");
    }
    for (const [id, policy] of of("AWS::IAM::Policy")) {
      const owner = connecting.find((s) => id.startsWith(`${pascal(s.id)}Role`));
      if (!owner) expect(JSON.stringify(policy.Properties.PolicyDocument), id).not.toContain("ec2:");
    }
    for (const [, role] of of("AWS::IAM::Role")) expect(role.Properties.ManagedPolicyArns).toBeUndefined();
  });

  it("reaches DynamoDB and S3 by gateway endpoints, Secrets Manager, Step Functions and EventBridge by interface endpoints", () => {
    const endpoints = of("AWS::EC2::VPCEndpoint").map(([, r]) => r.Properties);
    const gateways = endpoints.filter((e) => e.VpcEndpointType === "Gateway");
    expect(gateways.map((e) => JSON.stringify(e.ServiceName)).sort()).toEqual([
      expect.stringContaining(".dynamodb"),
      expect.stringContaining(".s3"),
    ]);
    for (const g of gateways) {
      expect(g.VpcId).toBe(VPC.vpcId);
      expect(g.RouteTableIds).toEqual(["rtb-0e4"]);
    }
    const interfaces = endpoints.filter((e) => e.VpcEndpointType === "Interface");
    expect(interfaces.map((e) => JSON.stringify(e.ServiceName)).sort()).toEqual([
      expect.stringContaining(".events"),
      expect.stringContaining(".secretsmanager"),
      expect.stringContaining(".states"),
    ]);
    for (const i of interfaces) {
      expect(i).toMatchObject({
        VpcId: VPC.vpcId,
        SubnetIds: VPC.subnetIds,
        SecurityGroupIds: [VPC.securityGroupId],
        PrivateDnsEnabled: true,
      });
    }
    // No security group or rule is made: the given group is the operator's.
    expect(of("AWS::EC2::SecurityGroup")).toEqual([]);
    expect(of("AWS::EC2::SecurityGroupIngress")).toEqual([]);
  });

  it("makes no endpoint when told the VPC has its own, and refuses ids that are not ids", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new MapgateStack(app, "mapgate-vpc-own", { databaseVpc: { ...VPC, endpoints: false } });
    const own = Object.values(Template.fromStack(stack).toJSON().Resources as Record<string, Resource>);
    expect(own.filter((r) => r.Type === "AWS::EC2::VPCEndpoint")).toEqual([]);
    expect(own.filter((r) => r.Type === "AWS::Lambda::Function" && r.Properties.VpcConfig !== undefined)).toHaveLength(
      connecting.length,
    );
    const bad = (databaseVpc: typeof VPC) =>
      new MapgateStack(new App({ context: { "aws:cdk:bundling-stacks": [] } }), "bad", { databaseVpc });
    expect(() => bad({ ...VPC, vpcId: "my-vpc" })).toThrow(/not a VPC id/);
    expect(() => bad({ ...VPC, subnetIds: [] })).toThrow(/subnet/);
    expect(() => bad({ ...VPC, securityGroupId: "default" })).toThrow(/security group/);
    expect(() => bad({ ...VPC, routeTableIds: [] })).toThrow(/route tables/);
  });

  it("puts an RDS Proxy (TLS required, its own login's secret) in front of one instance when asked, cdk-nag clean", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const secretArn = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:gis/proxy-login-AbCdEf";
    const databaseProxy = {
      instanceIdentifier: "gis-db",
      endpoint: "gis-db.abc.eu-west-1.rds.amazonaws.com",
      port: 5432,
      secretArn,
    };
    const stack = new MapgateStack(app, "mapgate-proxy", { databaseVpc: VPC, databaseProxy });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
    const json = Template.fromStack(stack).toJSON();
    const all = Object.values(json.Resources as Record<string, Resource>);
    const proxies = all.filter((r) => r.Type === "AWS::RDS::DBProxy").map((r) => r.Properties);
    expect(proxies).toEqual([
      expect.objectContaining({
        EngineFamily: "POSTGRESQL",
        RequireTLS: true,
        VpcSubnetIds: VPC.subnetIds,
        VpcSecurityGroupIds: [VPC.securityGroupId],
        Auth: [expect.objectContaining({ AuthScheme: "SECRETS", IAMAuth: "DISABLED", SecretArn: secretArn })],
      }),
    ]);
    const group = all.find((r) => r.Type === "AWS::RDS::DBProxyTargetGroup")?.Properties;
    expect(group).toMatchObject({
      DBInstanceIdentifiers: ["gis-db"],
      ConnectionPoolConfigurationInfo: expect.objectContaining({ MaxConnectionsPercent: 50 }),
    });
    expect(JSON.stringify(json.Outputs.DatabaseProxyEndpoint.Value)).toContain("DatabaseProxy");
    expect(all.length).toBeLessThan(470);
    const bad = (p: Partial<typeof databaseProxy>, vpc = true) =>
      new MapgateStack(new App({ context: { "aws:cdk:bundling-stacks": [] } }), "bad", {
        ...(vpc ? { databaseVpc: VPC } : {}),
        databaseProxy: { ...databaseProxy, ...p },
      });
    expect(() => bad({}, false)).toThrow(/give databaseVpc too/);
    expect(() => bad({ secretArn: "gis/proxy-login" })).toThrow(/complete ARN/);
    expect(() => bad({ port: 0 })).toThrow(/not a port/);
  });

  it("hosts layers' data on Aurora Serverless v2 (0 ACU) behind RDS Proxy in a nested stack, reached by the hosting functions in the VPC", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new MapgateStack(app, "mapgate-hosting", { databaseVpc: VPC, hosting: {} });
    Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
    expect(() => app.synth()).not.toThrow();
    const json = Template.fromStack(stack).toJSON();
    const all = Object.entries(json.Resources as Record<string, Resource>);
    // The cluster and the proxy are in the nested stack: the parent gains the nested stack alone.
    expect(all.filter(([, r]) => r.Type.startsWith("AWS::RDS::"))).toEqual([]);
    expect(all.length).toBeLessThan(470);
    const hostingStack = stack.node.findChild("Hosting") as NestedStack;
    const nested = Object.values(Template.fromStack(hostingStack).toJSON().Resources as Record<string, Resource>);
    const cluster = nested.find((r) => r.Type === "AWS::RDS::DBCluster")?.Properties;
    expect(cluster).toMatchObject({
      Engine: "aurora-postgresql",
      DatabaseName: "mapgate",
      StorageEncrypted: true,
      ServerlessV2ScalingConfiguration: { MinCapacity: 0, MaxCapacity: 4 },
      VpcSecurityGroupIds: [VPC.securityGroupId],
    });
    expect(nested.filter((r) => r.Type === "AWS::RDS::DBInstance").map((r) => r.Properties.DBInstanceClass)).toEqual([
      "db.serverless",
    ]);
    const proxy = nested.find((r) => r.Type === "AWS::RDS::DBProxy")?.Properties;
    expect(proxy).toMatchObject({
      EngineFamily: "POSTGRESQL",
      RequireTLS: true,
      VpcSubnetIds: VPC.subnetIds,
      Auth: [expect.objectContaining({ AuthScheme: "SECRETS", IAMAuth: "DISABLED" })],
    });
    // Exactly the functions that keep or serve hosted data (and those already there for data stores) are in the VPC,
    // told the database without its password and granted its secret.
    const fns = all.filter(([, r]) => r.Type === "AWS::Lambda::Function");
    // The scheduled events-redeliver function too: its hourly sweep drops data no service names.
    // The publishing task runs with a small young generation (its peak memory: docs/performance.md).
    const publishing = fns.find(([rid]) => rid.startsWith("TaskPublishHostedFunction"))?.[1].Properties;
    expect((publishing?.Environment as { Variables: Record<string, unknown> }).Variables.NODE_OPTIONS).toBe(
      "--max-semi-space-size=8",
    );
    const hostingFns = [...ROUTES, ...WORKFLOW.tasks, REDELIVERY].filter((r) => r.hostedData).map((r) => r.id);
    expect(hostingFns.sort()).toEqual([
      "events-redeliver",
      "item-add",
      "item-delete",
      "service",
      "task-fail-job",
      "task-publish-hosted",
    ]);
    for (const id of hostingFns) {
      const fn = fns.find(([rid]) => rid.startsWith(`${pascal(id)}Function`))?.[1].Properties;
      expect(fn?.VpcConfig, id).toEqual({ SubnetIds: VPC.subnetIds, SecurityGroupIds: [VPC.securityGroupId] });
      const env = (fn?.Environment as { Variables: Record<string, unknown> }).Variables;
      const uri = JSON.stringify(env.HOSTED_DATABASE);
      expect(uri, id).toContain("postgresql://mapgate_host@");
      expect(uri, id).toContain(":5432/mapgate?sslmode=verify-full");
      expect(env.HOSTED_DATABASE_SECRET_ID, id).toBeDefined();
      const policy = all.find(([pid]) => pid.startsWith(`${pascal(id)}RoleDefaultPolicy`))?.[1];
      expect(JSON.stringify(policy?.Properties.PolicyDocument), id).toContain("secretsmanager:GetSecretValue");
    }
    for (const [rid, r] of fns) {
      if (hostingFns.some((id) => rid.startsWith(`${pascal(id)}Function`))) continue;
      const env = (r.Properties.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables;
      expect(env?.HOSTED_DATABASE, rid).toBeUndefined();
    }
    expect(json.Outputs.HostingProxyEndpoint).toBeDefined();
    expect(
      () => new MapgateStack(new App({ context: { "aws:cdk:bundling-stacks": [] } }), "bad", { hosting: {} }),
    ).toThrow(/give databaseVpc too/);
  });

  it("lets the operator allow local database hosts and plain connections, refused by default", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const stack = new MapgateStack(app, "mapgate-open", { allowLocalDatabaseHosts: true, databaseTlsOptional: true });
    const open = Template.fromStack(stack).toJSON();
    expect(open.Outputs.DatabaseLocalHosts.Value).toBe("allow");
    expect(open.Outputs.DatabaseTls.Value).toBe("allow");
    const fns = Object.entries(open.Resources as Record<string, Resource>).filter(
      ([id, r]) => r.Type === "AWS::Lambda::Function" && id.startsWith("ItemAddFunction"),
    );
    expect((fns[0]?.[1].Properties.Environment as { Variables: Record<string, unknown> }).Variables).toMatchObject({
      DATASTORE_LOCAL_HOSTS: "allow",
      DATASTORE_TLS: "allow",
    });
  });
});

/** The dashboard's body as JSON: CloudFormation's join of text and references, references as `<ref>`. */
function dashboardBody(body: unknown): { widgets: { type: string; properties: Record<string, unknown> }[] } {
  const parts = (body as { "Fn::Join": [string, unknown[]] })["Fn::Join"][1];
  return JSON.parse(parts.map((p) => (typeof p === "string" ? p : "<ref>")).join(""));
}

/** The real metrics each AWS namespace the alarms and dashboard read publishes (of those mapgate uses). */
const AWS_METRICS: Record<string, readonly string[]> = {
  "AWS/ApiGateway": ["Count", "5xx"],
  "AWS/Lambda": ["Errors", "Throttles"],
  "AWS/DynamoDB": ["ReadThrottleEvents", "WriteThrottleEvents", "SystemErrors"],
  "AWS/States": ["ExecutionsFailed", "ExecutionsTimedOut"],
  "AWS/CloudFront": ["Requests", "4xxErrorRate", "5xxErrorRate", "BytesDownloaded"],
};

describe("operating on AWS: alarms, dashboard, tracing", () => {
  let nested: Record<string, Resource>;
  let alarms: Map<string, Record<string, unknown>>;
  let topicRef: unknown;

  beforeAll(() => {
    nested = Template.fromStack(stack.monitoring).toJSON().Resources as Record<string, Resource>;
    alarms = new Map(
      Object.values(nested)
        .filter((r) => r.Type === "AWS::CloudWatch::Alarm")
        .map((r) => [String(r.Properties.AlarmName).replace(/^mapgate-test-/, ""), r.Properties]),
    );
    const [topicId] = Object.entries(nested).find(([, r]) => r.Type === "AWS::SNS::Topic") ?? [];
    topicRef = { Ref: topicId };
  });

  /** The metrics an alarm reads, as `namespace metric dimension=value…` (references as `<ref>`). */
  const metricsOf = (alarm: Record<string, unknown>): string[] => {
    const stat = (m: { Namespace: string; MetricName: string; Dimensions?: { Name: string; Value: unknown }[] }) =>
      [
        m.Namespace,
        m.MetricName,
        ...(m.Dimensions ?? []).map((d) => `${d.Name}=${typeof d.Value === "string" ? d.Value : "<ref>"}`),
      ].join(" ");
    if (alarm.MetricName) return [stat(alarm as never)];
    return (alarm.Metrics as { MetricStat?: { Metric: never } }[])
      .filter((m) => m.MetricStat)
      .map((m) => stat(m.MetricStat?.Metric as never));
  };

  it("puts the monitoring in a nested stack, keeping the parent well under CloudFormation's 500 resources", () => {
    const parent = Object.keys(template.toJSON().Resources as object).length;
    expect(parent).toBeLessThan(400);
    // The routes' stack and this one.
    expect(ofType("AWS::CloudFormation::Stack")).toHaveLength(2);
    expect(Object.keys(nested).length).toBeLessThan(200);
  });

  it("sends every alarm to the topic, an output of the stack; the topic is encrypted with a key CloudWatch may use", () => {
    const functions = ROUTES.length + WORKFLOW.tasks.length + 2;
    const groups = Math.ceil(functions / 10);
    const expected = [
      "api-error-rate",
      "read-latency-p99",
      ...Array.from({ length: groups }, (_, g) => [`lambda-errors-${g + 1}`, `lambda-throttles-${g + 1}`]).flat(),
      ...TABLES.flatMap((t) => [`dynamodb-${t.name}-throttled`, `dynamodb-${t.name}-system-errors`]),
      "workflow-failures",
      "outbox-age",
      "redelivery-failing",
      "events-lost",
    ];
    expect([...alarms.keys()].sort()).toEqual(expected.sort());
    for (const [name, a] of alarms) {
      expect(a.AlarmActions, name).toEqual([topicRef]);
      expect(a.ComparisonOperator, name).toBe("GreaterThanOrEqualToThreshold");
      expect(String(a.AlarmDescription).length, name).toBeGreaterThan(60);
    }
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(JSON.stringify(outputs.AlarmTopicArn?.Value)).toContain("Outputs.");
    expect(JSON.stringify(outputs.DashboardUrl?.Value)).toContain("dashboards/dashboard/");
    const topic = Object.values(nested).find((r) => r.Type === "AWS::SNS::Topic")?.Properties;
    expect(topic?.KmsMasterKeyId).toBeDefined();
    const key = Object.values(nested).find((r) => r.Type === "AWS::KMS::Key")?.Properties;
    expect(key?.EnableKeyRotation).toBe(true);
    const statements = (key?.KeyPolicy as { Statement: { Principal?: { Service?: string }; Action: string[] }[] })
      .Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({
        Principal: { Service: "cloudwatch.amazonaws.com" },
        Action: ["kms:Decrypt", "kms:GenerateDataKey*"],
      }),
    );
  });

  it("watches the API's error rate, the read routes' p99 and mapgate's own failures with the default thresholds", () => {
    const d = DEFAULT_THRESHOLDS;
    const api = alarms.get("api-error-rate") ?? {};
    expect(api.Threshold).toBe(d.alarmApiErrorPercent);
    expect(metricsOf(api).sort()).toEqual(
      [
        "AWS/ApiGateway Count ApiId=<ref>",
        "AWS/ApiGateway 5xx ApiId=<ref>",
        "mapgate Requests Outcome=server-error Stack=mapgate-test",
      ].sort(),
    );
    expect(JSON.stringify(api.Metrics)).toContain(`>= ${d.alarmApiMinRequests}`);
    const p99 = alarms.get("read-latency-p99") ?? {};
    expect([p99.ExtendedStatistic, p99.Threshold, p99.EvaluationPeriods]).toEqual(["p99", d.alarmReadP99Ms, 3]);
    expect(metricsOf(p99)).toEqual(["mapgate Latency Kind=read Stack=mapgate-test"]);
    const workflow = alarms.get("workflow-failures") ?? {};
    expect(workflow.Threshold).toBe(d.alarmWorkflowFailures);
    expect(metricsOf(workflow)).toEqual([
      "AWS/States ExecutionsFailed StateMachineArn=<ref>",
      "AWS/States ExecutionsTimedOut StateMachineArn=<ref>",
    ]);
    const age = alarms.get("outbox-age") ?? {};
    expect([age.Statistic, age.Threshold]).toEqual(["Maximum", d.alarmOutboxAgeSeconds]);
    expect(metricsOf(age)).toEqual(["mapgate OutboxOldestAgeSeconds Stack=mapgate-test"]);
    const refused = alarms.get("redelivery-failing") ?? {};
    expect([refused.Threshold, refused.EvaluationPeriods]).toEqual([1, d.alarmRedeliveryPeriods]);
    expect(metricsOf(refused)).toEqual(["mapgate RedeliveryRefused Stack=mapgate-test"]);
    expect(metricsOf(alarms.get("events-lost") ?? {}).sort()).toEqual([
      "mapgate EventsGivenUp Stack=mapgate-test",
      "mapgate EventsLost Stack=mapgate-test",
    ]);
  });

  it("watches every function's errors and throttles by metric math over groups of at most ten", () => {
    // The nested stack names the parent's functions through its parameters.
    const monitoring = ofType("AWS::CloudFormation::Stack").find(([id]) => id.startsWith("Monitoring"));
    const parameters = (monitoring?.[1].Properties.Parameters ?? {}) as Record<string, { Ref: string }>;
    const functionIds = ofType("AWS::Lambda::Function").map(([id]) => id);
    for (const metric of ["errors", "throttles"]) {
      const watched: string[] = [];
      for (const [name, a] of alarms) {
        if (!name.startsWith(`lambda-${metric}-`)) continue;
        expect(a.Threshold).toBe(metric === "errors" ? 1 : DEFAULT_THRESHOLDS.alarmLambdaThrottles);
        const stats = (a.Metrics as { MetricStat?: { Metric: { MetricName: string; Dimensions: unknown[] } } }[])
          .map((m) => m.MetricStat?.Metric)
          .filter((m) => m !== undefined);
        expect(stats.length).toBeLessThanOrEqual(10);
        for (const m of stats) {
          expect(m.MetricName).toBe(metric === "errors" ? "Errors" : "Throttles");
          const ref = (m.Dimensions[0] as { Value: { Ref: string } }).Value.Ref;
          watched.push(parameters[ref]?.Ref ?? "");
        }
      }
      expect(watched.sort()).toEqual([...functionIds].sort());
    }
  });

  it("watches each table's throttled requests and system errors", () => {
    for (const spec of TABLES) {
      const throttled = alarms.get(`dynamodb-${spec.name}-throttled`) ?? {};
      expect(throttled.Threshold).toBe(DEFAULT_THRESHOLDS.alarmDynamoThrottles);
      expect(metricsOf(throttled)).toEqual([
        "AWS/DynamoDB ReadThrottleEvents TableName=<ref>",
        "AWS/DynamoDB WriteThrottleEvents TableName=<ref>",
      ]);
      const errors = alarms.get(`dynamodb-${spec.name}-system-errors`) ?? {};
      expect(errors.Threshold).toBe(DEFAULT_THRESHOLDS.alarmDynamoSystemErrors);
      const ops = metricsOf(errors).map(
        (m) => /^AWS\/DynamoDB SystemErrors Operation=(\w+) TableName=<ref>$/.exec(m)?.[1],
      );
      expect(ops).toEqual(expect.arrayContaining(["GetItem", "BatchGetItem", "Query"]));
      expect(ops.length).toBeLessThanOrEqual(10);
    }
    // A table some function writes is watched on its writes too.
    expect(metricsOf(alarms.get("dynamodb-jobs-system-errors") ?? {}).join()).toContain("Operation=UpdateItem");
  });

  it("raises a composite 'unhealthy' alarm over every alarm, to the same topic", () => {
    const composite = Object.values(nested).filter((r) => r.Type === "AWS::CloudWatch::CompositeAlarm");
    expect(composite).toHaveLength(1);
    const p = composite[0]?.Properties ?? {};
    expect(p.AlarmName).toBe("mapgate-test-unhealthy");
    expect(p.AlarmActions).toEqual([topicRef]);
    const rule = JSON.stringify(p.AlarmRule);
    const alarmIds = Object.entries(nested)
      .filter(([, r]) => r.Type === "AWS::CloudWatch::Alarm")
      .map(([id]) => id);
    for (const id of alarmIds) expect(rule).toContain(`"Fn::GetAtt":["${id}","Arn"]`);
  });

  it("takes thresholds and a subscriber from the stack's settings (CDK context)", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const tuned = new MapgateStack(app, "mapgate-alarms", {
      alarmThresholds: { alarmReadP99Ms: 800, alarmOutboxAgeSeconds: 60 },
      alarmEmail: "ops@example.com",
      cdn: false,
    });
    const res = Object.values(Template.fromStack(tuned.monitoring).toJSON().Resources as Record<string, Resource>);
    const byName = (n: string) => res.find((r) => r.Properties.AlarmName === `mapgate-alarms-${n}`)?.Properties;
    expect(byName("read-latency-p99")?.Threshold).toBe(800);
    expect(byName("outbox-age")?.Threshold).toBe(60);
    expect(byName("api-error-rate")?.Threshold).toBe(DEFAULT_THRESHOLDS.alarmApiErrorPercent);
    expect(res.filter((r) => r.Type === "AWS::SNS::Subscription").map((r) => r.Properties)).toEqual([
      expect.objectContaining({ Protocol: "email", Endpoint: "ops@example.com" }),
    ]);
    // Without the CDN: no distribution, and the routes build absolute URLs from the request's own host.
    const parent = Template.fromStack(tuned).toJSON().Resources as Record<string, Resource>;
    expect(Object.values(parent).filter((r) => r.Type === "AWS::CloudFront::Distribution")).toHaveLength(0);
  });

  it("draws a dashboard whose widgets name only real metrics, mapgate's own and AWS's", () => {
    const dashboards = Object.values(nested).filter((r) => r.Type === "AWS::CloudWatch::Dashboard");
    expect(dashboards).toHaveLength(1);
    const body = dashboardBody(dashboards[0]?.Properties.DashboardBody);
    const titles = body.widgets.map((w) => String(w.properties.title ?? ""));
    for (const t of ["Alarms", "Requests by operation", "Latency", "Content served", "Jobs", "throttle"])
      expect(
        titles.some((x) => x.includes(t)),
        t,
      ).toBe(true);
    const named = new Set<string>();
    const dimensionNames = new Set(["Stack", "Operation", "Outcome", "Kind", "Resource"]);
    for (const w of body.widgets) {
      for (const row of (w.properties.metrics ?? []) as unknown[][]) {
        const [first, second, ...rest] = row;
        if (typeof first === "string") {
          const pairs = rest.filter((x) => typeof x === "string") as string[];
          if (first === NAMESPACE) {
            expect(Object.values(METRIC), String(second)).toContain(second);
            for (let i = 0; i < pairs.length; i += 2) expect(dimensionNames, pairs[i]).toContain(pairs[i]);
            expect(pairs[pairs.indexOf("Stack") + 1]).toBe("mapgate-test");
          } else expect(AWS_METRICS[first], `${first} ${String(second)}`).toContain(second);
          named.add(String(second));
          continue;
        }
        const expression = String((first as { expression?: string }).expression ?? "");
        const search = /^SEARCH\('\{mapgate,([\w,]+)\} Stack="mapgate-test" MetricName="(\w+)"'/.exec(expression);
        if (expression.startsWith("SEARCH")) {
          expect(search, expression).not.toBeNull();
          for (const d of search?.[1]?.split(",") ?? []) expect(dimensionNames).toContain(d);
          expect(Object.values(METRIC)).toContain(search?.[2]);
          named.add(search?.[2] ?? "");
        }
      }
    }
    // Every metric mapgate writes is on the dashboard.
    for (const m of Object.values(METRIC)) expect(named, m).toContain(m);
  });

  it("traces every function and the state machine with X-Ray", () => {
    for (const [id, fn] of ofType("AWS::Lambda::Function"))
      expect(fn.Properties.TracingConfig, id).toEqual({ Mode: "Active" });
    const machines = ofType("AWS::StepFunctions::StateMachine");
    expect(machines).toHaveLength(1);
    expect(machines[0]?.[1].Properties.TracingConfiguration).toEqual({ Enabled: true });
  });
});

describe("the CDN in front of the API", () => {
  type Behavior = Record<string, unknown>;
  let distribution: Record<string, unknown>;
  let behaviors: Behavior[];
  const resource = (ref: unknown) => {
    const id = (ref as { Ref?: string } | undefined)?.Ref;
    return id ? (template.toJSON().Resources as Record<string, Resource>)[id]?.Properties : undefined;
  };
  /** The viewer-request function as synthesized, run as CloudFront Functions would run it. */
  const viewerRequest = () => {
    const fn = ofType("AWS::CloudFront::Function")[0]?.[1].Properties;
    return new Function(`${String(fn?.FunctionCode)}; return handler;`)() as (e: unknown) => {
      headers: Record<string, { value: string }>;
    };
  };
  const request = (o: { headers?: Record<string, string>; query?: string[]; cookies?: string[] } = {}) => ({
    viewer: { ip: "198.51.100.7" },
    request: {
      method: "GET",
      uri: "/arcgis/rest/services/World/MapServer/tile/1/0/1",
      headers: Object.fromEntries(Object.entries(o.headers ?? {}).map(([k, v]) => [k, { value: v }])),
      querystring: Object.fromEntries((o.query ?? []).map((q) => [q, { value: "x" }])),
      cookies: Object.fromEntries((o.cookies ?? []).map((c) => [c, { value: "x" }])),
    },
  });

  beforeAll(() => {
    const found = ofType("AWS::CloudFront::Distribution");
    expect(found).toHaveLength(1);
    distribution = (found[0]?.[1].Properties.DistributionConfig ?? {}) as Record<string, unknown>;
    behaviors = [distribution.DefaultCacheBehavior as Behavior, ...((distribution.CacheBehaviors as Behavior[]) ?? [])];
  });

  it("passes everything through uncached but the services' paths, HTTPS only, logged", () => {
    const def = distribution.DefaultCacheBehavior as Behavior;
    // Managed policies: CachingDisabled, AllViewerExceptHostHeader (API Gateway routes by its own host name).
    expect(def.CachePolicyId).toBe("4135ea2d-6df8-44a3-9df3-4b5a84be39ad");
    expect(def.OriginRequestPolicyId).toBe("b689b0a8-53d0-40ab-baf2-68738e2966ac");
    expect((distribution.CacheBehaviors as Behavior[]).map((b) => b.PathPattern)).toEqual([CACHED_PATH]);
    for (const b of behaviors) {
      expect(b.ViewerProtocolPolicy).toBe("https-only");
      expect(b.AllowedMethods).toContain("POST");
    }
    const origins = distribution.Origins as {
      CustomOriginConfig: Record<string, unknown>;
      DomainName: unknown;
      OriginCustomHeaders: { HeaderName: string; HeaderValue: unknown }[];
    }[];
    expect(origins).toHaveLength(1);
    // Every request to the API carries the edge key, from Secrets Manager by a dynamic reference (in no template).
    const [edge] = origins[0]?.OriginCustomHeaders ?? [];
    expect(edge?.HeaderName).toBe(EDGE_KEY_HEADER);
    expect(JSON.stringify(edge?.HeaderValue)).toMatch(/\{\{resolve:secretsmanager:.*:SecretString:::\}\}/);
    // The viewer-request function runs on every request (it passes the viewer's address on).
    for (const b of behaviors)
      expect(b.FunctionAssociations).toEqual([expect.objectContaining({ EventType: "viewer-request" })]);
    expect(origins[0]?.CustomOriginConfig).toEqual({
      OriginProtocolPolicy: "https-only",
      OriginSSLProtocols: ["TLSv1.2"],
    });
    expect(JSON.stringify(origins[0]?.DomainName)).toContain(".execute-api.");
    expect(distribution.Logging).toBeDefined();
    const outputs = template.toJSON().Outputs as Record<string, { Value: unknown }>;
    expect(JSON.stringify(outputs.CdnUrl?.Value)).toContain("DomainName");
    // The API's own URL stays an output, and usable.
    expect(outputs.ApiUrl).toBeDefined();
  });

  it("keys the services' cache on the path, every query parameter but token, Origin, gzip and the credentials mark", () => {
    const content = (distribution.CacheBehaviors as Behavior[])[0] ?? {};
    const policy = resource(content.CachePolicyId)?.CachePolicyConfig as Record<string, unknown>;
    expect(policy).toMatchObject({ DefaultTTL: 0, MinTTL: 0, MaxTTL: CDN_MAX_TTL_SECONDS });
    expect(policy.ParametersInCacheKeyAndForwardedToOrigin).toEqual({
      CookiesConfig: { CookieBehavior: "none" },
      EnableAcceptEncodingBrotli: false,
      EnableAcceptEncodingGzip: true,
      // Origin: a public tile's CORS headers are answered for the origin that asked (CloudFront ignores Vary),
      // so each origin, and a request without one, has an entry of its own.
      HeadersConfig: { HeaderBehavior: "whitelist", Headers: [CREDENTIALS_HEADER, "origin"] },
      QueryStringsConfig: { QueryStringBehavior: "allExcept", QueryStrings: ["token"] },
    });
    // What reaches the origin besides the key: credentials (never Authorization itself: CloudFront refuses it
    // outside the key), the referer tokens may be bound to, cookies and every parameter (Origin is in the key,
    // which forwards it).
    const forwarded = resource(content.OriginRequestPolicyId)?.OriginRequestPolicyConfig as Record<string, unknown>;
    expect(forwarded).toMatchObject({
      CookiesConfig: { CookieBehavior: "all" },
      QueryStringsConfig: { QueryStringBehavior: "all" },
      HeadersConfig: {
        HeaderBehavior: "whitelist",
        Headers: ["x-esri-authorization", "referer", VIEWER_ADDRESS_HEADER],
      },
    });
    expect(content.FunctionAssociations).toEqual([{ EventType: "viewer-request", FunctionARN: expect.anything() }]);
  });

  it("lets no cache behaviour store an answer to a request with credentials", () => {
    const run = viewerRequest();
    for (const b of behaviors) {
      if (b.CachePolicyId === "4135ea2d-6df8-44a3-9df3-4b5a84be39ad") continue; // caches nothing
      const key = (resource(b.CachePolicyId)?.CachePolicyConfig as Record<string, Record<string, unknown>>)
        .ParametersInCacheKeyAndForwardedToOrigin as Record<string, Record<string, unknown>>;
      // No credential is part of any key: no cookie, no token, no authorization header.
      expect(key.CookiesConfig?.CookieBehavior).toBe("none");
      expect(key.QueryStringsConfig).toEqual({ QueryStringBehavior: "allExcept", QueryStrings: ["token"] });
      expect(key.HeadersConfig?.Headers).toEqual([CREDENTIALS_HEADER, "origin"]);
      // Every request with a credential is marked, so it never shares an entry with anonymous requests (and its
      // answer, Cache-Control: private, is never stored under its own).
      expect(b.FunctionAssociations).toEqual([expect.objectContaining({ EventType: "viewer-request" })]);
    }
    const marked = (e: ReturnType<typeof request>) => run(e).headers[CREDENTIALS_HEADER]?.value;
    expect(marked(request())).toBeUndefined();
    expect(marked(request({ query: ["f", "callback"] }))).toBeUndefined();
    // A mark a viewer sends itself is dropped: anonymous requests always share one key.
    expect(marked(request({ headers: { [CREDENTIALS_HEADER]: "1" } }))).toBeUndefined();
    for (const e of [
      request({ query: ["token"] }),
      request({ query: ["Token"] }),
      request({ headers: { authorization: "Bearer t" } }),
      request({ headers: { "x-esri-authorization": "Bearer t" } }),
      request({ cookies: ["vendor_authcookie"] }),
      request({ cookies: ["anything"] }),
    ])
      expect(marked(e)).toBe("1");
    // The viewer's address, as CloudFront saw it, replacing whatever a viewer claims.
    expect(run(request({ headers: { [VIEWER_ADDRESS_HEADER]: "192.0.2.1" } })).headers[VIEWER_ADDRESS_HEADER]).toEqual({
      value: "198.51.100.7",
    });
    // Authorization travels on as X-Esri-Authorization (the same bearer token), unless that is set already.
    expect(run(request({ headers: { authorization: "Bearer t" } })).headers["x-esri-authorization"]).toEqual({
      value: "Bearer t",
    });
    expect(
      run(request({ headers: { authorization: "Bearer t", "x-esri-authorization": "Bearer u" } })).headers[
        "x-esri-authorization"
      ],
    ).toEqual({ value: "Bearer u" });
  });

  it("points absolute URLs at the distribution when no custom domain is given, and at the custom domain when one is", () => {
    const distributionId = ofType("AWS::CloudFront::Distribution")[0]?.[0];
    for (const route of ROUTES) {
      const env = (functionFor(route.id).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.PUBLIC_HTTPS_ORIGIN).toEqual({
        "Fn::Join": ["", ["https://", { "Fn::GetAtt": [distributionId, "DomainName"] }]],
      });
    }
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const custom = new MapgateStack(app, "mapgate-custom", { publicOrigin: "https://gis.example.com" });
    const fns = Object.values(Template.fromStack(custom).toJSON().Resources as Record<string, Resource>).filter(
      (r) => r.Type === "AWS::Lambda::Function",
    );
    for (const fn of fns) {
      expect((fn.Properties.Environment as { Variables: Record<string, unknown> }).Variables.PUBLIC_HTTPS_ORIGIN).toBe(
        "https://gis.example.com",
      );
    }
  });
});

describe("viewer addresses through the CDN", () => {
  it("lets only the route functions read the edge key, each told where it is", () => {
    const [edgeId] =
      ofType("AWS::SecretsManager::Secret").find(([id]) => id.startsWith("CdnEdgeKey")) ?? ([] as string[]);
    expect(edgeId).toBeDefined();
    const readers = new Set<string>();
    // A role whose grants pass IAM's inline size keeps the rest in overflow (managed) policies, as CDK splits them.
    for (const [id, policy] of [...ofType("AWS::IAM::Policy"), ...ofType("AWS::IAM::ManagedPolicy")]) {
      const statements = (policy.Properties.PolicyDocument as { Statement: { Resource: unknown }[] }).Statement;
      if (statements.some((st) => JSON.stringify(st.Resource) === JSON.stringify({ Ref: edgeId })))
        readers.add(id.replace(/Role(DefaultPolicy|OverflowPolicy).*$/, ""));
    }
    expect([...readers].sort()).toEqual(ROUTES.map((r) => pascal(r.id)).sort());
    for (const route of ROUTES) {
      const env = (functionFor(route.id).Properties.Environment as { Variables: Record<string, unknown> }).Variables;
      expect(env.EDGE_KEY_SECRET_ID).toEqual({ Ref: edgeId });
    }
  });
});

describe("upgrading a stack made while the routes were in the parent", () => {
  it("makes the API without routes when told (the first of the two deploys: docs/aws.md)", () => {
    const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
    const bare = new MapgateStack(app, "mapgate-upgrade", { cloudStoreBuckets: [BUCKET], routes: false });
    expect(bare.routes).toBeUndefined();
    const types = Object.values(Template.fromStack(bare).toJSON().Resources as Record<string, Resource>).map(
      (r) => r.Type,
    );
    expect(types.filter((t) => t.startsWith("AWS::ApiGatewayV2::Route"))).toEqual([]);
    expect(types.filter((t) => t === "AWS::ApiGatewayV2::Api")).toHaveLength(1);
    // The functions stay: the second deploy only adds the routes' stack.
    expect(types.filter((t) => t === "AWS::Lambda::Function")).toHaveLength(ofType("AWS::Lambda::Function").length);
  });
});
