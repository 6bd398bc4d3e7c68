// The local engine's Lambda: the operations function answering `Invoke` on Lambda's own REST protocol, so a
// local pipeline calls it with @aws-sdk/client-lambda exactly as it would on AWS. Callers' aliases and their
// resource policies are the `callers` table's records (what `register-caller` creates on AWS as an alias with a
// policy naming the principal). Who is calling: the principal named by the request's session token (the
// `sessionToken` of the SDK's credentials, an IAM role or assumed-role ARN); without one, the account's own
// operator. Like the rest of the local engine it listens on loopback only and checks no signature.
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import type { Context } from "aws-lambda";
import { lambdaContext } from "./lambda-context.ts";
import { invocationFunction, LAMBDA_PAYLOAD_BYTES } from "#shared/system.ts";
import { grants } from "#shared/config.ts";
import { CALLER_ID, getCaller, principalOf } from "#shared/stores/callers.ts";

export const LOCAL_ACCOUNT = "000000000000";
export const LOCAL_REGION = "us-east-1";
export const OPERATIONS_FUNCTION = `mapgate-${invocationFunction().id}`;
export const OPERATIONS_FUNCTION_ARN = `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${OPERATIONS_FUNCTION}`;
/** The principal of a request that names none: the account's operator, as with the operator's own credentials. */
export const OPERATOR = `arn:aws:iam::${LOCAL_ACCOUNT}:root`;
/** Lambda's synchronous limit on a run, modelled here so a long operation fails locally as it would on AWS. */
const TIMEOUT_MS = 60_000;

type Handler = (event: unknown, context: Context) => Promise<unknown>;

/** What an invocation gives back, as Lambda's Invoke API shapes it. */
export type InvokeResult =
  | { readonly kind: "ok"; readonly payload: string }
  | { readonly kind: "function-error"; readonly payload: string }
  | { readonly kind: "refused"; readonly status: number; readonly type: string; readonly message: string };

export class LambdaError extends Error {
  readonly status: number;
  readonly type: string;

  constructor(status: number, type: string, message: string) {
    super(message);
    this.name = type;
    this.status = status;
    this.type = type;
  }
}

/** `name`, `name:qualifier`, or a (partial) ARN, as Lambda accepts them, plus a separate `Qualifier`. */
function target(functionName: string, qualifier: string | undefined): { name: string; qualifier?: string } {
  const m =
    /^(?:arn:aws[a-z-]*:lambda:[a-z0-9-]+:\d{12}:function:|\d{12}:function:)?([\w-]{1,64})(?::([\w$-]{1,128}))?$/.exec(
      functionName,
    );
  if (!m?.[1]) throw new LambdaError(400, "ValidationException", "1 validation error detected: FunctionName");
  const q = m[2] ?? qualifier;
  if (m[2] && qualifier && m[2] !== qualifier) {
    throw new LambdaError(
      400,
      "InvalidParameterValueException",
      "The derived qualifier from the function name does not match the specified qualifier.",
    );
  }
  return { name: m[1], ...(q ? { qualifier: q } : {}) };
}

/** The function name of a request's path, percent-decoded; what is not valid percent-encoding is no name. */
function pathName(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new LambdaError(400, "ValidationException", "1 validation error detected: FunctionName");
  }
}

/** The request's path and query; undefined for a request target that is no URL path. */
function requestUrl(raw: string | undefined): URL | undefined {
  try {
    return new URL(raw ?? "/", "http://local");
  } catch {
    return undefined;
  }
}

export interface LocalLambda {
  readonly endpoint: string;
  /** Loads the operations function's module: once the environment it reads at cold start is set. */
  load(root: string): Promise<void>;
  /** Invokes as `principal` (an ARN) would through the API; for the local workflows' lambda:invoke tasks. */
  invoke(functionName: string, payload: string, principal: string): Promise<InvokeResult>;
  close(): Promise<void>;
}

