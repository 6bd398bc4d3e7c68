// A function whose work may hold its thread (a feature query: node:sqlite and JTS run synchronously, seconds at a
// time) runs in worker threads, each one instance of the function as on Lambda: the same handler module, loaded
// once per worker, running one invocation at a time. The engine's own thread (the listeners, every other route,
// /health, the store) stays free whatever a query costs, and a function that outlives its time limit is stopped
// as Lambda stops it: its worker is terminated (JavaScript stops wherever it is, inside SQLite's callbacks too)
// and a fresh one takes its place. Handlers learn nothing of it: their events, context and answers are Lambda's.
import { Worker } from "node:worker_threads";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { logger, writeLogLine } from "#shared/log.ts";
import { inProcessStore } from "./in-process-dynamo.ts";
import { ownBytes, type StoreAnswer } from "./store-call.ts";

type Result = APIGatewayProxyStructuredResultV2;

/** What a worker is started with. */
export interface WorkerData {
  /** The handler module's file. */
  readonly file: string;
  /** The tables the function was granted (its route's). */
  readonly tables: readonly string[];
  /** The endpoint of the engine's store, when this thread answers it in-process; else the workers use HTTP. */
  readonly store: string | undefined;
}

export type ToWorker =
  | {
      readonly kind: "invoke";
      readonly id: number;
      readonly event: APIGatewayProxyEventV2;
      readonly functionName: string;
      readonly arn: string;
      readonly requestId: string;
      readonly remainingMs: number;
    }
  | { readonly kind: "store"; readonly id: number; readonly answer?: StoreAnswer; readonly error?: string };

export type FromWorker =
  | { readonly kind: "ready" }
  | {
      readonly kind: "result";
      readonly id: number;
      /** Without its body when `bytes` holds it (see EncodedResult). */
      readonly result: Result;
      /** The body as it goes on the wire, when the worker encoded it: a buffer of its own, transferred. */
      readonly bytes?: Uint8Array;
      readonly metrics?: readonly string[];
    }
  | { readonly kind: "error"; readonly id: number; readonly message: string; readonly metrics?: readonly string[] }
  | {
      readonly kind: "store";
      readonly id: number;
      readonly target: string;
      readonly headers: Record<string, string>;
      readonly body: Uint8Array;
    }
  | { readonly kind: "metric"; readonly line: string }
  | { readonly kind: "log"; readonly line: string; readonly level: number };

/**
 * A pooled function's result whose body the worker encoded as it goes on the wire (UTF-8 text, or the bytes a
 * base64 body stands for) and handed over as a transferred buffer: a 190 KB feature page was cloned as text to
 * this thread, then encoded here as it was written, both on the thread every request goes through. The worker
 * sends one only for a result that cannot come near Lambda's payload limit (payload-limit.ts); any other arrives
 * whole, as the handler returned it.
 */
export class EncodedResult {
  /** The result's status, headers, cookies and isBase64Encoded, as the handler returned them; no body. */
  readonly head: Result;
  readonly body: Buffer;

  constructor(head: Result, body: Buffer) {
    this.head = head;
    this.body = body;
  }
}

/** A function's invocation that failed outside its handler (its worker stopped, or it never ran). */
export class InvocationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvocationError";
  }
}

interface Job {
  readonly id: number;
  readonly event: APIGatewayProxyEventV2;
  readonly context: Context;
  resolve(result: Result | EncodedResult): void;
  reject(err: Error): void;
}

interface Instance {
  readonly worker: Worker;
  job: Job | undefined;
  /** Set once the handler module is loaded. */
  ready: boolean;
}

export interface PoolOptions {
  /** The handler module's file and the tables its function was granted. */
  readonly file: string;
  readonly tables: ReadonlySet<string>;
  /** The most instances at once; invocations past it wait for one (their time limit counting). */
  readonly size: number;
  /** Where the instances' metric lines go: the engine's own sink. */
  readonly metrics: (line: string) => void;
}

export class FunctionPool {
  readonly #options: PoolOptions;
  readonly #data: WorkerData;
  readonly #instances = new Set<Instance>();
  readonly #idle: Instance[] = [];
  readonly #waiting: Job[] = [];
  #starting = 0;
  #lastJob = 0;
  #closed = false;

