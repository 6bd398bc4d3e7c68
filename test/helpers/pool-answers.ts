// A handler module for test/function-pool.test.ts: loaded both by a function pool's worker threads and in the
// test's own thread, it answers each request by its `answer` parameter, so that the two can be compared byte for
// byte. The bodies are made the same way in both (seeded, no clock).
import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from "aws-lambda";

/** Text beyond ASCII: two- three- and four-byte characters, a control character, and a lone surrogate. */
const UNICODE = 'é 漢字 😀 \u0001 "quoted" \\ \ud800 end';

function bytes(n: number): Buffer {
  const out = Buffer.alloc(n);
  let x = 7;
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    out[i] = x >>> 24;
  }
  return out;
}

export async function handler(event: APIGatewayProxyEventV2): Promise<APIGatewayProxyStructuredResultV2> {
  const kind = new URLSearchParams(event.rawQueryString).get("answer");
  const headers = {
    "Content-Type": "application/json; charset=utf-8",
    "X-Mixed-Case": "kept",
    "cache-control": "no-store",
  };
  switch (kind) {
    case "page":
      // About a feature page's size, every character ASCII.
      return {
        statusCode: 200,
        headers,
        body: JSON.stringify({ features: Array.from({ length: 3000 }, (_, i) => ({ id: i, name: `place ${i}` })) }),
      };
    case "unicode":
      return { statusCode: 201, headers, cookies: ["a=1; Path=/", "b=2"], body: UNICODE.repeat(20_000) };
    case "short-unicode":
      return { statusCode: 200, headers, body: UNICODE };
    case "base64-small":
      return {
        statusCode: 200,
        headers: { "content-type": "application/x-protobuf" },
        isBase64Encoded: true,
        body: bytes(300).toString("base64"),
      };
    case "base64-large":
      return {
        statusCode: 200,
        headers: { "content-type": "image/png" },
        isBase64Encoded: true,
        body: bytes(400_000).toString("base64"),
      };
    case "empty":
      return { statusCode: 204, headers: { "x-empty": "yes" } };
    case "empty-text":
      return { statusCode: 200, headers, body: "" };
    // Each control character takes 6 bytes once JSON-escaped: 1.1 M of them make a 6.6 MB result.
    case "escaped":
      return { statusCode: 200, body: "\u0001".repeat(1_100_000) };
    case "plain":
      return { statusCode: 200, body: "a".repeat(5_500_000) };
    default:
      return { statusCode: 400, body: "no answer asked for" };
  }
}
