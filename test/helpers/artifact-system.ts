// The synthesized stack, running: API Gateway's part (the local gateway, dispatching each route to the
// function the template's route → integration → function names, once that function's invoke permission lets
// API Gateway call it), Step Functions' part (the local workflow endpoint running the template's own
// definition, each Task invoking the function its substituted ARN names, once the state machine's role may),
// and every function's bundle in its own Lambda-like environments behind the policy-checking AWS stand-in.
import { randomInt } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { Gateway } from "#infra/local/gateway.ts";
import { type LocalWorkflows, startWorkflows, type TaskFn, taskStates } from "#infra/local/workflows.ts";
import { eventFiles, startEvents } from "#infra/local/events.ts";
import { callerWorkflows } from "#infra/local/caller-workflows.ts";
import { type RouteSpec, routeKeys } from "#shared/system.ts";
import { ACCOUNT, allows, arnLike, type Assembly, type FunctionArtifact, REGION } from "./artifact.ts";
import { type AwsStandIn, type Decision, startAwsStandIn } from "./aws-stand-in.ts";
import { ROOT } from "./engine.ts";
import { FunctionHost, InvocationError } from "./lambda-host.ts";

type Json = Record<string, unknown>;

export interface ArtifactSystem {
  /** `http://127.0.0.1:<port>`: the API, as API Gateway serves it (the events say https). */
  readonly url: string;
  readonly standIn: AwsStandIn;
  /** Invocations refused before any function ran: API Gateway's and the state machine's. */
  readonly invokeDenials: Decision[];
  readonly hosts: ReadonlyMap<string, FunctionHost>;
  readonly functions: readonly FunctionArtifact[];
  readonly tokenKey: { readonly kid: string; readonly k: string };
  /** The key the stack's CDN sends with every request (what CloudFront would add), when there is a CDN. */
  readonly edgeKey?: string;
  host(id: string): FunctionHost;
  /** Step Functions for callers' own state machines (task tokens), beside the template's. */
  readonly stepFunctions: string;
  /** Starts an execution of the state machine directly, as an operator (or a resumed job) would. */
  startExecution(name: string, input: string): void;
  /** Route keys of the template whose function's resource policy does not let API Gateway invoke it. */
  uninvokableRoutes(): string[];
  stop(): Promise<void>;
}

const INTERNAL_ERROR: APIGatewayProxyStructuredResultV2 = {
  statusCode: 500,
  headers: { "content-type": "application/json" },
  body: '{"message":"Internal Server Error"}',
};

/** The secret CloudFormation would generate from the template's GenerateSecretString. */
function generateSecret(spec: Json): string {
  const known = ["SecretStringTemplate", "GenerateStringKey", "PasswordLength", "ExcludePunctuation"];
  const unknown = Object.keys(spec).filter((k) => !known.includes(k));
  if (unknown.length > 0 || spec.ExcludePunctuation !== true) throw new Error(`secret spec ${unknown.join()}`);
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  const length = Number(spec.PasswordLength ?? 32);
  const value = Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join("");
  if (spec.SecretStringTemplate === undefined) return value;
  return JSON.stringify({
    ...(JSON.parse(String(spec.SecretStringTemplate)) as Json),
    [String(spec.GenerateStringKey)]: value,
  });
}

