// The operations function runs each operation with the handler of the route infra/system.ts names for it (its
// handler modules are listed in functions/operations.ts so the bundler can see them).
import { describe, expect, it } from "vitest";
import { inProcessStore } from "./helpers/in-process.ts";

await inProcessStore();
const { INVOCATION, ROUTES } = await import("#infra/system.ts");
const { MODULES } = await import("#functions/operations.ts");

describe("the operations function", () => {
  it.each(Object.entries(INVOCATION.operations))("runs %s with the handler of route %s", async (operation, routeId) => {
    const route = ROUTES.find((r) => r.id === routeId);
    const own = (await import(`../functions/${route?.handler ?? routeId}.ts`)) as { handler: unknown };
    const loaded = await MODULES[operation as keyof typeof MODULES]();
    expect(loaded.handler).toBe(own.handler);
  });
});
