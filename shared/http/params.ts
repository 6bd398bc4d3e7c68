// Request parameters as ArcGIS clients send them: the query string and, for POST, a form body (plain or base64,
// as API Gateway delivers it), urlencoded or multipart (ArcGIS REST JS and the Python API send files, and every
// other parameter beside them, as multipart/form-data). A name given twice must carry the same value: silently
// picking one of two different values hides client bugs and invites parameter smuggling.
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import { ApiError, badRequest, tooLarge } from "#shared/errors.ts";

const MAX_PARAMS = 1000;

/** A file sent in a multipart body: its name as the client gave it (untrusted), its declared type, its bytes. */
export interface UploadedFile {
  readonly filename: string;
  readonly contentType: string;
  readonly bytes: Buffer;
}

export class Params {
  readonly #values: ReadonlyMap<string, string>;
  readonly #files: ReadonlyMap<string, UploadedFile>;

  constructor(values: ReadonlyMap<string, string>, files: ReadonlyMap<string, UploadedFile> = new Map()) {
    this.#values = values;
    this.#files = files;
  }

  /**
   * A parameter whatever the case of its name (`itemid`, `itemId`): where clients are known to spell one
   * differently and ArcGIS takes either. The exact spelling wins; otherwise the first match.
   */
  caseless(name: string): string | undefined {
    const exact = this.#values.get(name);
    if (exact !== undefined) return exact;
    const lower = name.toLowerCase();
    for (const [k, v] of this.#values) if (k.toLowerCase() === lower) return v;
    return undefined;
  }

  /** A file part of a multipart body (only the operation's declared `files` ever reach it). */
  file(name: string): UploadedFile | undefined {
    return this.#files.get(name);
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

/** The most file parts one request may carry (addItem's file and thumbnail, addPart's part). */
const MAX_FILES = 4;

const MULTIPART = "multipart/form-data";
const URLENCODED = "application/x-www-form-urlencoded";

/**
 * A multipart body's fields and files, parsed by the platform's own parser (undici's, linear in the body). The
 * body was bounded before; a file field a browser form sent with no file chosen (no name, no bytes) is absent,
 * not an empty file.
 */
async function multipartParts(
  body: Buffer,
  contentType: string,
  acceptsFiles: readonly string[],
): Promise<{ fields: [string, string][]; files: Map<string, UploadedFile> }> {
  // The platform's parser builds every part before anything can be counted: the parts are counted first, in one
  // pass over the body, so a body of tens of thousands of tiny parts is refused before any is built.
  const boundary = boundaryOf(contentType);
  if (boundary === undefined) throw badRequest("Invalid multipart body.", ["The content type names no boundary."]);
  if (countOccurrences(body, Buffer.from(`--${boundary}`)) > MAX_PARAMS + MAX_FILES + 1)
    throw badRequest("Too many parameters.", [`At most ${MAX_PARAMS} are accepted.`]);
  let form: FormData;
  try {
    form = await new Response(body, { headers: { "content-type": contentType } }).formData();
  } catch {
    throw badRequest("Invalid multipart body.", [
      "The body is not valid multipart/form-data: every part is delimited by the boundary its content type names.",
    ]);
  }
  const fields: [string, string][] = [];
  const files = new Map<string, UploadedFile>();
  for (const [name, value] of form) {
    if (typeof value === "string") {
      fields.push([name, value]);
      continue;
    }
    if (value.name === "" && value.size === 0) continue;
    if (!acceptsFiles.includes(name)) {
      throw badRequest("Unexpected file.", [
        acceptsFiles.length === 0
          ? "This operation takes no file: send its parameters as form fields."
          : `'${name.slice(0, 64)}' cannot be a file here; files are taken as ${acceptsFiles.map((f) => `'${f}'`).join(", ")}.`,
      ]);
    }
    if (files.has(name)) throw badRequest("Conflicting parameters.", [`'${name}' was given more than one file.`]);
    if (files.size >= MAX_FILES) throw badRequest("Too many files.", [`At most ${MAX_FILES} are accepted.`]);
    files.set(name, {
      filename: value.name,
      contentType: value.type,
      bytes: Buffer.from(await value.arrayBuffer()),
    });
  }
  return { fields, files };
}

/** The `boundary` parameter of a multipart content type (RFC 2046: 1–70 characters, maybe quoted). */
function boundaryOf(contentType: string): string | undefined {
  const m = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return m?.[1] ?? m?.[2];
}

/** How many times `needle` occurs in `haystack` (non-overlapping), in one linear pass. */
function countOccurrences(haystack: Buffer, needle: Buffer): number {
  let count = 0;
  for (let at = haystack.indexOf(needle); at >= 0; at = haystack.indexOf(needle, at + needle.length)) count++;
  return count;
}

/**
 * The request's parameters. `acceptsFiles` names the multipart file fields the operation takes (Operation.files);
 * a file under any other name is refused, so no operation meets bytes it never meant to read.
 */
export async function parseParams(
  event: APIGatewayProxyEventV2,
  maxBodyBytes: number,
  acceptsFiles: readonly string[] = [],
  refuseTooLarge: (limit: number, got: number) => Error = tooLarge,
): Promise<Params> {
  // Size is judged on the wire form first, so a huge base64 body is refused before it is decoded.
  const rawLength = event.body
    ? event.isBase64Encoded
      ? Math.floor((event.body.length * 3) / 4)
      : event.body.length
    : 0;
  if (rawLength > maxBodyBytes) throw refuseTooLarge(maxBodyBytes, rawLength);
  const sources: Iterable<[string, string]>[] = [new URLSearchParams(event.rawQueryString ?? "")];
  let files = new Map<string, UploadedFile>();
  const body = bodyBytes(event);
  if (body.length > maxBodyBytes) throw refuseTooLarge(maxBodyBytes, body.length);
  if (body.length > 0) {
    const declared = header(event, "content-type") ?? URLENCODED;
    const type = declared.split(";")[0]?.trim().toLowerCase();
    if (type === URLENCODED) sources.push(new URLSearchParams(body.toString("utf8")));
    else if (type === MULTIPART) {
      const parts = await multipartParts(body, declared, acceptsFiles);
      sources.push(parts.fields);
      files = parts.files;
    } else {
      throw new ApiError(400, "Unsupported content type.", [
        `Send parameters as ${URLENCODED} or ${MULTIPART}, not ${type || "an empty content type"}.`,
      ]);
    }
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
  for (const name of files.keys()) if (values.has(name)) conflicts.add(name);
  if (conflicts.size > 0) {
    throw badRequest(
      "Conflicting parameters.",
      [...conflicts].map((n) => `'${n.slice(0, 64)}' was given more than once with different values.`),
    );
  }
  return new Params(values, files);
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