export async function startArtifactSystem(
  assembly: Assembly,
  upstreams: { readonly dynamodb: string; readonly s3: string },
): Promise<ArtifactSystem> {
  const functions = assembly.functions();
  const byArn = new Map(functions.map((f) => [f.arn, f]));
  const invokeDenials: Decision[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  try {
    // Every secret the template generates: the token key (a JSON {kid, k}) and the CDN's edge key (a string).
    const secrets = assembly
      .ofType("AWS::SecretsManager::Secret")
      .map(([id, r]) => ({ id, value: generateSecret(r.Properties?.GenerateSecretString as Json) }));
    const tokenSecret = secrets.find((s) => s.value.startsWith("{"));
    if (!tokenSecret) throw new Error("the template holds no token key");
    const secretValue = tokenSecret.value;
    const edgeKey = secrets.find((s) => s.id.startsWith("CdnEdgeKey"))?.value;

    // The state machine as the template defines it: its definition with its substitutions made.
    const [machine] = assembly.ofType("AWS::StepFunctions::StateMachine");
    if (!machine) throw new Error("the template holds no state machine");
    const props = machine[1].Properties ?? {};
    let definition = assembly.str(props.DefinitionString);
    for (const [name, value] of Object.entries((assembly.resolve(props.DefinitionSubstitutions) ?? {}) as Json)) {
      definition = definition.replaceAll(`\${${name}}`, String(value));
    }
    const machineRole = (props.RoleArn as { "Fn::GetAtt": [string, string] })["Fn::GetAtt"][0];
    const machineStatements = assembly.statementsOf(machineRole);
    const hosts = new Map<string, FunctionHost>();
    const hostOf = (fn: FunctionArtifact) => {
      const h = hosts.get(fn.arn);
      if (!h) throw new Error(`no host for ${fn.id}`);
      return h;
    };

    const bind = async (json: Json): Promise<Record<string, TaskFn>> => {
      const bindings: Record<string, TaskFn> = {};
      for (const { state, variable: resource } of taskStates(json)) {
        const fn = byArn.get(resource);
        if (!fn) throw new Error(`Task state ${state} calls ${resource}, which is no function of the template`);
        bindings[state] = async (input: never) => {
          const allowed = allows(machineStatements, "lambda:InvokeFunction", fn.arn);
          if (!allowed) {
            invokeDenials.push({ caller: "state machine", action: "lambda:InvokeFunction", resource: fn.arn, allowed });
            throw Object.assign(new Error("AccessDeniedException"), { name: "Lambda.AWSLambdaException" });
          }
          try {
            return await hostOf(fn).invoke(input);
          } catch (err) {
            // On AWS the Task's Error is the function's errorType and its Cause the whole error payload as JSON.
            if (err instanceof InvocationError) {
              throw Object.assign(new Error(JSON.stringify(err.payload)), { name: err.payload.errorType });
            }
            throw err;
          }
        };
      }
      return bindings;
    };
    const workflows: LocalWorkflows = await startWorkflows(ROOT, {
      definition,
      stateMachineArn: assembly.ref(machine[0]),
      bind,
    });
    cleanups.push(() => workflows.close());

    // The template's bus: what the functions raise is kept in a log of its own.
    const [bus] = assembly.ofType("AWS::Events::EventBus");
    if (!bus) throw new Error("the template holds no event bus");
    const eventsDir = mkdtempSync(join(tmpdir(), "mapgate-artifact-events-"));
    const events = await startEvents(eventFiles(eventsDir), async () => undefined, assembly.ref(bus[0]));
    cleanups.push(() => events.close());
    const standIn = await startAwsStandIn({
      events: events.endpoint,
      functions,
      dynamodb: upstreams.dynamodb,
      stepFunctions: workflows.endpoint,
      s3: upstreams.s3,
      secrets: secrets.map((s) => ({ arn: assembly.ref(s.id), value: s.value })),
    });
    cleanups.push(() => standIn.close());
    for (const fn of functions) hosts.set(fn.arn, new FunctionHost(fn, standIn.endpoint, standIn.credentialsOf(fn)));
    cleanups.push(async () => {
      await Promise.all([...hosts.values()].map((h) => h.close()));
    });
    await workflows.load();
    // Callers' state machines invoke the operations function's bundle through their alias. The alias and its
    // resource policy are made at run time by register-caller, not by the template: not checked here.
    workflows.attach(
      callerWorkflows(async (functionName, payload) => {
        const [base = "", qualifier] =
          /^(arn:aws:lambda:[^:]+:\d+:function:[\w-]+)(?::([\w-]+))?$/.exec(functionName)?.slice(1) ?? [];
        const fn = byArn.get(base);
        if (!fn) return { kind: "refused", status: 404, type: "ResourceNotFoundException", message: functionName };
        try {
          return { kind: "ok", payload: JSON.stringify(await hostOf(fn).invoke(JSON.parse(payload), qualifier)) };
        } catch (err) {
          if (err instanceof InvocationError) return { kind: "function-error", payload: JSON.stringify(err.payload) };
          throw err;
        }
      }),
    );

    // API Gateway: the template's routes, integrations, stage and invoke permissions.
    const [api] = assembly.ofType("AWS::ApiGatewayV2::Api");
    const [stage] = assembly.ofType("AWS::ApiGatewayV2::Stage");
    if (!api || !stage) throw new Error("the template holds no HTTP API with a stage");
    const apiId = assembly.ref(api[0]);
    const stageName = String(stage[1].Properties?.StageName);
    const routes = assembly.ofType("AWS::ApiGatewayV2::Route").map(([, r]) => r.Properties ?? {});
    const integrations = new Map(
      assembly.ofType("AWS::ApiGatewayV2::Integration").map(([id, r]) => [assembly.ref(id), r.Properties ?? {}]),
    );
    const permissions = assembly
      .ofType("AWS::Lambda::Permission")
      .map(([, r]) => assembly.resolve(r.Properties) as Json);
    const functionOf = (routeKey: string): FunctionArtifact => {
      const route = routes.find((r) => r.RouteKey === routeKey);
      if (!route) throw new Error(`the template has no route ${routeKey}`);
      const target = assembly.str(route.Target).replace(/^integrations\//, "");
      const integration = integrations.get(target);
      if (integration?.IntegrationType !== "AWS_PROXY" || integration.PayloadFormatVersion !== "2.0") {
        throw new Error(`${routeKey}: not a payload-2.0 Lambda proxy integration`);
      }
      const fn = byArn.get(assembly.str(integration.IntegrationUri));
      if (!fn) throw new Error(`${routeKey}: its integration calls no function of the template`);
      return fn;
    };
    /** Whether the function's resource policy lets this API's route invoke it (`AWS:SourceArn` is ArnLike). */
    const mayInvoke = (fn: FunctionArtifact, routeKey: string) => {
      const route = routeKey === "$default" ? "$default" : routeKey.replace(" ", "");
      const source = `arn:aws:execute-api:${REGION}:${ACCOUNT}:${apiId}/${stageName}/${route}`;
      return permissions.some(
        (p) =>
          (p.FunctionName === fn.arn || p.FunctionName === fn.name) &&
          p.Action === "lambda:InvokeFunction" &&
          p.Principal === "apigateway.amazonaws.com" &&
          (p.SourceArn === undefined || arnLike(String(p.SourceArn), source)),
      );
    };
    const handlerFor = (spec: RouteSpec) => {
      const keys = routeKeys(spec);
      const targets = new Set(keys.map(functionOf));
      const [fn] = targets;
      if (!fn || targets.size !== 1) throw new Error(`${spec.id}: its route keys reach ${targets.size} functions`);
      const host = hostOf(fn);
      return Promise.resolve(async (event: APIGatewayProxyEventV2) => {
        if (!mayInvoke(fn, event.routeKey)) {
          invokeDenials.push({
            caller: "apigateway",
            action: "lambda:InvokeFunction",
            resource: fn.arn,
            allowed: false,
          });
          return INTERNAL_ERROR;
        }
        try {
          return (await host.invoke(event)) as APIGatewayProxyStructuredResultV2;
        } catch (err) {
          // A function error reaches the client as API Gateway's bare 500.
          if (err instanceof InvocationError) return INTERNAL_ERROR;
          throw err;
        }
      });
    };
    const gateway = await Gateway.load(handlerFor);
    let port = 0;
    const server: Server = createServer((req, res) => gateway.serve(req, res, `127.0.0.1:${port}`, "https"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
    cleanups.push(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );

    const byId = new Map(functions.map((f) => [f.id, hostOf(f)]));
    const key = JSON.parse(secretValue) as { kid: string; k: string };
    return {
      url: `http://127.0.0.1:${port}`,
      standIn,
      invokeDenials,
      hosts: byId,
      functions,
      tokenKey: key,
      ...(edgeKey ? { edgeKey } : {}),
      host: (id) => {
        const h = byId.get(id);
        if (!h) throw new Error(`no function ${id}`);
        return h;
      },
      stepFunctions: workflows.endpoint,
      startExecution: (name, input) => {
        workflows.start(name, input);
      },
      uninvokableRoutes: () =>
        routes
          .map((r) => String(r.RouteKey))
          .filter((key) => !mayInvoke(functionOf(key), key))
          .sort(),
      stop: async () => {
        for (const c of cleanups.reverse()) await c().catch(() => undefined);
      },
    };
  } catch (err) {
    for (const c of cleanups.reverse()) await c().catch(() => undefined);
    throw err;
  }
}
