// The synthesized CloudFormation template holds exactly what the system description declares.
import { App, Validations } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { beforeAll, describe, expect, it } from "vitest";
import { MapgateStack } from "#infra/aws/stack.ts";
import { invocationFunction, REDELIVERY, ROUTES, SECRETS, TABLES, tableEnvName, WORKFLOW } from "#infra/system.ts";
import { readConfig, TUNABLES } from "#shared/config.ts";

const BUCKET = "mapgate-caches-test";

type Resource = { Type: string; Properties: Record<string, unknown> };
let template: Template;
let resources: [string, Resource][];
let synthError: unknown;

beforeAll(() => {
  // Bundling is skipped here (the synth command bundles for real); everything else is synthesized.
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new MapgateStack(app, "mapgate-test", { cloudStoreBuckets: [BUCKET] });
  Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
  try {
    app.synth();
  } catch (err) {
    synthError = err;
  }
  template = Template.fromStack(stack);
  resources = Object.entries(template.toJSON().Resources as Record<string, Resource>);
});

const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);
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
    const expected = ROUTES.flatMap((r) =>
      r.methods === "$default" ? ["$default"] : r.methods.map((m) => `${m} ${r.path}`),
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
    // CloudFormation refuses a stack of more than 500 resources: keep room for what comes next.
    expect(Object.keys(template.toJSON().Resources as object).length).toBeLessThan(450);
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
        ...(route.readsStorage ? ["DATASTORE_SECRET_PREFIX"] : []),
        "POWERTOOLS_SERVICE_NAME",
        "POWERTOOLS_LOG_LEVEL",
        // The metrics' Stack dimension, and the CDN's origin (absolute URLs point at it: no custom domain here).
        "MAPGATE_STACK",
        "PUBLIC_HTTPS_ORIGIN",
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
      ).Statement.filter((st) => JSON.stringify(st.Action).includes("s3:"));
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

  it("gives the functions that read data stores 2 GB of temporary storage for cloud GeoPackages, the others the default", () => {
    for (const spec of [...ROUTES, ...WORKFLOW.tasks]) {
      const fn = functionFor(spec.id).Properties;
      expect(fn.EphemeralStorage, spec.id).toEqual(spec.readsStorage ? { Size: 2048 } : undefined);
    }
  });

  it("lets only the functions that read data stores read database stores' passwords, under the stack's prefix", () => {
    const policies = ofType("AWS::IAM::Policy");
    const prefix = template.toJSON().Outputs.DatastoreSecretPrefix.Value as string;
    expect(prefix).toMatch(/\/datastores\/$/);
    for (const spec of [...ROUTES, ...WORKFLOW.tasks]) {
      const policy = policies.find(([id]) => id.startsWith(`${pascal(spec.id)}RoleDefaultPolicy`));
      if (!policy) throw new Error(`no policy for ${spec.id}`);
      const statements = (
        policy[1].Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] }
      ).Statement.filter((st) => JSON.stringify(st.Resource).includes("/datastores/"));
      if (!spec.readsStorage) {
        expect(statements, spec.id).toEqual([]);
        continue;
      }
      expect(statements, spec.id).toHaveLength(1);
      expect(statements[0]?.Action).toBe("secretsmanager:GetSecretValue");
      expect(JSON.stringify(statements[0]?.Resource)).toContain(`:secret:${prefix}*`);
    }
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
    expect(secrets).toHaveLength(1);
    const [, secret] = secrets[0] ?? [];
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
        .concat(["SOAP_MESSAGE_FORMAT", "SOAP_NAMESPACE"])
        .sort(),
    );
    // The synth command checks context values with the functions' own rules (infra/aws/app.ts).
    expect(() => readConfig({ OAUTH_CODE_SECONDS: "900" })).toThrow(/OAUTH_CODE_SECONDS may be at most 600/);
    expect(() => readConfig({ SIGNIN_MAX_FAILURES: "-1" })).toThrow(/SIGNIN_MAX_FAILURES must be a positive/);
  });
});
