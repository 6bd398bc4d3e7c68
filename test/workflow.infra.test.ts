// The jobs workflow on both engines: the CDK state machine runs the definition file with every task
// function, and the local interpreter binds every Task state to a task module.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { StateMachine as LocalStateMachine } from "aws-local-stepfunctions";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { MapgateStack } from "#infra/aws/stack.ts";
import { bindTasks, readDefinition, taskStates } from "#infra/local/workflows.ts";
import { ROUTES, taskVariable, WORKFLOW } from "#shared/system.ts";
import { PAGE } from "#shared/publish-layers.ts";
import { JOB_DEADLINE_MS } from "#shared/publishing.ts";
import { ROOT } from "./helpers/engine.ts";

type Resource = { Type: string; Properties: Record<string, unknown> };
let resources: [string, Resource][];
const pascal = (id: string) => id.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

beforeAll(() => {
  const app = new App({ context: { "aws:cdk:bundling-stacks": [] } });
  const stack = new MapgateStack(app, "mapgate-wf");
  resources = Object.entries(Template.fromStack(stack).toJSON().Resources as Record<string, Resource>);
});

const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);

describe("the state machine", () => {
  it("is a Standard state machine logging every event with tracing on", () => {
    const machines = ofType("AWS::StepFunctions::StateMachine");
    expect(machines).toHaveLength(1);
    const p = machines[0]?.[1].Properties ?? {};
    expect(p.StateMachineType).toBe("STANDARD");
    expect(p.TracingConfiguration).toEqual({ Enabled: true });
    expect(p.LoggingConfiguration).toMatchObject({ Level: "ALL", IncludeExecutionData: true });
  });

  it("runs the definition file, with each task's function substituted", () => {
    const p = ofType("AWS::StepFunctions::StateMachine")[0]?.[1].Properties ?? {};
    expect(p.DefinitionString).toBe(readFileSync(join(ROOT, WORKFLOW.file), "utf8"));
    // The execution's time limit lives in the definition itself (the construct's `timeout` is ignored by
    // DefinitionBody.fromString), below the deadline after which a job read as processing is failed.
    const timeout = (JSON.parse(String(p.DefinitionString)) as { TimeoutSeconds?: number }).TimeoutSeconds;
    expect(timeout).toBe(3600);
    expect((timeout ?? Infinity) * 1000).toBeLessThan(JOB_DEADLINE_MS);
    const subs = p.DefinitionSubstitutions as Record<string, { "Fn::GetAtt": [string, string] }>;
    expect(Object.keys(subs).sort()).toEqual(WORKFLOW.tasks.map((t) => taskVariable(t.id)).sort());
    for (const task of WORKFLOW.tasks) {
      const [logicalId] = subs[taskVariable(task.id)]?.["Fn::GetAtt"] ?? [];
      expect(logicalId, task.id).toMatch(new RegExp(`^${pascal(task.id)}Function`));
      expect(resources.find(([id]) => id === logicalId)?.[1].Type).toBe("AWS::Lambda::Function");
    }
  });

  it("fails the test when a Task state has no declared task or a declared task no Task state", () => {
    const { json } = readDefinition(ROOT);
    const variables = new Set(taskStates(json).map((t) => t.variable));
    expect([...variables].sort()).toEqual(WORKFLOW.tasks.map((t) => taskVariable(t.id)).sort());
  });

  it("binds every Task state to a task module locally, and refuses a definition with an unbound Task", async () => {
    const { json } = readDefinition(ROOT);
    const bindings = await bindTasks(ROOT, json, WORKFLOW.tasks);
    expect(Object.keys(bindings).sort()).toEqual(
      taskStates(json)
        .map((t) => t.state)
        .sort(),
    );
    const broken = JSON.parse(JSON.stringify(json)) as { States: Record<string, { Resource?: string }> };
    (broken.States.Describe as { Resource: string }).Resource = "${TaskNobodyDeclared}";
    await expect(bindTasks(ROOT, broken, WORKFLOW.tasks)).rejects.toThrow(/names \$\{TaskNobodyDeclared\}/);
    await expect(bindTasks(ROOT, json, [...WORKFLOW.tasks, { id: "task-extra", tables: {} }])).rejects.toThrow(
      /task-extra/,
    );
  });

  it("grants each task function only its declared tables, and only job-starting routes may start executions", () => {
    const policies = [...ofType("AWS::IAM::Policy"), ...ofType("AWS::IAM::ManagedPolicy")];
    // A role's statements: its default policy's, and those of the overflow policies the CDK adds past IAM's
    // inline size limit (the uploads function's role has one).
    const actionsOf = (prefix: string) =>
      policies
        .filter(([id]) => id.startsWith(`${prefix}RoleDefaultPolicy`) || id.startsWith(`${prefix}RoleOverflowPolicy`))
        .flatMap(
          ([, p]) =>
            (p.Properties.PolicyDocument as { Statement: { Action: string | string[]; Resource: unknown }[] })
              .Statement,
        );
    for (const task of WORKFLOW.tasks) {
      const statements = actionsOf(pascal(task.id));
      const tables = JSON.stringify(
        statements.filter((s) => JSON.stringify(s.Action).includes("dynamodb:")).map((s) => s.Resource),
      );
      for (const other of ["Portals", "Users", "Tokens", "Roles"])
        expect(tables, task.id).not.toContain(`${other}Table`);
      const writes = statements.filter((s) => JSON.stringify(s.Action).includes("dynamodb:PutItem"));
      expect(writes.length > 0, task.id).toBe(Object.values(task.tables).includes("write"));
    }
    for (const route of ROUTES) {
      const starts = JSON.stringify(actionsOf(pascal(route.id))).includes("states:StartExecution");
      expect(starts, route.id).toBe(route.startsWorkflow === true);
    }
    const fn = ofType("AWS::Lambda::Function").find(([id]) => id.startsWith("DatastorePublishFunction"))?.[1];
    expect(
      (fn?.Properties.Environment as { Variables: Record<string, unknown> }).Variables.STATE_MACHINE_ARN,
    ).toBeDefined();
  });
});

