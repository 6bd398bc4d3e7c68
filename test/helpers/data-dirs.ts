// Run before every test file (vitest `setupFiles`): after the file's own hooks have stopped its engines, the data
// folders the file made are removed (vitest runs after-hooks in the reverse of their order, so this one runs last).
import { afterAll } from "vitest";
import { removeDataDirs } from "./engine.ts";

afterAll(removeDataDirs);
