// The operations function runs each operation with the handler of the route infra/system.ts names for it (its
// handler modules are listed in functions/operations.ts so the bundler can see them).
import type { Context } from "aws-lambda";
import { beforeAll, describe, expect, it } from "vitest";
import { inProcessStore, lambdaContext } from "./helpers/in-process.ts";

await inProcessStore();
const { INVOCATION, ROUTES } = await import("#infra/system.ts");
const { MODULES, handler } = await import("#functions/operations.ts");
const { MAX_PARAM_DEPTH } = await import("#shared/invocation/event.ts");

describe("the operations function", () => {
  it.each(Object.entries(INVOCATION.operations))("runs %s with the handler of route %s", async (operation, routeId) => {
    const route = ROUTES.find((r) => r.id === routeId);
    const own = (await import(`../functions/${route?.handler ?? routeId}.ts`)) as { handler: unknown };
    const loaded = await MODULES[operation as keyof typeof MODULES]();
    expect(loaded.handler).toBe(own.handler);
  });
});

describe("parameters nested deep", () => {
  let context: Context;

  beforeAll(async () => {
    const ops = await import("#infra/admin/operations.ts");
    const { registerCaller } = await import("#infra/admin/callers.ts");
    const { portal } = await ops.bootstrapOrganization({
      name: "Nesting",
      admin: { username: "nesting-admin", password: "nesting-admin-pass-1" },
    });
    const fn = "arn:aws:lambda:us-east-1:123456789012:function:mapgate-operations";
    const { invoke } = await registerCaller(
      { portalId: portal.portalId, principalArn: "arn:aws:iam::111122223333:role/pipeline", username: "nesting-admin" },
      { operationsFunction: fn, alias: async () => undefined },
    );
    context = { ...lambdaContext(), invokedFunctionArn: invoke } as Context;
  });

  const nested = (depth: number) => JSON.parse(`${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`) as unknown;

  it("are refused with a 400 naming the parameter, not an overflowed stack", async () => {
    const answer = await handler({ operation: "self", params: { a: nested(5000) } }, context);
    expect(answer).toMatchObject({
      error: { code: 400, details: [`'params.a' nests more than ${MAX_PARAM_DEPTH} levels deep.`] },
    });
    const arrays = JSON.parse(`${"[".repeat(100_000)}${"]".repeat(100_000)}`) as unknown;
    expect(await handler({ operation: "search", params: { q: "x", filter: arrays } }, context)).toMatchObject({
      error: { code: 400, details: [`'params.filter' nests more than ${MAX_PARAM_DEPTH} levels deep.`] },
    });
  });

  it("are taken up to the bound", async () => {
    const answer = await handler({ operation: "self", params: { a: nested(MAX_PARAM_DEPTH) } }, context);
    expect(answer).toMatchObject({ id: expect.any(String) });
  });
});
