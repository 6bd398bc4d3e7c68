// The operations function's event: `{operation, portalId?, params?, taskToken?}`. Everything else is refused
// by name: in particular no field says who is calling (IAM does, by the alias the caller was allowed to invoke).
import { INVOCATION, type InvokedOperation } from "#shared/system.ts";
import { badRequest } from "#shared/errors.ts";
import { nestedDeeperThan } from "#shared/json-depth.ts";

export interface InvokedEvent {
  readonly operation: InvokedOperation;
  readonly portalId: string;
  /** Form fields as the REST operation takes them (objects and arrays as JSON text). */
  readonly params: ReadonlyMap<string, string>;
  readonly taskToken?: string | undefined;
}

const FIELDS = new Set(["operation", "portalId", "params", "taskToken"]);
const PARAM_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
/** Parameters the operations function sets itself (the answer is JSON; credentials come from IAM). */
const RESERVED = new Set(["f", "callback", "token", "csrf"]);
const MAX_PARAMS = 64;
/** Step Functions task tokens are at most 2,048 characters. */
export const MAX_TASK_TOKEN = 2048;
/**
 * How deep a parameter's JSON value may nest: far past any service configuration or template, and measured
 * before the value is serialised (JSON.stringify recurses, and a deeper value would overflow the stack).
 */
export const MAX_PARAM_DEPTH = 32;

const invalid = (details: string[]) => badRequest("Invalid invocation.", details);

function paramValue(name: string, value: unknown, problems: string[]): string | undefined {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean") return String(value);
  if (value !== null && typeof value === "object") {
    if (!nestedDeeperThan(value, MAX_PARAM_DEPTH)) return JSON.stringify(value);
    problems.push(`'params.${name}' nests more than ${MAX_PARAM_DEPTH} levels deep.`);
    return undefined;
  }
  problems.push(`'params.${name}' must be a string, number, boolean, object or array.`);
  return undefined;
}

export function readInvokedEvent(event: unknown): InvokedEvent {
  if (event === null || typeof event !== "object" || Array.isArray(event)) {
    throw invalid(["The event must be a JSON object: {operation, portalId, params, taskToken}."]);
  }
  const e = event as Record<string, unknown>;
  const problems: string[] = [];
  const unknown = Object.keys(e).filter((k) => !FIELDS.has(k));
  if (unknown.length > 0) {
    problems.push(
      `Unknown field(s) ${unknown
        .slice(0, 8)
        .map((k) => `'${k.slice(0, 32)}'`)
        .join(", ")}: the event holds operation, portalId, params and taskToken; who calls is known from IAM.`,
    );
  }
  const names = Object.keys(INVOCATION.operations);
  const operation = e.operation;
  if (typeof operation !== "string" || !names.includes(operation)) {
    problems.push(`'operation' must be one of ${names.join(", ")}.`);
  }
  const portalId = e.portalId ?? "self";
  if (typeof portalId !== "string" || !/^[A-Za-z0-9_-]{1,64}$/.test(portalId)) {
    problems.push("'portalId' must be 'self' or an organization id.");
  }
  const params = new Map<string, string>();
  const raw = e.params ?? {};
  if (raw === null || typeof raw !== "object" || Array.isArray(raw)) problems.push("'params' must be an object.");
  else {
    const entries = Object.entries(raw);
    if (entries.length > MAX_PARAMS) problems.push(`'params' may hold at most ${MAX_PARAMS} parameters.`);
    for (const [name, value] of entries.slice(0, MAX_PARAMS)) {
      if (!PARAM_NAME.test(name)) problems.push(`'params' holds an invalid name '${name.slice(0, 32)}'.`);
      else if (RESERVED.has(name.toLowerCase())) problems.push(`'params.${name}' is set by mapgate, not the caller.`);
      else {
        const v = paramValue(name, value, problems);
        if (v !== undefined) params.set(name, v);
      }
    }
  }
  const taskToken = e.taskToken;
  if (taskToken !== undefined) {
    if (typeof taskToken !== "string" || taskToken.length === 0 || taskToken.length > MAX_TASK_TOKEN) {
      problems.push(`'taskToken' must be a task token (1 to ${MAX_TASK_TOKEN} characters).`);
    } else if (!(INVOCATION.jobs as readonly string[]).includes(String(operation))) {
      problems.push(`'taskToken' is taken only by operations that start a job: ${INVOCATION.jobs.join(", ")}.`);
    }
  }
  if (problems.length > 0) throw invalid(problems);
  return {
    operation: operation as InvokedOperation,
    portalId: portalId as string,
    params,
    ...(typeof taskToken === "string" ? { taskToken } : {}),
  };
}
