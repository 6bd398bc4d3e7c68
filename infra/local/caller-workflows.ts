// Callers' own state machines on the local engine (CreateStateMachine, StartExecution, DescribeExecution), with
// the callback pattern: a `.waitForTaskToken` Task waits until SendTaskSuccess or SendTaskFailure names its
// token (SendTaskHeartbeat keeps it alive), as on AWS. The local interpreter knows no task tokens: each such
// Task is given a fresh token here, in place of `$$.Task.Token`. Task states may invoke Lambda functions the
// local engine serves (lambda:invoke, lambda:invoke.waitForTaskToken, or a function ARN), as the machine's role.
import { randomBytes } from "node:crypto";
import { StateMachine } from "aws-local-stepfunctions";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { AwsJsonError, type Json, MAX_NESTING, stringMember } from "./aws-json.ts";
import { type InvokeResult, LOCAL_ACCOUNT, LOCAL_REGION } from "./lambda.ts";
import {
  describeExecution,
  type ExecutionRecord,
  MAX_PAYLOAD_CHARS,
  parseExecutionInput,
  payloadTooLarge,
} from "./workflows.ts";

type Invoke = (functionName: string, payload: string, principal: string) => Promise<InvokeResult>;

const LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke";
const WAIT = `${LAMBDA_INVOKE}.waitForTaskToken`;
const FUNCTION_ARN = /^arn:aws:lambda:[a-z0-9-]+:\d{12}:function:[\w-]+(:[\w$-]+)?$/;

interface Waiter {
  resolve(output: unknown): void;
  reject(err: Error): void;
  /** A heartbeat: the HeartbeatSeconds clock starts again. */
  beat(): void;
}

/**
 * The interpreter gives a Task without TimeoutSeconds 60 s, where AWS waits up to a year: waiting Tasks get the
 * longest wait a Node timer holds (~24 days) unless they say otherwise, and this code keeps their clocks.
 */
const LONGEST_WAIT_SECONDS = 2_000_000;

function limitMs(seconds: unknown): number | undefined {
  return typeof seconds === "number" && seconds > 0 ? Math.min(seconds, LONGEST_WAIT_SECONDS) * 1000 : undefined;
}

const isObject = (v: unknown): v is Json => v !== null && typeof v === "object" && !Array.isArray(v);
const invalidDefinition = (problem: string) =>
  new AwsJsonError("InvalidDefinition", `Invalid State Machine Definition: ${problem}`);

/**
 * Every state of a definition, those of Map iterators and Parallel branches included, in a loop (a definition
 * is a caller's JSON: its shape is checked here before anything reads it, and nothing recurses over it).
 */
function eachState(definition: unknown, visit: (name: string, state: Json) => void): void {
  const machines: unknown[] = [definition];
  for (let m = machines.pop(); m !== undefined; m = machines.pop()) {
    if (!isObject(m) || !isObject(m.States)) throw invalidDefinition("a state machine must have States, an object.");
    for (const [name, state] of Object.entries(m.States)) {
      if (!isObject(state)) throw invalidDefinition(`state ${name.slice(0, 80)} must be an object.`);
      const nested = state.Iterator ?? state.ItemProcessor;
      if (nested !== undefined) machines.push(nested);
      if (state.Branches !== undefined) {
        if (!Array.isArray(state.Branches))
          throw invalidDefinition(`state ${name.slice(0, 80)}: Branches must be a list.`);
        machines.push(...(state.Branches as unknown[]));
      }
      visit(name, state);
    }
  }
}

/** The definition the interpreter runs: waiting Tasks without a TimeoutSeconds get the longest one. */
function withWaits(definition: Json): Json {
  const copy = structuredClone(definition);
  eachState(copy, (_name, state) => {
    if (state.Type === "Task" && state.Resource === WAIT && state.TimeoutSeconds === undefined) {
      state.TimeoutSeconds = LONGEST_WAIT_SECONDS;
    }
  });
  return copy;
}

