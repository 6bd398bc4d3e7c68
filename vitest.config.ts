import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    // At least two files at a time (vitest's default is one fewer than the cores: one on a 2-core machine). Most files
    // wait on an engine, a browser or PostgreSQL in other processes far more than they compute, so two share the cores.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    testTimeout: 60_000,
    hookTimeout: 90_000,
    reporters: ["default"],
    // The logs of handlers run in-process go to a file; a failing test still prints its own (see the module).
    // The data folders a file's engines used are removed after it (test/helpers/data-dirs.ts).
    setupFiles: ["test/helpers/quiet-logs.ts", "test/helpers/data-dirs.ts"],
    // One demo data folder per run, copied for each engine a test starts (test/helpers/engine.ts).
    globalSetup: ["test/helpers/engine-template.ts"],
    // What a passing test writes to the console (expected warnings, refusals it provokes) is not shown; a failing
    // test's is.
    silent: "passed-only",
  },
});
