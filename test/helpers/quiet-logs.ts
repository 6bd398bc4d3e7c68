// Run before every test file (vitest `setupFiles`): the handlers a test runs in-process log through the Powertools
// logger, which writes with a console of its own that vitest neither captures nor silences, so a passing run
// printed request lines and the "internal error" stacks of failures the tests provoke on purpose. Here they go to
// a file per test file instead (mapgate-test-logs/<test file>.log in the OS temp folder, rewritten at each run),
// and a test that fails prints the lines written while it ran, so nothing is lost where it matters. Metric lines
// are kept out of the way too; a test that reads them sets its own sink afterwards.
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterEach, beforeEach, expect } from "vitest";
import { setLogDestination } from "#shared/log.ts";
import { setMetricsSink } from "#shared/metrics.ts";

const DIR = join(tmpdir(), "mapgate-test-logs");
const file = join(DIR, `${basename(expect.getState().testPath ?? `worker-${process.pid}`)}.log`);
let started = false;

/** Appends a line to this file's log, emptied of the last run's at the first line (files that log nothing keep none). */
function keep(line: string): void {
  if (!started) {
    mkdirSync(DIR, { recursive: true });
    writeFileSync(file, "");
    started = true;
  }
  appendFileSync(file, `${line}\n`);
}

/** The lines of the test running now, printed if it fails. */
let current: string[] = [];

setLogDestination((line) => {
  current.push(line);
  keep(line);
});
setMetricsSink(keep);

beforeEach(() => {
  current = [];
});

afterEach(({ task }) => {
  if (task.result?.state === "fail" && current.length > 0)
    console.error(`mapgate's log while this test ran (all of this file's in ${file}):\n${current.join("\n")}`);
});
