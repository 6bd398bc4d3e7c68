// The jobs workflow on both engines: the CDK state machine runs the definition file with every task
// function, and the local interpreter binds every Task state to a task module.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { App } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { beforeAll, describe, expect, it } from "vitest";
import { MapgateStack } from "#infra/aws/stack.ts";
import { bindTasks, readDefinition, taskStates } from "#infra/local/workflows.ts";
import { ROUTES, taskVariable, WORKFLOW } from "#infra/system.ts";
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
    const policies = ofType("AWS::IAM::Policy");
    const actionsOf = (prefix: string) =>
      (
        (policies.find(([id]) => id.startsWith(`${prefix}RoleDefaultPolicy`))?.[1].Properties.PolicyDocument as {
          Statement: { Action: string | string[]; Resource: unknown }[];
        }) ?? { Statement: [] }
      ).Statement;
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