/** A Task's FunctionName: anything but a string is no name (and Invoke refuses it as Lambda does). */
const nameOf = (v: unknown): string => (typeof v === "string" ? v : "");

/** A failed task as the interpreter's Retry/Catch match it: by error name, with the cause as message. */
function taskError(name: string, cause: string): Error {
  const e = new Error(cause);
  e.name = name;
  return e;
}

interface Machine {
  readonly arn: string;
  readonly definition: string;
  readonly roleArn: string;
  readonly machine: StateMachine;
  readonly bindings: Record<string, (input: never) => Promise<unknown>>;
  /** What `$$.Task.Token` reads in this machine's executions, replaced by a fresh token in each waiting Task. */
  readonly placeholder: string;
}

interface Execution extends ExecutionRecord {
  readonly machine: Machine;
}

export interface CallerWorkflows {
  /** The operations it answers (StartExecution and DescribeExecution for its machines only). */
  readonly operations: ReadonlySet<string>;
  /** Answers a Step Functions operation it knows; undefined for the others (the jobs machine's). */
  handle(operation: string, body: Json): Promise<Json | undefined>;
  drained(): Promise<void>;
}

export function callerWorkflows(invoke: Invoke): CallerWorkflows {
  const machines = new Map<string, Machine>();
  const executions = new Map<string, Execution>();
  const running = new Set<Promise<unknown>>();
  const waiting = new Map<string, Waiter>();
  /** Tokens whose task timed out (or whose execution ended): answering them is TaskTimedOut, as on AWS. */
  const expired = new Set<string>();

  const invokeAs = async (principal: string, functionName: string, payload: unknown) => {
    const result = await invoke(functionName, JSON.stringify(payload ?? {}), principal);
    if (result.kind === "refused") throw taskError(`Lambda.${result.type}`, result.message);
    if (result.kind === "function-error") {
      const { errorType, errorMessage } = JSON.parse(result.payload) as { errorType?: string; errorMessage?: string };
      throw taskError(errorType ?? "Lambda.Unknown", JSON.stringify({ errorType, errorMessage }));
    }
    return JSON.parse(result.payload) as unknown;
  };

  const bind = (definition: Json, roleArn: string, placeholder: string) => {
    const bindings: Record<string, (input: never) => Promise<unknown>> = {};
    eachState(definition, (name, state) => {
      if (state.Type !== "Task") return;
      if (typeof state.Resource !== "string")
        throw invalidDefinition(`state ${name.slice(0, 80)}: Resource must be a string.`);
      const resource = state.Resource;
      if (resource === LAMBDA_INVOKE) {
        bindings[name] = async (input: never) => {
          const { FunctionName, Payload } = input as { FunctionName?: string; Payload?: unknown };
          const payload = await invokeAs(roleArn, nameOf(FunctionName), Payload);
          return { ExecutedVersion: "$LATEST", Payload: payload, StatusCode: 200 };
        };
      } else if (resource === WAIT) {
        const timeoutMs = limitMs(state.TimeoutSeconds);
        const heartbeatMs = limitMs(state.HeartbeatSeconds);
        bindings[name] = async (input: never) => {
          const token = randomBytes(48).toString("base64url");
          const text = JSON.stringify(input).replaceAll(placeholder, token);
          const { FunctionName, Payload } = JSON.parse(text) as { FunctionName?: string; Payload?: unknown };
          const timers: NodeJS.Timeout[] = [];
          const answered = new Promise<unknown>((resolve, reject) => {
            const expire = (error: string) => () => reject(taskError(error, `The task's ${error} passed.`));
            let heartbeat: NodeJS.Timeout | undefined;
            const beat = () => {
              if (heartbeatMs === undefined) return;
              clearTimeout(heartbeat);
              heartbeat = setTimeout(expire("States.HeartbeatTimeout"), heartbeatMs);
              timers.push(heartbeat);
            };
            if (timeoutMs !== undefined) timers.push(setTimeout(expire("States.Timeout"), timeoutMs));
            beat();
            waiting.set(token, { resolve, reject, beat });
          });
          // The answer may come before the invocation returns (a refusal is answered at once): never unhandled.
          answered.catch(() => undefined);
          try {
            // The function's own answer is not the task's result: the token's is.
            await invokeAs(roleArn, nameOf(FunctionName), Payload);
            return await answered;
          } finally {
            for (const t of timers) clearTimeout(t);
            if (waiting.delete(token)) expired.add(token);
          }
        };
      } else if (FUNCTION_ARN.test(resource)) {
        bindings[name] = (input: never) => invokeAs(roleArn, resource, input);
      } else {
        throw invalidDefinition(
          `state ${name.slice(0, 80)}: the local engine runs Task states that invoke its Lambda functions (${LAMBDA_INVOKE}, ${WAIT} or a function ARN); ${resource.slice(0, 128)} is not available locally.`,
        );
      }
    });
    return bindings;
  };

  const answerToken = (
    body: Json,
    settle: (w: { resolve: (o: unknown) => void; reject: (e: Error) => void }) => void,
  ) => {
    const token = stringMember(body, "taskToken") ?? "";
    const waiter = waiting.get(token);
    if (!waiter && expired.has(token)) throw new AwsJsonError("TaskTimedOut", "Task Timed Out");
    if (!waiter) throw new AwsJsonError("TaskDoesNotExist", "Task Does Not Exist");
    settle(waiter);
    waiting.delete(token);
    return {};
  };

  const ops = new Map<string, (body: Json) => Json | undefined>([
    [
      "CreateStateMachine",
      (body) => {
        const name = stringMember(body, "name") ?? "";
        if (!/^[\w-]{1,80}$/.test(name)) throw new AwsJsonError("InvalidName", "Invalid Name");
        const roleArn = stringMember(body, "roleArn") ?? "";
        if (!/^arn:aws:iam::\d{12}:role\/[\w+=,.@/-]+$/.test(roleArn))
          throw new AwsJsonError("InvalidArn", "Invalid Arn: roleArn");
        const text = stringMember(body, "definition") ?? "";
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          throw invalidDefinition("not JSON");
        }
        if (!isObject(parsed)) throw invalidDefinition("a definition is a JSON object.");
        if (nestedDeeperThan(parsed, MAX_NESTING))
          throw invalidDefinition(`nested more than ${MAX_NESTING} levels deep.`);
        const definition = parsed;
        const arn = `arn:aws:states:${LOCAL_REGION}:${LOCAL_ACCOUNT}:stateMachine:${name}`;
        const existing = machines.get(arn);
        if (existing) {
          if (existing.definition === text && existing.roleArn === roleArn)
            return { stateMachineArn: arn, creationDate: Date.now() / 1000 };
          throw new AwsJsonError("StateMachineAlreadyExists", `State Machine Already Exists: '${arn}'`);
        }
        const placeholder = `local-task-token-${randomBytes(12).toString("hex")}`;
        const bindings = bind(definition, roleArn, placeholder);
        let machine: StateMachine;
        try {
          machine = new StateMachine(withWaits(definition) as never);
        } catch (err) {
          // The validator's own findings are told; anything else it threw is not the caller's to read.
          const message = err instanceof Error ? err.message : "";
          throw invalidDefinition(
            message.startsWith("State machine definition is invalid")
              ? message.slice(0, 4096)
              : "not a valid state machine.",
          );
        }
        machines.set(arn, { arn, definition: text, roleArn, machine, bindings, placeholder });
        return { stateMachineArn: arn, creationDate: Date.now() / 1000 };
      },
    ],
    [
      "StartExecution",
      (body) => {
        const m = machines.get(stringMember(body, "stateMachineArn") ?? "");
        if (!m) return undefined;
        const name = stringMember(body, "name") || randomBytes(16).toString("hex");
        if (!/^[\w-]{1,80}$/.test(name)) throw new AwsJsonError("InvalidName", "Invalid Name");
        const arn = `${m.arn.replace(":stateMachine:", ":execution:")}:${name}`;
        if (executions.has(arn)) throw new AwsJsonError("ExecutionAlreadyExists", `Execution Already Exists: '${arn}'`);
        const input = stringMember(body, "input") ?? "{}";
        if (input.length > MAX_PAYLOAD_CHARS) return { __status: 400, ...payloadTooLarge("input") };
        const parsed = parseExecutionInput(input);
        const e: Execution = { arn, machine: m, name, input, startDate: Date.now(), status: "RUNNING" };
        executions.set(arn, e);
        const run = m.machine.run(parsed as never, {
          overrides: { taskResourceLocalHandlers: m.bindings as never },
          context: {
            Execution: {
              Id: arn,
              Name: name,
              Input: parsed,
              StartTime: new Date(e.startDate).toISOString(),
              RoleArn: m.roleArn,
            },
            StateMachine: { Id: m.arn, Name: m.arn.split(":").pop() },
            Task: { Token: m.placeholder },
          } as never,
        });
        // Always awaited: a failed execution nobody awaits would take the whole engine down.
        const done = run.result.then(
          (output) => {
            e.status = "SUCCEEDED";
            e.output = JSON.stringify(output);
            e.stopDate = Date.now();
          },
          (err: unknown) => {
            // The interpreter wraps what failed the execution (a Fail state's error, a task's) in an ExecutionError.
            const failure = ((err as { cause?: unknown }).cause ?? err) as { name?: string; message?: string };
            e.status = "FAILED";
            e.error = failure.name ?? "States.Runtime";
            e.cause = failure.message ?? "";
            e.stopDate = Date.now();
          },
        );
        running.add(done);
        void done.finally(() => running.delete(done));
        return { executionArn: arn, startDate: e.startDate / 1000 };
      },
    ],
    [
      "DescribeExecution",
      (body) => {
        const e = executions.get(stringMember(body, "executionArn") ?? "");
        return e ? describeExecution(e, e.machine.arn) : undefined;
      },
    ],
    [
      "SendTaskSuccess",
      (body) => {
        const text = stringMember(body, "output") ?? "";
        if (text.length > MAX_PAYLOAD_CHARS) return { __status: 400, ...payloadTooLarge("output") };
        return answerToken(body, (w) => {
          let output: unknown;
          try {
            output = JSON.parse(text);
          } catch {
            throw new AwsJsonError("InvalidOutput", "Invalid Output: not JSON");
          }
          if (nestedDeeperThan(output, MAX_NESTING))
            throw new AwsJsonError("InvalidOutput", `Invalid Output: nested more than ${MAX_NESTING} levels deep`);
          w.resolve(output);
        });
      },
    ],
    [
      "SendTaskFailure",
      (body) => {
        const error = stringMember(body, "error") || "States.TaskFailed";
        const cause = stringMember(body, "cause") ?? "";
        return answerToken(body, (w) => w.reject(taskError(error, cause)));
      },
    ],
    [
      "SendTaskHeartbeat",
      (body) => {
        const token = stringMember(body, "taskToken") ?? "";
        const waiter = waiting.get(token);
        if (!waiter && expired.has(token)) throw new AwsJsonError("TaskTimedOut", "Task Timed Out");
        if (!waiter) throw new AwsJsonError("TaskDoesNotExist", "Task Does Not Exist");
        waiter.beat();
        return {};
      },
    ],
  ]);

  return {
    operations: new Set(ops.keys()),
    handle: async (operation, body) => {
      const op = ops.get(operation);
      if (!op) return undefined;
      try {
        return op(body);
      } catch (err) {
        if (err instanceof AwsJsonError) return { __status: 400, __type: err.type, message: err.message };
        throw err;
      }
    },
    drained: async () => {
      await Promise.all([...running]);
    },
  };
}
