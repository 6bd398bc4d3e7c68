// The Lambda Node.js runtime's part, for the artifact test: one child process per execution environment,
// started in the function's code folder with the function's environment, importing its bundle the way the
// runtime does (`_HANDLER` = `<module>.<export>` under `LAMBDA_TASK_ROOT`) and serving one invocation at a
// time over IPC. It imports nothing but Node's own modules, so the bundle brings everything it runs.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

interface Invocation {
  readonly id: number;
  readonly event: unknown;
  readonly requestId: string;
  /** What the runtime API tells each invocation (Lambda-Runtime-Invoked-Function-Arn, -Deadline-Ms). */
  readonly invokedFunctionArn: string;
  readonly deadline: number;
}

type Handler = (event: unknown, context: object) => Promise<unknown>;

/** Lambda's own error shape, which API Gateway and Step Functions read. */
const errorOf = (err: unknown) => ({
  errorType: err instanceof Error ? err.name : "Error",
  errorMessage: err instanceof Error ? err.message : String(err),
  trace: err instanceof Error ? (err.stack ?? "").split("\n") : [],
});

const send = (message: object) =>
  new Promise<void>((resolve, reject) =>
    process.send?.(message, (err: Error | null) => (err ? reject(err) : resolve())),
  );

async function load(): Promise<Handler> {
  const root = process.env.LAMBDA_TASK_ROOT ?? process.cwd();
  const [moduleName, exportName] = (process.env._HANDLER ?? "").split(".");
  if (!moduleName || !exportName) throw new Error(`bad handler ${process.env._HANDLER}`);
  // The runtime's order: .js, then .mjs, then .cjs.
  const file = [".js", ".mjs", ".cjs"].map((ext) => join(root, moduleName + ext)).find((f) => existsSync(f));
  if (!file)
    throw Object.assign(new Error(`Cannot find module '${moduleName}'`), { name: "Runtime.ImportModuleError" });
  const mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  const handler = mod[exportName];
  if (typeof handler !== "function") {
    throw Object.assign(new Error(`${moduleName}.${exportName} is undefined or not exported`), {
      name: "Runtime.HandlerNotFound",
    });
  }
  return handler as Handler;
}

// As on Lambda, an error nobody caught ends the environment (its log says why); the host reports the
// invocation failed.
process.on("uncaughtException", (err) => {
  console.error(err);
  process.exit(129);
});
process.on("unhandledRejection", (err) => {
  console.error(err);
  process.exit(128);
});
// No environment outlives the test that started it, even one that dies without stopping it.
process.on("disconnect", () => process.exit(0));

try {
  const handler = await load();
  process.on("message", (message: Invocation) => {
    const name = process.env.AWS_LAMBDA_FUNCTION_NAME ?? "";
    const context = {
      callbackWaitsForEmptyEventLoop: true,
      functionName: name,
      functionVersion: process.env.AWS_LAMBDA_FUNCTION_VERSION ?? "$LATEST",
      invokedFunctionArn: message.invokedFunctionArn,
      memoryLimitInMB: process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? "",
      awsRequestId: message.requestId,
      logGroupName: process.env.AWS_LAMBDA_LOG_GROUP_NAME ?? "",
      logStreamName: process.env.AWS_LAMBDA_LOG_STREAM_NAME ?? "",
      getRemainingTimeInMillis: () => Math.max(0, message.deadline - Date.now()),
      done: () => undefined,
      fail: () => undefined,
      succeed: () => undefined,
    };
    Promise.resolve()
      .then(() => handler(message.event, context))
      .then(
        (result) => send({ id: message.id, result: result ?? null }),
        (err: unknown) => send({ id: message.id, error: errorOf(err) }),
      )
      .catch(() => process.exit(130));
  });
  await send({ ready: true, node: process.version });
} catch (err) {
  await send({ initError: errorOf(err) });
  process.exit(1);
}
