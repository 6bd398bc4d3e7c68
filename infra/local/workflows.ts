// The local engine's Step Functions: a small endpoint speaking the SDK's own JSON protocol
// (StartExecution, DescribeExecution) that runs the workflow definition file with aws-local-stepfunctions,
// every Task state bound to the same task handler module the CDK deploys as a Lambda function.
import { grants } from "#shared/config.ts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { StateMachine } from "aws-local-stepfunctions";
import { type TaskSpec, taskVariable, WORKFLOW } from "#shared/system.ts";
import {
  type AwsJsonAnswer,
  MAX_NESTING,
  parseNestedJson,
  serveAwsJson,
  stringMember,
  unknownOperation,
} from "./aws-json.ts";

/**
 * Other state machines served on the same endpoint (callers' own, caller-workflows.ts): what this endpoint asks of
 * them, declared here so the endpoint does not depend on the module that depends on it.
 */
export interface AttachedWorkflows {
  /** The operations they answer. */
  readonly operations: ReadonlySet<string>;
  /** Their answer to an operation (`__status` for a status other than 200), or undefined when it is not theirs. */
  handle(operation: string, body: Json): Promise<Json | undefined>;
}

export const LOCAL_STATE_MACHINE_ARN = "arn:aws:states:us-east-1:000000000000:stateMachine:mapgate-jobs";
const fakeArn = (id: string) => `arn:aws:lambda:us-east-1:000000000000:function:mapgate-${id}`;

type Json = Record<string, unknown>;
export type TaskFn = (input: never) => Promise<unknown>;

/** An execution as DescribeExecution shows it, on the jobs machine or a caller's. */
export interface ExecutionRecord {
  readonly arn: string;
  readonly name: string;
  readonly input: string;
  readonly startDate: number;
  status: "RUNNING" | "SUCCEEDED" | "FAILED";
  stopDate?: number;
  output?: string;
  error?: string;
  cause?: string;
}

interface Execution extends ExecutionRecord {
  done: Promise<void>;
}

export function describeExecution(e: ExecutionRecord, stateMachineArn: string): Record<string, unknown> {
  return {
    executionArn: e.arn,
    stateMachineArn,
    name: e.name,
    status: e.status,
    startDate: e.startDate / 1000,
    ...(e.stopDate ? { stopDate: e.stopDate / 1000 } : {}),
    input: e.input,
    ...(e.output !== undefined ? { output: e.output } : {}),
    ...(e.error !== undefined ? { error: e.error, cause: e.cause ?? "" } : {}),
  };
}

/** Step Functions takes at most 256 KiB of execution input and of task output: so does the local engine. */
export const MAX_PAYLOAD_CHARS = 262_144;

export const payloadTooLarge = (member: "input" | "output") => ({
  __type: "ValidationException",
  message: `1 validation error detected: Value at '${member}' failed to satisfy constraint: Member must have length less than or equal to ${MAX_PAYLOAD_CHARS}`,
});

/** An execution's input, parsed; InvalidExecutionInput when it is not JSON or nests too deep for the interpreter. */
export function parseExecutionInput(input: string): unknown {
  return parseNestedJson(input, "InvalidExecutionInput", {
    notJson: "Invalid State Machine Execution Input: not JSON",
    tooDeep: `Invalid State Machine Execution Input: nested more than ${MAX_NESTING} levels deep`,
  });
}

/** Step Functions' largest request (a definition of 1 MiB, escaped): a larger body is read but not kept. */
const MAX_REQUEST_BYTES = 4 * 1024 * 1024;
/** The operations of the jobs machine; callers' machines have theirs (caller-workflows.ts). */
const JOBS_OPERATIONS = new Set(["StartExecution", "DescribeExecution"]);

/** Every Task state of a definition (Map iterators included), with the substitution variable it names. */
export function taskStates(definition: Json): { state: string; variable: string }[] {
  const out: { state: string; variable: string }[] = [];
  const walk = (states: Record<string, Json>) => {
    for (const [name, state] of Object.entries(states)) {
      if (state.Type === "Task") {
        const m = String(state.Resource).match(/^\$\{(\w+)\}$/);
        out.push({ state: name, variable: m?.[1] ?? String(state.Resource) });
      }
      const nested = (state.Iterator ?? state.ItemProcessor) as { States?: Record<string, Json> } | undefined;
      if (nested?.States) walk(nested.States);
      for (const branch of (state.Branches ?? []) as { States: Record<string, Json> }[]) walk(branch.States);
    }
  };
  walk(definition.States as Record<string, Json>);
  return out;
}