type Retrier = {
  ErrorEquals: string[];
  IntervalSeconds?: number;
  BackoffRate?: number;
  MaxAttempts?: number;
  MaxDelaySeconds?: number;
  JitterStrategy?: string;
};
type State = {
  Type: string;
  Resource?: string;
  Retry?: Retrier[];
  Catch?: { ErrorEquals: string[]; ResultPath?: string; Next: string }[];
  Next?: string;
  End?: boolean;
};
const LAMBDA_THROTTLES = [
  "Lambda.TooManyRequestsException",
  "Lambda.ServiceException",
  "Lambda.AWSLambdaException",
  "Lambda.SdkClientException",
];

describe("the definition's limits", () => {
  const states = () => readDefinition(ROOT).json.States as Record<string, State>;

  it("catches every failure of every Task into FailJob, States.DataLimitExceeded included (States.ALL does not match it)", () => {
    for (const [name, state] of Object.entries(states())) {
      expect(state.Type, name).not.toBe("Map");
      // NotifyCaller runs after the job has ended: its failure is logged, never turned into the job's.
      if (state.Type !== "Task" || name === "FailJob" || name === "NotifyCaller") continue;
      expect(state.Catch, name).toEqual([
        { ErrorEquals: ["States.DataLimitExceeded"], ResultPath: "$.error", Next: "FailJob" },
        { ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "FailJob" },
      ]);
    }
    expect(states().FailJob?.Next).toBe("Finished");
    expect(states().NotifyCaller?.Catch).toEqual([
      { ErrorEquals: ["States.ALL"], ResultPath: "$.notifyError", Next: "Ended" },
    ]);
  });

  it("gives throttling its own retrier, with capped backoff and full jitter, before the catch-all one", () => {
    for (const [name, state] of Object.entries(states())) {
      if (state.Type !== "Task") continue;
      const retry = state.Retry ?? [];
      const throttle = retry.findIndex((r) => r.ErrorEquals.includes("Lambda.TooManyRequestsException"));
      const any = retry.findIndex((r) => r.ErrorEquals.includes("States.ALL"));
      expect(throttle, name).toBeGreaterThanOrEqual(0);
      expect(throttle, name).toBeLessThan(any);
      expect(any, name).toBe(retry.length - 1);
      const r = retry[throttle] as Retrier;
      expect(r.ErrorEquals, name).toEqual(expect.arrayContaining(LAMBDA_THROTTLES));
      // Neither engine checks these locally (the interpreter runs "JitterStrategy": "BOGUS" without a word, and
      // the CDK passes the file as it is): the ranges Step Functions accepts, checked here.
      expect(r).toMatchObject({ IntervalSeconds: 2, BackoffRate: 2, MaxAttempts: 8, JitterStrategy: "FULL" });
      expect(["FULL", "NONE"]).toContain(r.JitterStrategy);
      expect(Number.isInteger(r.MaxDelaySeconds) && (r.MaxDelaySeconds ?? 0) >= 1).toBe(true);
      expect(r.MaxDelaySeconds).toBeLessThanOrEqual(31_622_400);
      expect(Number.isInteger(r.IntervalSeconds) && Number.isInteger(r.MaxAttempts)).toBe(true);
    }
  });

  it("loops over pages with a state that does not grow, retries throttles eight times and sends data-limit errors to FailJob", async () => {
    const { text } = readDefinition(ROOT);
    const definition = JSON.parse(
      text.replace(/\$\{(\w+)\}/g, (_m, v: string) => `arn:aws:lambda:us-east-1:000000000000:function:${v}`),
    ) as Record<string, unknown>;
    const machine = new LocalStateMachine(definition as never);
    const longest = "/".padEnd(1024, "x"); // the longest dataset path a data store accepts
    const PAGES = 300;
    let throttled = 0;
    const failed: unknown[] = [];
    const handlers = {
      PublishLayerPage: async (input: { page?: { published: number } }) => {
        const n = (input.page?.published ?? 0) + 1;
        if (n === 7 && throttled < 8) {
          throttled++;
          throw Object.assign(new Error("Rate exceeded"), { name: "Lambda.TooManyRequestsException" });
        }
        return {
          cursor: `${longest.slice(0, -6)}${String(n).padStart(6, "0")}`,
          done: n === PAGES,
          published: n,
          alreadyPublished: 0,
        };
      },
      CompleteJob: async () => ({ status: "completed" }),
      FailJob: async (input: unknown) => {
        failed.push(input);
        return { status: "failed" };
      },
    };
    const input = {
      jobId: "f".repeat(32),
      portalId: "p".repeat(32),
      owner: "publisher",
      operation: "publishLayers",
      params: { datastoreId: "d".repeat(32), serverId: "s".repeat(32), serverFolder: "Layers" },
      origin: "https://maps.example.com",
    };
    const sizes = new Map<number, number>();
    const run = machine.run(input, {
      overrides: { taskResourceLocalHandlers: handlers as never, retryIntervalOverrides: { PublishLayerPage: 0 } },
    });
    let entered = 0;
    const logged = (async () => {
      for await (const event of run.eventLogs) {
        if (event.type !== "StateEntered") continue;
        entered++;
        if (event.state.name === "PublishLayerPage") {
          const page = (event.state.input as { page?: { published: number } }).page?.published ?? 0;
          sizes.set(page, JSON.stringify(event.state.input).length);
        }
      }
    })();
    await run.result;
    await logged;
    expect(throttled).toBe(8);
    expect(failed).toEqual([]);
    // Two states a page: on AWS ~7 history events (the Task's entered, scheduled, started, succeeded and exited,
    // the Choice's entered and exited). 1,000,000 datasets in pages of PAGE keep an execution well below
    // Standard's 25,000 events, with half of them left for retried invocations (3 events each).
    // Route, the pages, CompleteJob, then Finished, Ended and Succeeded (no task token: no NotifyCaller).
    expect(entered).toBe(1 + 2 * PAGES + 1 + 3);
    expect(Math.ceil(1_000_000 / PAGE) * 7 + 20).toBeLessThan(25_000 / 2);
    // The last page's state is the second's but for the counts' digits: nothing accumulates.
    expect((sizes.get(PAGES - 1) ?? Infinity) - (sizes.get(1) ?? 0)).toBeLessThan(8);
    expect(Math.max(...sizes.values())).toBeLessThan(2_048);

    // A ninth throttle in a row, or a state over Step Functions' payload limit, ends in FailJob.
    for (const error of ["Lambda.TooManyRequestsException", "States.DataLimitExceeded"]) {
      failed.length = 0;
      const failing = machine.run(input, {
        overrides: {
          taskResourceLocalHandlers: {
            ...handlers,
            PublishLayerPage: async () => {
              throw Object.assign(new Error(error), { name: error });
            },
          } as never,
          retryIntervalOverrides: { PublishLayerPage: 0 },
        },
      });
      await expect(failing.result).rejects.toThrow();
      expect(failed, error).toEqual([
        expect.objectContaining({ jobId: input.jobId, error: { Error: error, Cause: error } }),
      ]);
    }
  });
});
