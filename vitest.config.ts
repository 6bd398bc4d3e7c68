import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
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