export function readDefinition(root: string): { text: string; json: Json } {
  const text = readFileSync(join(root, WORKFLOW.file), "utf8");
  return { text, json: JSON.parse(text) as Json };
}

/**
 * Binds every Task state to its task module; refuses to start if a Task names no declared task or a declared
 * task is never used (a Task without a binding would try to call real AWS Lambda).
 */
export async function bindTasks(
  root: string,
  definition: Json,
  tasks: readonly TaskSpec[],
): Promise<Record<string, TaskFn>> {
  const byVariable = new Map(tasks.map((t) => [taskVariable(t.id), t]));
  const bindings: Record<string, TaskFn> = {};
  const used = new Set<string>();
  for (const { state, variable } of taskStates(definition)) {
    const task = byVariable.get(variable);
    if (!task) throw new Error(`Task state ${state} names \${${variable}}, which no declared task provides`);
    const mod = (await import(pathToFileURL(join(root, "functions", `${task.id}.ts`)).href)) as { handler?: TaskFn };
    if (typeof mod.handler !== "function") throw new Error(`functions/${task.id}.ts exports no handler`);
    // As its own Lambda function on AWS, the task reaches only the tables it declares.
    const handler = mod.handler;
    const tables = new Set(Object.keys(task.tables));
    bindings[state] = (input: never) => grants.run(tables, () => handler(input));
    used.add(task.id);
  }
  const unused = tasks.filter((t) => !used.has(t.id));
  if (unused.length > 0) throw new Error(`declared tasks no Task state uses: ${unused.map((t) => t.id).join(", ")}`);
  return bindings;
}

export interface LocalWorkflows {
  readonly endpoint: string;
  /** Imports and binds the task modules: called once the environment they read at cold start is set. */
  load(): Promise<void>;
  /** Runs an execution directly (the engine resumes unfinished jobs with it). */
  start(name: string, input: string): Execution;
  /**
   * Executions started, states entered and the largest state input or output seen (JSON bytes) since start
   * (for the benchmarks, and for tests that check the state stays far below Step Functions' 256 KiB).
   */
  stats(): { executions: number; transitions: number; largestState: number };
  /** Resolves when no execution is running. */
  drained(): Promise<void>;
  /** Serves callers' own state machines and task tokens on the same endpoint. */
  attach(callers: AttachedWorkflows): void;
  close(): Promise<void>;
}

/**
 * Another state machine to run than the definition file with the task modules: the artifact test's, whose
 * definition comes from the synthesized template and whose tasks run the synthesized bundles.
 */
export interface WorkflowSource {
  /** The definition's text, its substitutions already resolved. */
  readonly definition: string;
  readonly stateMachineArn: string;
  /** What runs each Task state, by state name. */
  readonly bind: (definition: Json) => Promise<Record<string, TaskFn>>;
}

