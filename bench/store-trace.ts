// Loaded into the engine's process by the read bench (`--import`, before the engine's own modules): records the
// DynamoDB requests the engine's handlers send to its in-process store while recording is on, with their answers,
// so that a floor server can send the same requests (bench/floor-server.ts). SIGUSR2 turns recording on; the next
// SIGUSR2 turns it off and writes what was recorded to the file named by MAPGATE_BENCH_TRACE. Off, a request costs
// one test of a boolean.
import { writeFileSync } from "node:fs";
import type { StoreCall } from "#infra/local/store-call.ts";

/** One request as the SDK sent it, the answer's body, and which requests were in flight together. */
export interface TracedCall {
  readonly target: string;
  readonly body: string;
  readonly answer: string;
  /** Calls with the same group were sent while another of the group was unanswered (`Promise.all`). */
  readonly group: number;
}

const STORES = Symbol.for("mapgate.dynamodb.inProcessStores");
const out = process.env.MAPGATE_BENCH_TRACE;
let recording = false;
let calls: TracedCall[] = [];
let inFlight = 0;
let group = 0;

const traced =
  (handle: StoreCall): StoreCall =>
  (target, headers, body) =>
    // Not recording, the call is handed on as it is: no promise of this wrapper's own.
    recording ? record(handle, target, headers, body) : handle(target, headers, body);

async function record(handle: StoreCall, ...args: Parameters<StoreCall>): ReturnType<StoreCall> {
  const [target, , body] = args;
  if (inFlight++ === 0) group++;
  const mine = group;
  try {
    const answer = await handle(...args);
    calls.push({ target, body: body.toString("utf8"), answer: answer.body.toString("utf8"), group: mine });
    return answer;
  } finally {
    inFlight--;
  }
}

// in-process-dynamo.ts keeps its registry on globalThis and creates it only when none exists: this one wraps
// every store registered in it.
class TracingRegistry extends Map<string, StoreCall> {
  override set(key: string, handle: StoreCall): this {
    return super.set(key, traced(handle));
  }
}
(globalThis as { [STORES]?: Map<string, StoreCall> })[STORES] = new TracingRegistry();

process.on("SIGUSR2", () => {
  recording = !recording;
  if (recording) {
    calls = [];
    group = 0;
    // Tells the bench that recording is on (a signal is handled when the engine's event loop gets to it).
    if (out) writeFileSync(`${out}.on`, "");
    return;
  }
  if (out) writeFileSync(out, JSON.stringify(calls));
});