  private constructor(options: PoolOptions) {
    this.#options = options;
    const store = process.env.AWS_ENDPOINT_URL_DYNAMODB;
    this.#data = {
      file: options.file,
      tables: [...options.tables],
      store: store && inProcessStore(store) ? store : undefined,
    };
  }

  /**
   * A pool with one instance loaded (a handler module that cannot load fails here, at the engine's start, as an
   * in-thread handler's import would); more start when invocations overlap, up to `size`, and stay warm.
   */
  static async start(options: PoolOptions): Promise<FunctionPool> {
    const pool = new FunctionPool(options);
    await new Promise<void>((resolve, reject) => pool.#spawn(resolve, reject));
    return pool;
  }

  /** Runs one invocation on an idle instance (or the next one free); the context's time keeps counting meanwhile. */
  invoke(event: APIGatewayProxyEventV2, context: Context): Promise<Result | EncodedResult> {
    if (this.#closed) return Promise.reject(new InvocationError("the function is stopped"));
    return new Promise<Result | EncodedResult>((resolve, reject) => {
      this.#waiting.push({ id: ++this.#lastJob, event, context, resolve, reject });
      this.#dispatch();
    });
  }

  /**
   * The invocation of `requestId` is past its time: stopped where it is, as Lambda stops a function that timed out
   * (its instance is terminated and replaced), or dropped if it has not started.
   */
  abandon(requestId: string): void {
    const queued = this.#waiting.findIndex((j) => j.context.awsRequestId === requestId);
    if (queued >= 0) {
      const [job] = this.#waiting.splice(queued, 1);
      job?.reject(new InvocationError("the invocation timed out before it started"));
      return;
    }
    for (const instance of this.#instances) {
      if (instance.job?.context.awsRequestId !== requestId) continue;
      logger.error("function timed out: its instance was stopped", {
        function: instance.job.context.functionName,
        requestId,
      });
      void instance.worker.terminate();
      return;
    }
  }

  /** Stops every instance (at the engine's stop, once requests in flight are done). */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#waiting.splice(0)) job.reject(new InvocationError("the function is stopped"));
    await Promise.all([...this.#instances].map((i) => i.worker.terminate()));
  }

  #dispatch(): void {
    while (this.#waiting.length > 0) {
      const instance = this.#idle.pop();
      if (!instance) break;
      this.#run(instance, this.#waiting.shift() as Job);
    }
    // More waiting than instances on their way: start more, up to the size.
    while (!this.#closed && this.#starting < this.#waiting.length && this.#instances.size < this.#options.size)
      this.#spawn();
  }

  #run(instance: Instance, job: Job): void {
    const remainingMs = job.context.getRemainingTimeInMillis();
    if (remainingMs <= 0) {
      job.reject(new InvocationError("the invocation timed out before it started"));
      this.#release(instance);
      return;
    }
    instance.job = job;
    const { functionName, invokedFunctionArn: arn, awsRequestId: requestId } = job.context;
    this.#post(instance, { kind: "invoke", id: job.id, event: job.event, functionName, arn, requestId, remainingMs });
  }

  #post(instance: Instance, message: ToWorker): void {
    instance.worker.postMessage(message);
  }

  #release(instance: Instance): void {
    instance.job = undefined;
    if (this.#instances.has(instance)) this.#idle.push(instance);
    this.#dispatch();
  }

  #spawn(loaded?: () => void, failed?: (err: Error) => void): void {
    this.#starting++;
    const worker = new Worker(new URL("./function-worker.ts", import.meta.url), { workerData: this.#data });
    const instance: Instance = { worker, job: undefined, ready: false };
    this.#instances.add(instance);
    worker.on("message", (message: FromWorker) => this.#received(instance, message, loaded));
    let fault: Error | undefined;
    worker.on("error", (err) => {
      fault = err;
    });
    worker.on("exit", () => {
      this.#instances.delete(instance);
      const at = this.#idle.indexOf(instance);
      if (at >= 0) this.#idle.splice(at, 1);
      const job = instance.job;
      instance.job = undefined;
      if (!instance.ready) {
        this.#starting--;
        const err = new InvocationError(`the function could not start: ${fault?.message ?? "its instance exited"}`);
        failed?.(err);
        // The module did not load: what waits for an instance would wait for good.
        if (this.#instances.size === 0) for (const waiting of this.#waiting.splice(0)) waiting.reject(err);
      }
      job?.reject(new InvocationError(fault ? `the function failed: ${fault.message}` : "the function was stopped"));
      this.#dispatch();
    });
  }

  #received(instance: Instance, message: FromWorker, loaded: (() => void) | undefined): void {
    switch (message.kind) {
      case "ready":
        instance.ready = true;
        this.#starting--;
        loaded?.();
        this.#release(instance);
        return;
      case "result":
      case "error": {
        // The invocation's metric lines come with its end (function-worker.ts), written first as they were first.
        for (const line of message.metrics ?? []) this.#options.metrics(line);
        const job = instance.job;
        if (job?.id !== message.id) return;
        if (message.kind === "result") {
          const bytes = message.bytes;
          job.resolve(
            bytes
              ? new EncodedResult(message.result, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
              : message.result,
          );
        } else job.reject(new InvocationError(message.message));
        this.#release(instance);
        return;
      }
      case "store":
        this.#store(instance, message);
        return;
      case "metric":
        this.#options.metrics(message.line);
        return;
      case "log":
        writeLogLine(message.line, message.level);
        return;
    }
  }

  /** A DynamoDB call of an instance, answered by the engine's store in this thread. */
  #store(instance: Instance, call: Extract<FromWorker, { kind: "store" }>): void {
    const store = this.#data.store ? inProcessStore(this.#data.store) : undefined;
    const body = Buffer.from(call.body.buffer, call.body.byteOffset, call.body.byteLength);
    const answer = store
      ? store(call.target, call.headers, body)
      : Promise.reject(new Error("the store is no longer served in-process"));
    answer.then(
      (a) => {
        if (!this.#instances.has(instance)) return;
        const { bytes, transfer } = ownBytes(a.body);
        const answer = { status: a.status, headers: a.headers, body: bytes as Buffer };
        instance.worker.postMessage({ kind: "store", id: call.id, answer } satisfies ToWorker, transfer);
      },
      (err: unknown) => {
        const error = err instanceof Error ? err.message : String(err);
        if (this.#instances.has(instance)) this.#post(instance, { kind: "store", id: call.id, error });
      },
    );
  }
}