export async function startWorkflows(root: string, source?: WorkflowSource): Promise<LocalWorkflows> {
  const { text, json } = source
    ? { text: source.definition, json: JSON.parse(source.definition) as Json }
    : readDefinition(root);
  const stateMachineArn = source?.stateMachineArn ?? LOCAL_STATE_MACHINE_ARN;
  let bindings: Record<string, TaskFn> | undefined;
  let substituted = text;
  for (const task of WORKFLOW.tasks)
    substituted = substituted.replaceAll(`\${${taskVariable(task.id)}}`, fakeArn(task.id));
  const machine = new StateMachine(JSON.parse(substituted));
  // Retries wait milliseconds here, not seconds: the local engine has no throttling to back off from.
  const retryIntervalOverrides = Object.fromEntries(taskStates(json).map(({ state }) => [state, 50]));
  const executions = new Map<string, Execution>();
  let callers: AttachedWorkflows | undefined;
  const counts = { executions: 0, transitions: 0, largestState: 0 };
  const measure = (state: unknown) => {
    counts.largestState = Math.max(counts.largestState, Buffer.byteLength(JSON.stringify(state ?? null)));
  };

  const start = (name: string, input: string): Execution => {
    if (!bindings) throw new Error("workflow tasks are not loaded yet");
    const arn = `${stateMachineArn.replace(":stateMachine:", ":execution:")}:${name}`;
    const run = machine.run(JSON.parse(input), {
      overrides: { taskResourceLocalHandlers: bindings as never, retryIntervalOverrides },
      context: {
        Execution: { Id: arn, Name: name, Input: JSON.parse(input), StartTime: new Date().toISOString() },
      } as never,
    });
    const execution: Execution = {
      arn,
      name,
      input,
      startDate: Date.now(),
      status: "RUNNING",
      done: Promise.resolve(),
    };
    // Always awaited: a failed execution nobody awaits would take the whole engine down.
    execution.done = run.result.then(
      (output) => {
        execution.status = "SUCCEEDED";
        execution.output = JSON.stringify(output);
        execution.stopDate = Date.now();
      },
      () => {
        execution.status = "FAILED";
        execution.stopDate = Date.now();
      },
    );
    // Finished executions are forgotten after an hour (a name can then be used again, as jobs never reuse one).
    void execution.done.then(() => setTimeout(() => executions.delete(name), 3600_000).unref());
    executions.set(name, execution);
    counts.executions++;
    void (async () => {
      for await (const event of run.eventLogs) {
        if (event.type === "StateEntered") {
          counts.transitions++;
          measure(event.state.input);
        } else if (event.type === "StateExited") measure(event.state.output);
      }
    })().catch(() => undefined);
    return execution;
  };

  const send = (status: number, body: Json): AwsJsonAnswer => ({ status, body });
  const describe = (e: Execution) => describeExecution(e, stateMachineArn);

  const handle = async (operation: string, body: Json): Promise<AwsJsonAnswer> => {
    const fromCallers = await callers?.handle(operation, body);
    if (fromCallers) {
      const { __status, ...rest } = fromCallers;
      return send(typeof __status === "number" ? __status : 200, rest);
    }
    if (operation === "StartExecution") {
      const name = stringMember(body, "name") ?? "";
      const input = stringMember(body, "input") ?? "{}";
      if (input.length > MAX_PAYLOAD_CHARS) return send(400, payloadTooLarge("input"));
      if (stringMember(body, "stateMachineArn") !== stateMachineArn)
        return send(400, { __type: "StateMachineDoesNotExist", message: "State Machine Does Not Exist" });
      if (!/^[\w-]{1,80}$/.test(name)) return send(400, { __type: "InvalidName", message: "Invalid Name" });
      parseExecutionInput(input);
      const existing = executions.get(name);
      if (existing) {
        // As on AWS: the same name and input is the same execution; anything else is refused.
        if (existing.input === input && existing.status === "RUNNING")
          return send(200, { executionArn: existing.arn, startDate: existing.startDate / 1000 });
        return send(400, {
          __type: "ExecutionAlreadyExists",
          message: `Execution Already Exists: '${existing.arn}'`,
        });
      }
      const e = start(name, input);
      return send(200, { executionArn: e.arn, startDate: e.startDate / 1000 });
    }
    if (operation === "DescribeExecution") {
      const name = (stringMember(body, "executionArn") ?? "").split(":").pop() ?? "";
      const e = executions.get(name);
      return e
        ? send(200, describe(e))
        : send(400, { __type: "ExecutionDoesNotExist", message: "Execution Does Not Exist" });
    }
    throw unknownOperation(`AWSStepFunctions.${operation}`);
  };

  const { server, endpoint } = await serveAwsJson({
    service: "AWSStepFunctions",
    version: "1.0",
    internalType: "InternalFailure",
    maxBytes: MAX_REQUEST_BYTES,
    operations: () => new Set([...JOBS_OPERATIONS, ...(callers?.operations ?? [])]),
    handle,
  });
  return {
    endpoint,
    load: async () => {
      bindings = source ? await source.bind(json) : await bindTasks(root, json, WORKFLOW.tasks);
    },
    start,
    stats: () => ({ ...counts }),
    drained: async () => {
      await Promise.all([...executions.values()].map((e) => e.done));
    },
    attach: (c) => {
      callers = c;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
