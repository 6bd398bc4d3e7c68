// Request parameters as ArcGIS clients send them: the query string and, for POST, a form body
// (plain or base64, as API Gateway delivers it). A name given twice must carry the same value:
// silently picking one of two different values hides client bugs and invites parameter smuggling.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { ApiError, badRequest, tooLarge } from "#shared/http/errors.ts";

const MAX_PARAMS = 1000;

export class Params {
  readonly #values: ReadonlyMap<string, string>;

  constructor(values: ReadonlyMap<string, string>) {
    this.#values = values;
  }

  get(name: string): string | undefined {
    return this.#values.get(name);
  }

  /** A parameter that must be present and non-blank; `what` names the operation in the error. */
  required(name: string, what: string): string {
    const v = this.#values.get(name);
    if (v === undefined || v.trim() === "") throw badRequest(what, [`'${name}' must be specified.`]);
    return v;
  }

  asMap(): ReadonlyMap<string, string> {
    return this.#values;
  }
}

function header(event: APIGatewayProxyEventV2, name: string): string | undefined {
  return event.headers?.[name];
}

export function bodyBytes(event: APIGatewayProxyEventV2): Buffer {
  if (!event.body) return Buffer.alloc(0);
  return event.isBase64Encoded ? Buffer.from(event.body, "base64") : Buffer.from(event.body, "utf8");
}

export function parseParams(event: APIGatewayProxyEventV2, maxBodyBytes: number): Params {
  // Size is judged on the wire form first, so a huge base64 body is refused before it is decoded.
  const rawLength = event.body
    ? event.isBase64Encoded
      ? Math.floor((event.body.length * 3) / 4)
      : event.body.length
    : 0;
  if (rawLength > maxBodyBytes) throw tooLarge(maxBodyBytes);
  const sources: URLSearchParams[] = [new URLSearchParams(event.rawQueryString ?? "")];
  const body = bodyBytes(event);
  if (body.length > maxBodyBytes) throw tooLarge(maxBodyBytes);
  if (body.length > 0) {
    const type = (header(event, "content-type") ?? "application/x-www-form-urlencoded")
      .split(";")[0]
      ?.trim()
      .toLowerCase();
    if (type !== "application/x-www-form-urlencoded") {
      throw new ApiError(400, "Unsupported content type.", [
        `Send parameters as application/x-www-form-urlencoded, not ${type || "an empty content type"}.`,
      ]);
    }
    sources.push(new URLSearchParams(body.toString("utf8")));
  }
  const values = new Map<string, string>();
  const conflicts = new Set<string>();
  for (const source of sources) {
    for (const [name, value] of source) {
      const seen = values.get(name);
      if (seen === undefined) {
        if (values.size >= MAX_PARAMS)
          throw badRequest("Too many parameters.", [`At most ${MAX_PARAMS} are accepted.`]);
        values.set(name, value);
      } else if (seen !== value) conflicts.add(name);
    }
  }
  if (conflicts.size > 0) {
    throw badRequest(
      "Conflicting parameters.",
      [...conflicts].map((n) => `'${n.slice(0, 64)}' was given more than once with different values.`),
    );
  }
  return new Params(values);
}

/** A whole-number parameter within bounds (the fallback when absent); a problem is listed otherwise. */
export function intParam(
  raw: string | undefined,
  name: string,
  fallback: number,
  min: number,
  max: number,
  problems: string[],
) {
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    problems.push(`'${name}' must be a whole number from ${min} to ${max}.`);
    return fallback;
  }
  return n;
}

/** A true/false parameter (absent or empty: undefined); anything else is a problem listed. */
export function boolParam(raw: string | undefined, name: string, problems: string[]): boolean | undefined {
  if (raw === undefined || raw === "") return undefined;
  const v = raw.trim().toLowerCase();
  if (v === "true") return true;
  if (v === "false") return false;
  problems.push(`'${name}' must be true or false.`);
  return undefined;
}