export async function startLambda(): Promise<LocalLambda> {
  let handler: Handler | undefined;
  const spec = invocationFunction();
  const tables = new Set(Object.keys(spec.tables));

  /** The ARN Lambda would say the function was invoked through, if `principal` may invoke it; else LambdaError. */
  const authorize = async (functionName: string, principal: string, qualifierParam?: string): Promise<string> => {
    const { name, qualifier } = target(functionName, qualifierParam);
    const arn = `arn:aws:lambda:${LOCAL_REGION}:${LOCAL_ACCOUNT}:function:${name}`;
    if (name !== OPERATIONS_FUNCTION || !handler) {
      throw new LambdaError(
        404,
        "ResourceNotFoundException",
        `Function not found: ${arn}${qualifier ? `:${qualifier}` : ""}`,
      );
    }
    if (!qualifier || qualifier === "$LATEST") return arn;
    const invoked = `${arn}:${qualifier}`;
    const caller = CALLER_ID.test(qualifier) ? await getCaller(qualifier) : undefined;
    if (!caller) throw new LambdaError(404, "ResourceNotFoundException", `Function not found: ${invoked}`);
    // The alias's resource policy allows its principal; the account's operator is allowed by its own IAM.
    if (principal !== OPERATOR && principalOf(principal) !== principalOf(caller.principalArn)) {
      throw new LambdaError(
        403,
        "AccessDeniedException",
        `User: ${principal} is not authorized to perform: lambda:InvokeFunction on resource: ${invoked} because no resource-based policy allows the lambda:InvokeFunction action`,
      );
    }
    return invoked;
  };

  const invoke = async (functionName: string, payload: string, principal: string, qualifierParam?: string) => {
    try {
      const invoked = await authorize(functionName, principal, qualifierParam);
      if (Buffer.byteLength(payload) > LAMBDA_PAYLOAD_BYTES) {
        throw new LambdaError(
          413,
          "RequestTooLargeException",
          `Request must be smaller than ${LAMBDA_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
        );
      }
      let event: unknown;
      try {
        event = payload === "" ? {} : JSON.parse(payload);
      } catch {
        throw new LambdaError(400, "InvalidRequestContentException", "Could not parse request body into json");
      }
      const requestId = randomUUID();
      const context = lambdaContext(OPERATIONS_FUNCTION, invoked, requestId, TIMEOUT_MS);
      const run = handler;
      if (!run) throw new LambdaError(404, "ResourceNotFoundException", `Function not found: ${invoked}`);
      try {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<never>((_resolve, reject) => {
          timer = setTimeout(
            () =>
              reject(
                Object.assign(new Error(`Task timed out after ${TIMEOUT_MS / 1000}.00 seconds`), {
                  name: "Sandbox.Timedout",
                }),
              ),
            TIMEOUT_MS,
          );
        });
        const out = await Promise.race([grants.run(tables, () => run(event, context)), timedOut]).finally(() =>
          clearTimeout(timer),
        );
        const text = JSON.stringify(out ?? null);
        if (Buffer.byteLength(text) > LAMBDA_PAYLOAD_BYTES) {
          return {
            kind: "function-error",
            payload: JSON.stringify({
              errorType: "Function.ResponseSizeTooLarge",
              errorMessage: `Response payload size exceeded maximum allowed payload size (${LAMBDA_PAYLOAD_BYTES} bytes).`,
            }),
          } as const;
        }
        return { kind: "ok", payload: text } as const;
      } catch (err) {
        const e = err instanceof Error ? err : new Error(String(err));
        return {
          kind: "function-error",
          payload: JSON.stringify({ errorType: e.name, errorMessage: e.message, trace: [] }),
        } as const;
      }
    } catch (err) {
      if (err instanceof LambdaError)
        return { kind: "refused", status: err.status, type: err.type, message: err.message } as const;
      throw err;
    }
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = requestUrl(req.url);
    const m = url && /^\/2015-03-31\/functions\/([^/]+)\/invocations$/.exec(url.pathname);
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      // Read no further than the limit (plus one byte to know it was passed).
      if (size <= LAMBDA_PAYLOAD_BYTES + 1) chunks.push(c);
    }
    const refuse = (status: number, type: string, message: string) => {
      const body = JSON.stringify({ Type: "User", message });
      res.writeHead(status, {
        "content-type": "application/json",
        "x-amzn-errortype": type,
        "x-amzn-requestid": randomUUID(),
      });
      res.end(body);
    };
    if (req.method !== "POST" || !url || !m?.[1])
      return refuse(404, "UnknownOperationException", "Only Invoke is available locally");
    const principal = String(req.headers["x-amz-security-token"] ?? "") || OPERATOR;
    const type = String(req.headers["x-amz-invocation-type"] ?? "RequestResponse");
    if (!["RequestResponse", "Event", "DryRun"].includes(type)) {
      return refuse(400, "InvalidParameterValueException", "InvocationType must be RequestResponse, Event or DryRun");
    }
    const payload = Buffer.concat(chunks).toString("utf8");
    const qualifier = url.searchParams.get("Qualifier") ?? undefined;
    let name: string;
    try {
      name = pathName(m[1]);
    } catch (err) {
      if (err instanceof LambdaError) return refuse(err.status, err.type, err.message);
      throw err;
    }
    if (type !== "RequestResponse") {
      // Permission and payload are checked now (nothing runs for a DryRun); an Event runs after the answer, as
      // Lambda queues it.
      try {
        await authorize(name, principal, qualifier);
        if (size > LAMBDA_PAYLOAD_BYTES) {
          throw new LambdaError(
            413,
            "RequestTooLargeException",
            `Request must be smaller than ${LAMBDA_PAYLOAD_BYTES} bytes for the InvokeFunction operation`,
          );
        }
      } catch (err) {
        if (err instanceof LambdaError) return refuse(err.status, err.type, err.message);
        throw err;
      }
      if (type === "Event") void invoke(name, payload, principal, qualifier).catch(() => undefined);
      res.writeHead(type === "DryRun" ? 204 : 202, { "x-amzn-requestid": randomUUID() });
      return res.end();
    }
    const result = await invoke(name, payload, principal, qualifier);
    if (result.kind === "refused") return refuse(result.status, result.type, result.message);
    res.writeHead(200, {
      "content-type": "application/json",
      "x-amz-executed-version": "$LATEST",
      "x-amzn-requestid": randomUUID(),
      ...(result.kind === "function-error" ? { "x-amz-function-error": "Unhandled" } : {}),
    });
    res.end(result.payload);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500, { "x-amzn-errortype": "ServiceException" });
      res.end('{"message":"internal error"}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    load: async (root) => {
      const mod = (await import(pathToFileURL(join(root, "functions", `${spec.id}.ts`)).href)) as { handler?: Handler };
      if (typeof mod.handler !== "function") throw new Error(`functions/${spec.id}.ts exports no handler`);
      handler = mod.handler;
    },
    invoke: (functionName, payload, principal) => invoke(functionName, payload, principal),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
