// One instance of a function, in a worker thread of the local engine (see function-pool.ts): it loads the same
// handler module the gateway would, with the same environment, and runs one invocation at a time, as a Lambda
// instance does. What the handler reaches through the engine's own process comes back to the engine's thread:
// DynamoDB calls go to the engine's store as the engine's own clients' do (in-process-dynamo.ts, the same
// transaction layer and item cache), and log and metric lines go where the engine writes its own.
// First: it registers the in-process client options before any store module loads.
import { registerInProcessStore } from "./in-process-dynamo.ts";
import { pathToFileURL } from "node:url";
import { parentPort, workerData } from "node:worker_threads";
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { grants } from "#shared/config.ts";
import { setLogDestination } from "#shared/log.ts";
import { setMetricsSink } from "#shared/metrics.ts";
import { lambdaContext } from "./lambda-context.ts";
import type { FromWorker, ToWorker, WorkerData } from "./function-pool.ts";
import { resultMayExceed } from "./payload-limit.ts";
import { ownBytes, type StoreAnswer } from "./store-call.ts";

type Handler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyStructuredResultV2>;

const port = parentPort;
if (!port) throw new Error("function-worker.ts runs as a worker thread of the local engine");
const data = workerData as WorkerData;
const send = (message: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(message, transfer);

const utf8 = new TextEncoder();

/**
 * A result's body as the bytes the gateway writes (UTF-8 text, or what a base64 body stands for), in a buffer of
 * their own to transfer: a large text cloned to the engine's thread and encoded there cost that thread, which
 * every request goes through, about as much as the query's own work in this one. Only for a result the gateway
 * would not measure against Lambda's payload limit (its check reads the text; see payload-limit.ts); else none.
 */
function encodeBody(
  result: APIGatewayProxyStructuredResultV2 | undefined,
): { head: APIGatewayProxyStructuredResultV2; bytes: Uint8Array } | undefined {
  if (typeof result !== "object" || result === null || typeof result.body !== "string" || resultMayExceed(result))
    return undefined;
  const { body, ...head } = result;
  // As the gateway decodes it: a truthy isBase64Encoded, Node's lenient base64.
  const bytes = result.isBase64Encoded ? Buffer.from(body, "base64") : utf8.encode(body);
  // A small Buffer is a slice of Node's shared pool, which must not be transferred away.
  const own = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes : new Uint8Array(bytes);
  return { head, bytes: own };
}

/**
 * Metric lines written while an invocation runs, sent with its result: a request's line is written as it ends, and a
 * message of its own between the threads cost as much as the result's (a small feature query's fixed cost).
 */
let metricLines: string[] | undefined;
setMetricsSink((line) => {
  if (metricLines) metricLines.push(line);
  else send({ kind: "metric", line });
});
setLogDestination((line, level) => send({ kind: "log", line, level }));

/** Store calls waiting for the engine's answer, by their number. */
const calls = new Map<number, { resolve: (answer: StoreAnswer) => void; reject: (err: Error) => void }>();
let lastCall = 0;
if (data.store) {
  registerInProcessStore(
    data.store,
    (target, headers, body) =>
      new Promise<StoreAnswer>((resolve, reject) => {
        const id = ++lastCall;
        calls.set(id, { resolve, reject });
        const own = ownBytes(body);
        port.postMessage({ kind: "store", id, target, headers, body: own.bytes } satisfies FromWorker, own.transfer);
      }),
  );
}

const mod = (await import(pathToFileURL(data.file).href)) as { handler?: Handler };
const handler = mod.handler;
if (typeof handler !== "function") throw new Error(`${data.file} exports no handler`);
const tables = new Set(data.tables);

port.on("message", (message: ToWorker) => {
  if (message.kind === "store") {
    const waiting = calls.get(message.id);
    calls.delete(message.id);
    if (!waiting) return;
    if (message.answer) {
      const { status, headers, body } = message.answer;
      // A structured clone arrives as a plain Uint8Array; the SDK's parsers expect the Buffer it was.
      waiting.resolve({ status, headers, body: Buffer.from(body.buffer, body.byteOffset, body.byteLength) });
    } else waiting.reject(new Error(message.error ?? "the store call failed"));
    return;
  }
  const { id, event, functionName, arn, requestId, remainingMs } = message;
  const context = lambdaContext(functionName, arn, requestId, remainingMs);
  // One invocation at a time (the pool's rule): the lines gathered are this one's.
  const metrics: string[] = [];
  metricLines = metrics;
  const ended = () => {
    metricLines = undefined;
    return metrics.length > 0 ? { metrics } : {};
  };
  const failed = (err: unknown) =>
    send({ kind: "error", id, message: err instanceof Error ? err.message : String(err), ...ended() });
  grants
    .run(tables, () => handler(event, context))
    .then((result) => {
      try {
        const encoded = encodeBody(result);
        if (encoded)
          send({ kind: "result", id, result: encoded.head, bytes: encoded.bytes, ...ended() }, [
            encoded.bytes.buffer as ArrayBuffer,
          ]);
        else send({ kind: "result", id, result, ...ended() });
      } catch (err) {
        // A result that cannot be copied to the engine's thread (no plain data): the invocation failed.
        failed(err);
      }
    }, failed);
});
send({ kind: "ready" });
