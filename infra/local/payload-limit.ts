// Lambda's 6 MB limit on an invocation's event and result, as the local gateway applies it. Shared by the gateway
// and the function workers: a worker that hands its result's body over as bytes (function-worker.ts) has already
// found the result cannot come near the limit, so the gateway need not look at its text again.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { LAMBDA_PAYLOAD_BYTES } from "#shared/system.ts";

/**
 * Whether a payload could come near Lambda's limit, so that only those are serialised to be measured exactly:
 * a character takes at most 6 bytes once JSON-escaped (`\u001f`), and the rest of an event or result (its
 * request context, the gateway's own fields) is far under 16 KiB.
 */
export function mayExceedPayload(body: string | undefined, otherChars: number): boolean {
  return 6 * ((body?.length ?? 0) + otherChars) + 16 * 1024 > LAMBDA_PAYLOAD_BYTES;
}

const RESULT_FIELDS = new Set(["statusCode", "headers", "body", "isBase64Encoded", "cookies"]);

/** A structured result of the usual fields is bounded cheaply; anything else is measured whole. */
export function resultMayExceed(result: APIGatewayProxyStructuredResultV2 | string): boolean {
  if (typeof result !== "object" || typeof result.statusCode !== "number") return true;
  if (result.body !== undefined && typeof result.body !== "string") return true;
  for (const k in result) if (!RESULT_FIELDS.has(k)) return true;
  return mayExceedPayload(result.body, resultHeaderChars(result));
}

function resultHeaderChars(result: APIGatewayProxyStructuredResultV2): number {
  let n = 0;
  const headers = result.headers ?? {};
  for (const k in headers) n += k.length + String(headers[k]).length + 4;
  for (const c of result.cookies ?? []) n += c.length + 4;
  return n;
}
