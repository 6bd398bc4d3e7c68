// Lambda's execution environments for one function of the artifact test: a child process each (started on
// the first invocation that finds none idle, as a cold start), running the function's bundle from the cloud
// assembly with exactly the template's environment plus what the Lambda service itself adds (its reserved
// variables and the role's session credentials), one invocation at a time, killed at the function's timeout.
import { type ChildProcess, fork } from "node:child_process";
import { randomUUID } from "node:crypto";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FunctionArtifact } from "./artifact.ts";
import { REGION } from "./artifact.ts";
import type { Credentials } from "./aws-stand-in.ts";

const RUNTIME = join(dirname(fileURLToPath(import.meta.url)), "lambda-runtime.ts");

/** Variables Lambda sets itself: a function's configuration may not set them (the deployment would fail). */
const RESERVED = [
  "_HANDLER",
  "_X_AMZN_TRACE_ID",
  "AWS_DEFAULT_REGION",
  "AWS_REGION",
  "AWS_EXECUTION_ENV",
  "AWS_LAMBDA_FUNCTION_NAME",
  "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
  "AWS_LAMBDA_FUNCTION_VERSION",
  "AWS_LAMBDA_INITIALIZATION_TYPE",
  "AWS_LAMBDA_LOG_GROUP_NAME",
  "AWS_LAMBDA_LOG_STREAM_NAME",
  "AWS_ACCESS_KEY",
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_LAMBDA_RUNTIME_API",
  "LAMBDA_TASK_ROOT",
  "LAMBDA_RUNTIME_DIR",
];

export interface LambdaError {
  readonly errorType: string;
  readonly errorMessage: string;
  readonly trace?: readonly string[];
}

/** A failed invocation: Lambda's FunctionError payload. */
export class InvocationError extends Error {
  readonly payload: LambdaError;
  constructor(payload: LambdaError) {
    super(payload.errorMessage);
    this.name = payload.errorType;
    this.payload = payload;
  }
}

interface Pending {
  readonly resolve: (value: unknown) => void;
  readonly reject: (err: Error) => void;
  readonly timer: NodeJS.Timeout;
}

interface Instance {
  readonly child: ChildProcess;
  readonly ready: Promise<void>;
  busy: boolean;
  pending: Pending | undefined;
}

type Message =
  { ready: true; node: string } | { initError: LambdaError } | { id: number; result?: unknown; error?: LambdaError };

let nextId = 1;

export class FunctionHost {
  readonly fn: FunctionArtifact;
  /** Everything the function's environments wrote (its logs), one line each. */
  readonly logs: string[] = [];
  /** Environments started so far. */
  coldStarts = 0;
  readonly #env: Record<string, string>;
  readonly #instances = new Set<Instance>();

