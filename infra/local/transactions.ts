// dynalite has no TransactWriteItems. The local engine puts this proxy in front of it: every request is
// forwarded unchanged, except that writes are serialised and TransactWriteItems is carried out as
// ordinary conditional writes under that same lock, rolled back from pre-images if any condition fails.
// Handlers keep making plain AWS SDK calls; only the local engine knows this exists.
// Limit (documented in the README): reads are not serialised, so a reader may glimpse a transaction
// half-applied for the few milliseconds it takes. Writers never can.
import { createServer, request, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

const WRITES = new Set(["PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem"]);
const PREFIX = "DynamoDB_20120810.";

type Json = Record<string, unknown>;

interface Upstream {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

class Lock {
  #tail: Promise<void> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.#tail.then(fn);
    this.#tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}

export interface TransactionProxy {
  readonly endpoint: string;
  close(): Promise<void>;
}

export async function startTransactionProxy(upstream: string): Promise<TransactionProxy> {
  const target = new URL(upstream);
  const lock = new Lock();
  const schemas = new Map<string, string[]>();

  const forward = (target_: string, headers: Record<string, string>, body: Buffer): Promise<Upstream> =>
    new Promise((resolve, reject) => {
      const req = request(
        {
          host: target.hostname,
          port: target.port,
          method: "POST",
          path: "/",
          headers: { ...headers, "x-amz-target": target_, "content-length": String(body.length) },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 500,
              headers: Object.fromEntries(
                Object.entries(res.headers)
                  .filter(([k]) => k !== "content-length" && k !== "connection")
                  .map(([k, v]) => [k, String(v)]),
              ),
              body: Buffer.concat(chunks),
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    });

  const call = async (
    op: string,
    headers: Record<string, string>,
    input: Json,
  ): Promise<{ ok: boolean; out: Json; raw: Upstream }> => {
    const raw = await forward(PREFIX + op, headers, Buffer.from(JSON.stringify(input)));
    const out = raw.body.length ? (JSON.parse(raw.body.toString("utf8")) as Json) : {};
    return { ok: raw.status === 200, out, raw };
  };

  const keyNames = async (table: string, headers: Record<string, string>): Promise<string[]> => {
    const known = schemas.get(table);
    if (known) return known;
    const { ok, out } = await call("DescribeTable", headers, { TableName: table });
    if (!ok) throw new Error(`no table ${table}`);
    const names = ((out.Table as Json).KeySchema as { AttributeName: string }[]).map((k) => k.AttributeName);
    schemas.set(table, names);
    return names;
  };

  const cancelled = (reasons: { Code: string; Message?: string }[]): Upstream => ({
    status: 400,
    headers: { "content-type": "application/x-amz-json-1.0" },
    body: Buffer.from(
      JSON.stringify({
        __type: "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
        message: `Transaction cancelled, please refer cancellation reasons for specific reasons [${reasons.map((r) => r.Code).join(", ")}]`,
        CancellationReasons: reasons,
      }),
    ),
  });

  const transact = async (headers: Record<string, string>, input: Json): Promise<Upstream> => {
    const items = (input.TransactItems ?? []) as Json[];
    if (items.length === 0 || items.length > 100) {
      return {
        status: 400,
        headers: { "content-type": "application/x-amz-json-1.0" },
        body: Buffer.from(
          JSON.stringify({
            __type: "com.amazon.coral.validate#ValidationException",
            message: "TransactItems must have 1 to 100 items",
          }),
        ),
      };
    }
    // Pre-images first, so any partial application can be undone.
    const steps: { op: string; body: Json; table: string; key: Json; before: Json | undefined; check: boolean }[] = [];
    for (const item of items) {
      const [kind, body] = Object.entries(item)[0] as [string, Json];
      const table = body.TableName as string;
      let key = body.Key as Json | undefined;
      if (kind === "Put") {
        const names = await keyNames(table, headers);
        key = Object.fromEntries(names.map((n) => [n, (body.Item as Json)[n]]));
      }
      const { out } = await call("GetItem", headers, { TableName: table, Key: key, ConsistentRead: true });
      // A ConditionCheck runs as a conditional DeleteItem: where the item is absent nothing is written at all
      // (an update would create a key-only item readers could see); where it exists it is put back at once.
      const op = kind === "Put" ? "PutItem" : kind === "Update" ? "UpdateItem" : "DeleteItem";
      const request_: Json = { ...body };
      delete request_.ReturnValuesOnConditionCheckFailure;
      steps.push({
        op,
        body: request_,
        table,
        key: key as Json,
        before: out.Item as Json | undefined,
        check: kind === "ConditionCheck",
      });
    }
    const restore = async (done: typeof steps) => {
      for (const s of [...done].reverse()) {
        if (s.before) await call("PutItem", headers, { TableName: s.table, Item: s.before });
        else await call("DeleteItem", headers, { TableName: s.table, Key: s.key });
      }
    };
    const done: typeof steps = [];
    for (const [i, s] of steps.entries()) {
      const result = await call(s.op, headers, s.body);
      if (!result.ok) {
        await restore(done);
        const type = String(result.out.__type ?? "");
        if (type.endsWith("ConditionalCheckFailedException")) {
          return cancelled(
            steps.map((_, j) =>
              j === i
                ? { Code: "ConditionalCheckFailed", Message: "The conditional request failed" }
                : { Code: "None" },
            ),
          );
        }
        return result.raw;
      }
      done.push(s);
    }
    // A ConditionCheck only checks: undo the no-op update that carried its condition.
    await restore(done.filter((s) => s.check));
    return { status: 200, headers: { "content-type": "application/x-amz-json-1.0" }, body: Buffer.from("{}") };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
    const body = Buffer.concat(chunks);
    const targetHeader = String(req.headers["x-amz-target"] ?? "");
    const op = targetHeader.startsWith(PREFIX) ? targetHeader.slice(PREFIX.length) : "";
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined && !["host", "content-length", "connection", "x-amz-target"].includes(k))
        headers[k] = String(v);
    }
    let answer: Upstream;
    if (op === "TransactWriteItems")
      answer = await lock.run(() => transact(headers, JSON.parse(body.toString("utf8")) as Json));
    else if (WRITES.has(op)) answer = await lock.run(() => forward(targetHeader, headers, body));
    else answer = await forward(targetHeader, headers, body);
    res.writeHead(answer.status, { ...answer.headers, "content-length": String(answer.body.length) });
    res.end(answer.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return res.destroy();
      res.writeHead(500, { "content-type": "application/x-amz-json-1.0" });
      res.end(JSON.stringify({ __type: "com.amazonaws.dynamodb.v20120810#InternalServerError", message: String(err) }));
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
