// A function run in a pool's worker thread answers through the local gateway with the same bytes, status and
// headers as the same handler run in the gateway's own thread: its body crosses between the threads encoded
// (function-pool.ts's EncodedResult), and nothing of it may change on the way, nor the payload limit's verdicts.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FunctionPool } from "#infra/local/function-pool.ts";
import { Gateway } from "#infra/local/gateway.ts";
import { handler } from "./helpers/pool-answers.ts";
import { call } from "./helpers/http.ts";

let server: Server;
let gateway: Gateway;
let base: string;

beforeAll(async () => {
  const pool = await FunctionPool.start({
    file: fileURLToPath(new URL("./helpers/pool-answers.ts", import.meta.url)),
    tables: new Set(),
    size: 2,
    metrics: () => undefined,
  });
  // Every route leads to the same function: its requests under /pooled/ run in the pool, the rest here.
  gateway = await Gateway.load(async () => ({ pool, here: handler, pooled: (path) => path.startsWith("/pooled/") }));
  server = createServer((req, res) => gateway.serve(req, res, "127.0.0.1", "http"));
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await gateway.close();
});

/** The same request answered in a worker thread and in the gateway's: status, headers (but the date), bytes. */
async function both(answer: string) {
  const [pooled, here] = await Promise.all([
    call(`${base}/pooled/x?answer=${answer}`),
    call(`${base}/here/x?answer=${answer}`),
  ]);
  const { date: _pooledDate, ...pooledHeaders } = pooled.headers;
  const { date: _hereDate, ...hereHeaders } = here.headers;
  return { pooled, here, pooledHeaders, hereHeaders };
}

describe("a pooled function's answer", () => {
  it.each(["page", "unicode", "short-unicode", "base64-small", "base64-large", "empty", "empty-text"])(
    "%s: the same status, headers and bytes as in the gateway's thread",
    async (answer) => {
      const { pooled, here, pooledHeaders, hereHeaders } = await both(answer);
      expect(pooled.status).toBe(here.status);
      expect(pooledHeaders).toEqual(hereHeaders);
      expect(Buffer.compare(pooled.body, here.body)).toBe(0);
      expect(pooled.headers["content-length"]).toBe(String(pooled.body.length));
    },
  );

  it("is what the handler returned: UTF-8 text (a lone surrogate replaced), base64 decoded", async () => {
    const { handler: answer } = await import("./helpers/pool-answers.ts");
    const event = (kind: string) => ({ rawQueryString: `answer=${kind}` }) as Parameters<typeof answer>[0];
    const unicode = await both("unicode");
    const text = (await answer(event("unicode"))).body ?? "";
    expect(unicode.pooled.body.equals(Buffer.from(text, "utf8"))).toBe(true);
    expect(unicode.pooled.body.toString("utf8")).toBe(text.replaceAll("\ud800", "\ufffd"));
    expect(unicode.pooled.headers["set-cookie"]).toEqual(["a=1; Path=/", "b=2"]);
    expect(unicode.pooled.headers["x-mixed-case"]).toBe("kept");
    const png = await both("base64-large");
    expect(png.pooled.body.equals(Buffer.from((await answer(event("base64-large"))).body ?? "", "base64"))).toBe(true);
    expect(png.pooled.body.length).toBe(400_000);
  });

  it("fails a result over 6 MB once JSON-escaped and passes one under it, as in the gateway's thread", async () => {
    const escaped = await both("escaped");
    expect([escaped.pooled.status, escaped.pooled.json()]).toEqual([500, { message: "Internal Server Error" }]);
    expect(escaped.here.status).toBe(500);
    const plain = await both("plain");
    expect([plain.pooled.status, plain.pooled.text.length]).toEqual([200, 5_500_000]);
    expect(plain.pooled.text).toBe(plain.here.text);
  });

  it("answers many at once, each its own body", async () => {
    const kinds = ["page", "unicode", "base64-large", "short-unicode"];
    const got = await Promise.all(
      Array.from({ length: 16 }, (_, i) => call(`${base}/pooled/x?answer=${kinds[i % 4]}`)),
    );
    const expected = await Promise.all(kinds.map((k) => call(`${base}/here/x?answer=${k}`)));
    got.forEach((res, i) => expect(res.body.equals(expected[i % 4]?.body ?? Buffer.alloc(0))).toBe(true));
  });
});
