// The AWS JSON protocol as the local Step Functions and EventBridge endpoints speak it: a request is one JSON
// object, its operation named by X-Amz-Target (`<Service>.<Operation>`); an error is a 400 with
// `{"__type","message"}`, of the service's own types. Members are read by their type, never converted: String()
// of a caller's object calls what that object holds (a `toString` member) or recurses through it (an array).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import { logger } from "#shared/log.ts";

export type Json = Record<string, unknown>;

/** An answer of the service's own: `type` is its `__type` (SerializationException, ValidationException…). */
export class AwsJsonError extends Error {
  readonly type: string;

  constructor(type: string, message: string) {
    super(message);
    this.name = type;
    this.type = type;
  }
}

export const serializationError = (message: string) => new AwsJsonError("SerializationException", message);

/**
 * How deep the JSON the local endpoints take may nest: request bodies, and the JSON texts inside them (an
 * execution's input, a definition, an event's detail, a pattern). The services document no nesting limit; the
 * interpreter and the engine's own walkers recurse per level, so anything deeper is refused first. Real
 * requests nest a few levels; workflows' data a few dozen.
 */
export const MAX_NESTING = 256;

/**
 * JSON text a caller put inside a member (an execution's input, an event pattern), parsed and bounded in depth
 * before anything recurses over it; otherwise the service's error of `type` with its own wording.
 */
export function parseNestedJson(
  text: string,
  type: string,
  messages: { readonly notJson: string; readonly tooDeep: string },
): unknown {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new AwsJsonError(type, messages.notJson);
  }
  if (nestedDeeperThan(parsed, MAX_NESTING)) throw new AwsJsonError(type, messages.tooDeep);
  return parsed;
}

/** The request body: bytes up to `limit` are kept (more are read and counted, so the size is known). */
export async function readBody(req: IncomingMessage, limit: number): Promise<{ bytes: Buffer; size: number }> {
  const chunks: Buffer[] = [];
  let size = 0;
  let kept = 0;
  for await (const c of req as AsyncIterable<Buffer>) {
    size += c.length;
    if (kept + c.length <= limit) {
      chunks.push(c);
      kept += c.length;
    }
  }
  return { bytes: Buffer.concat(chunks), size };
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The request's JSON object; SerializationException for anything else (an empty body is `{}`, as before). */
export function parseRequest(bytes: Buffer): Json {
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    throw serializationError("The request body is not valid UTF-8.");
  }
  if (text.trim() === "") return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw serializationError("The request body is not valid JSON.");
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw serializationError("The request body must be a JSON object.");
  }
  if (nestedDeeperThan(parsed, MAX_NESTING)) {
    throw serializationError(`The request body nests more than ${MAX_NESTING} levels deep.`);
  }
  return parsed as Json;
}

/**
 * The operation X-Amz-Target names among `names` (own names only: `hasOwnProperty` or `__proto__` is no
 * operation); undefined when it names none.
 */
export function operationName(target: string, service: string, names: ReadonlySet<string>): string | undefined {
  const prefix = `${service}.`;
  if (!target.startsWith(prefix)) return undefined;
  const name = target.slice(prefix.length);
  return names.has(name) ? name : undefined;
}

export const unknownOperation = (target: string) =>
  new AwsJsonError("UnknownOperationException", `Operation ${target.slice(0, 128)} is not available locally.`);

const wrongType = (member: string, expected: string) => serializationError(`Member '${member}' must be ${expected}.`);

/** A string member; absent or null is undefined, another type a SerializationException. */
export function stringMember(body: Json, member: string): string | undefined {
  const v = Object.hasOwn(body, member) ? body[member] : undefined;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw wrongType(member, "a string");
  return v;
}

/** A number member (a timestamp is one in this protocol: seconds since the epoch). */
export function numberMember(body: Json, member: string): number | undefined {
  const v = Object.hasOwn(body, member) ? body[member] : undefined;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number") throw wrongType(member, "a number");
  return v;
}

/** A list member whose elements are all of one kind (`string` or `object`). */
export function listMember(body: Json, member: string, of: "string"): string[] | undefined;
export function listMember(body: Json, member: string, of: "object"): Json[] | undefined;
export function listMember(body: Json, member: string, of: "string" | "object"): unknown[] | undefined {
  const v = Object.hasOwn(body, member) ? body[member] : undefined;
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw wrongType(member, "a list");
  for (const e of v as unknown[]) {
    const ok = of === "string" ? typeof e === "string" : e !== null && typeof e === "object" && !Array.isArray(e);
    if (!ok) throw wrongType(member, of === "string" ? "a list of strings" : "a list of structures");
  }
  return v as unknown[];
}

/** Writes an answer in the protocol's content type (`1.0` for Step Functions, `1.1` for EventBridge). */
export function answer(res: ServerResponse, version: "1.0" | "1.1", status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    "content-type": `application/x-amz-json-${version}`,
    "content-length": Buffer.byteLength(text),
  });
  res.end(text);
}

/** The last resort of a local endpoint: a fault of its own, answered without its words (they are logged). */
export function internalFailure(res: ServerResponse, version: "1.0" | "1.1", type: string, err: unknown): void {
  logger.error("local endpoint fault", { type, error: err instanceof Error ? err : new Error(String(err)) });
  if (res.headersSent) {
    res.end();
    return;
  }
  answer(res, version, 500, { __type: type, message: "An internal error occurred." });
}

/** What one operation of a local endpoint answers: its status (200 unless said) and body. */
export interface AwsJsonAnswer {
  readonly status?: number;
  readonly body: unknown;
}

/** A local endpoint of one service on AWS's JSON protocol, as the SDK calls it. */
export interface AwsJsonEndpoint {
  /** `AWSEvents`, `AWSStepFunctions`: the X-Amz-Target's prefix. */
  readonly service: string;
  /** The protocol's version: `1.0` for Step Functions, `1.1` for EventBridge. */
  readonly version: "1.0" | "1.1";
  /** The `__type` of a fault of the endpoint's own (each service names it differently). */
  readonly internalType: string;
  /** The largest request body, in bytes: one past it is read through (to know its size) and refused. */
  readonly maxBytes: number;
  /** The operations served now. */
  operations(): ReadonlySet<string>;
  /** Answers one operation; an AwsJsonError it throws is the 400 the SDK expects. */
  handle(operation: string, body: Json, size: number): Promise<AwsJsonAnswer>;
}

/**
 * Serves `endpoint` on 127.0.0.1 at a free port: the target is checked before the body is parsed (an unknown
 * operation and a request too large are both refused as AWS refuses them), and nothing but an AwsJsonError's own
 * words reaches the caller.
 */
export async function serveAwsJson(endpoint: AwsJsonEndpoint): Promise<{ server: Server; endpoint: string }> {
  const { version } = endpoint;
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const { bytes, size } = await readBody(req, endpoint.maxBytes);
    const target = String(req.headers["x-amz-target"] ?? "");
    const operation = operationName(target, endpoint.service, endpoint.operations());
    if (!operation) throw unknownOperation(target);
    if (size > endpoint.maxBytes) throw new AwsJsonError("ValidationException", "The request is too large.");
    const { status, body } = await endpoint.handle(operation, parseRequest(bytes), size);
    answer(res, version, status ?? 200, body);
  };
  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof AwsJsonError) answer(res, version, 400, { __type: err.type, message: err.message });
      else internalFailure(res, version, endpoint.internalType, err);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}
