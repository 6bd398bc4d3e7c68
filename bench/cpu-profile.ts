// Loaded into the engine's process by bench/profile.ts and bench/draw-profile.ts (`--import`, so into each of its
// worker threads too): SIGUSR2 starts V8's CPU profiler, the next SIGUSR2 stops it and writes the profile to the file
// named by MAPGATE_BENCH_PROFILE. So only the load is profiled, not the engine's start nor the bench's setup
// requests. A signal reaches the main thread only: it tells the function workers (where the engine runs /query) on a
// broadcast channel, and each writes its own profile beside the main thread's (`<file>.worker-<thread id>`).
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";
import { BroadcastChannel, isMainThread, threadId } from "node:worker_threads";

const out = process.env.MAPGATE_BENCH_PROFILE;
if (out) {
  const session = new Session();
  session.connect();
  const file = isMainThread ? out : `${out}.worker-${threadId}`;
  /** MAPGATE_BENCH_PROFILE_KIND=heap: V8's sampling heap profiler instead of the CPU profiler. */
  const heap = process.env.MAPGATE_BENCH_PROFILE_KIND === "heap";
  let running = false;
  const toggle = async (start: boolean) => {
    if (start === running) return;
    running = start;
    if (heap) {
      // What is allocated, collected or not: the garbage a request leaves is what the collector's threads cost.
      if (start)
        await session.post("HeapProfiler.startSampling", {
          samplingInterval: 4096,
          includeObjectsCollectedByMajorGC: true,
          includeObjectsCollectedByMinorGC: true,
        });
      else writeFileSync(file, JSON.stringify((await session.post("HeapProfiler.stopSampling")).profile));
    } else if (start) {
      await session.post("Profiler.enable");
      await session.post("Profiler.setSamplingInterval", { interval: 500 });
      await session.post("Profiler.start");
    } else {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(file, JSON.stringify(profile));
    }
  };
  const channel = new BroadcastChannel("mapgate-bench-profile");
  // Neither keeps a thread alive: the engine stops as it would without them.
  channel.unref();
  if (isMainThread) {
    process.on("SIGUSR2", () => {
      const start = !running;
      channel.postMessage(start);
      void toggle(start);
    });
  } else channel.onmessage = (message) => void toggle((message as { data: boolean }).data);
}
