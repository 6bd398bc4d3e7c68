// Loaded into the engine's process by bench/profile.ts (`--import`): SIGUSR2 starts V8's CPU profiler, the next
// SIGUSR2 stops it and writes the profile to the file named by MAPGATE_BENCH_PROFILE. So only the load is profiled,
// not the engine's start nor the bench's setup requests.
import { writeFileSync } from "node:fs";
import { Session } from "node:inspector/promises";

const out = process.env.MAPGATE_BENCH_PROFILE;
if (out) {
  const session = new Session();
  session.connect();
  let running = false;
  process.on("SIGUSR2", () => {
    running = !running;
    void (async () => {
      if (running) {
        await session.post("Profiler.enable");
        await session.post("Profiler.setSamplingInterval", { interval: 500 });
        await session.post("Profiler.start");
      } else {
        const { profile } = await session.post("Profiler.stop");
        writeFileSync(out, JSON.stringify(profile));
      }
    })();
  });
}