  constructor(fn: FunctionArtifact, endpoint: string, credentials: Credentials) {
    this.fn = fn;
    const reserved = Object.keys(fn.environment).filter((k) => RESERVED.includes(k));
    if (reserved.length > 0) throw new Error(`${fn.id} sets Lambda's reserved variables ${reserved.join(", ")}`);
    if (!/^nodejs\d+\.x$/.test(fn.runtime)) throw new Error(`${fn.id}: runtime ${fn.runtime} is not modelled here`);
    this.#env = {
      ...fn.environment,
      _HANDLER: fn.handler,
      AWS_REGION: REGION,
      AWS_DEFAULT_REGION: REGION,
      AWS_EXECUTION_ENV: `AWS_Lambda_${fn.runtime}`,
      AWS_LAMBDA_FUNCTION_NAME: fn.name,
      AWS_LAMBDA_FUNCTION_MEMORY_SIZE: String(fn.memorySize),
      AWS_LAMBDA_FUNCTION_VERSION: "$LATEST",
      AWS_LAMBDA_INITIALIZATION_TYPE: "on-demand",
      AWS_LAMBDA_LOG_GROUP_NAME: fn.logGroup,
      AWS_LAMBDA_LOG_STREAM_NAME: `artifact/[$LATEST]${randomUUID().replaceAll("-", "")}`,
      AWS_ACCESS_KEY_ID: credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: credentials.secretAccessKey,
      AWS_SESSION_TOKEN: credentials.sessionToken,
      LAMBDA_TASK_ROOT: fn.codeDir,
      LAMBDA_RUNTIME_DIR: "/var/runtime",
      LANG: "en_US.UTF-8",
      TZ: ":UTC",
      PATH: "/usr/local/bin:/usr/bin/:/bin",
      // Not Lambda's: where every AWS SDK client of the bundle sends its requests (the policy-checking stand-in).
      AWS_ENDPOINT_URL: endpoint,
      // Not Lambda's: the S3 behind the stand-in (s3rver) takes no aws-chunked upload (a streamed body with a
      // checksum trailer), which S3 does; so the SDK sends its streams plainly, with their length, as the local
      // engine's functions do.
      AWS_REQUEST_CHECKSUM_CALCULATION: "WHEN_REQUIRED",
    };
  }

  /** Starts one environment (a cold start) and waits until its bundle is loaded. */
  warm(): Promise<void> {
    return this.#start().ready;
  }

  #start(): Instance {
    this.coldStarts++;
    const child = fork(RUNTIME, [], {
      cwd: this.fn.codeDir,
      env: this.#env,
      execArgv: [],
      stdio: ["ignore", "pipe", "pipe", "ipc"],
    });
    const collect = (stream: NodeJS.ReadableStream | null) => {
      let partial = "";
      stream?.on("data", (chunk: Buffer) => {
        const parts = (partial + chunk.toString("utf8")).split("\n");
        partial = parts.pop() ?? "";
        this.logs.push(...parts);
      });
    };
    collect(child.stdout);
    collect(child.stderr);
    let settle: { resolve: () => void; reject: (err: Error) => void } | undefined;
    const ready = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    // Awaited by whoever invokes or warms it; a failed start nobody awaited is no unhandled rejection.
    ready.catch(() => undefined);
    const instance: Instance = { child, ready, busy: false, pending: undefined };
    const major = this.fn.runtime.replace(/^nodejs(\d+)\.x$/, "$1");
    child.on("message", (message: Message) => {
      if ("ready" in message) {
        if (message.node.split(".")[0] !== `v${major}`) {
          settle?.reject(new Error(`${this.fn.id} is deployed on ${this.fn.runtime}, ran on Node ${message.node}`));
        } else settle?.resolve();
      } else if ("initError" in message) {
        settle?.reject(new InvocationError(message.initError));
      } else if (instance.pending) {
        const { resolve, reject, timer } = instance.pending;
        clearTimeout(timer);
        instance.pending = undefined;
        instance.busy = false;
        if (message.error) reject(new InvocationError(message.error));
        else resolve(message.result);
      }
    });
    child.on("exit", (code) => {
      this.#instances.delete(instance);
      settle?.reject(new InvocationError({ errorType: "Runtime.ExitError", errorMessage: `init exited ${code}` }));
      if (instance.pending) {
        clearTimeout(instance.pending.timer);
        instance.pending.reject(
          new InvocationError({
            errorType: "Runtime.ExitError",
            errorMessage: `Runtime exited with error: exit status ${code}`,
          }),
        );
      }
    });
    this.#instances.add(instance);
    return instance;
  }

  /**
   * One invocation (through an alias when `qualifier` is given, as Lambda then tells the function): the
   * handler's result, or an InvocationError with Lambda's error payload.
   */
  async invoke(event: unknown, qualifier?: string): Promise<unknown> {
    let instance = [...this.#instances].find((i) => !i.busy);
    instance ??= this.#start();
    instance.busy = true;
    try {
      await instance.ready;
    } catch (err) {
      instance.child.kill();
      throw err;
    }
    const id = nextId++;
    const timeoutMs = this.fn.timeoutSeconds * 1000;
    const requestId = randomUUID();
    const chosen = instance;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        chosen.pending = undefined;
        chosen.child.kill("SIGKILL");
        reject(
          new InvocationError({
            errorType: "Sandbox.Timedout",
            errorMessage: `RequestId: ${requestId} Error: Task timed out after ${this.fn.timeoutSeconds}.00 seconds`,
          }),
        );
      }, timeoutMs);
      chosen.pending = { resolve, reject, timer };
      chosen.child.send({
        id,
        event,
        requestId,
        invokedFunctionArn: qualifier ? `${this.fn.arn}:${qualifier}` : this.fn.arn,
        deadline: Date.now() + timeoutMs,
      });
    });
  }

  async close(): Promise<void> {
    await Promise.all(
      [...this.#instances].map(
        (i) =>
          new Promise<void>((resolve) => {
            if (i.child.exitCode !== null || i.child.signalCode !== null) return resolve();
            i.child.once("exit", () => resolve());
            i.child.kill();
          }),
      ),
    );
  }
}
