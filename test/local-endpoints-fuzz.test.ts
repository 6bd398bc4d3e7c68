// The local engine's AWS endpoints (Step Functions, EventBridge, Lambda) against malformed and hostile requests:
// each answers as the service does, with its own error types and a 4xx, never a 500 nor an exception's words.
// First the cases found by hand, then a seeded fuzz over targets, bodies and paths (MAPGATE_FUZZ_SEED replays a
// run; the seed is in the test's name).
import { mkdtempSync } from "node:fs";
import { request } from "node:http";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callerWorkflows } from "#infra/local/caller-workflows.ts";
import { eventFiles, type LocalEvents, startEvents } from "#infra/local/events.ts";
import { type LocalLambda, OPERATIONS_FUNCTION, startLambda } from "#infra/local/lambda.ts";
import {
  LOCAL_STATE_MACHINE_ARN,
  type LocalWorkflows,
  readDefinition,
  startWorkflows,
  taskStates,
} from "#infra/local/workflows.ts";
import { ROOT } from "./helpers/engine.ts";
import { prng } from "./helpers/prng.ts";

let lambda: LocalLambda;
let workflows: LocalWorkflows;
let events: LocalEvents;

beforeAll(async () => {
  lambda = await startLambda();
  // The jobs machine's own definition, every task a stub: what is under test is the endpoint, not the jobs.
  const { text } = readDefinition(ROOT);
  workflows = await startWorkflows(ROOT, {
    definition: text,
    stateMachineArn: LOCAL_STATE_MACHINE_ARN,
    bind: async (definition) =>
      Object.fromEntries(taskStates(definition).map(({ state }) => [state, async () => ({})])),
  });
  await workflows.load();
  workflows.attach(callerWorkflows(lambda.invoke));
  events = await startEvents(eventFiles(mkdtempSync(join(tmpdir(), "mapgate-fuzz-"))), async () => undefined);
});

afterAll(async () => {
  await Promise.all([lambda?.close(), workflows?.close(), events?.close()]);
});

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

function send(
  endpoint: string,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer },
): Promise<Answer> {
  const url = new URL(endpoint);
  const body = options.body ?? "";
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: "127.0.0.1",
        port: url.port,
        method: options.method ?? "POST",
        path: options.path ?? "/",
        // Framed for every method (a GET's body is otherwise sent unframed, which no server can read).
        headers: { ...options.headers, "content-length": String(Buffer.byteLength(body)) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString("utf8") }),
        );
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

const sfn = (target: string, body: string | Buffer) =>
  send(workflows.endpoint, {
    headers: { "x-amz-target": target, "content-type": "application/x-amz-json-1.0" },
    body,
  });
const bus = (target: string, body: string | Buffer) =>
  send(events.endpoint, { headers: { "x-amz-target": target, "content-type": "application/x-amz-json-1.1" }, body });
const invoke = (name: string, body = "{}", headers: Record<string, string> = {}) =>
  send(lambda.endpoint, { path: `/2015-03-31/functions/${name}/invocations`, headers, body });

/** What no answer may hold: an exception's class or text, a stack frame, a path of this machine. */
const LEAKS = [
  /\b(Syntax|Type|Range|Reference|URI|Internal)Error\b/,
  /Error:/,
  /\bat \S+ \(.*:\d+:\d+\)/,
  /\bat (file:|node:|\/)/,
  /file:\/\//,
  /\.ts:\d+/,
  /Maximum call stack/,
  /Cannot (read|convert|destructure)/,
  /undefined/,
];

function clean(a: Answer): void {
  expect(a.status).toBeLessThan(500);
  for (const leak of LEAKS) expect(a.text).not.toMatch(leak);
}

/** An AWS JSON protocol error: status 400, `{"__type","message"}`. */
function awsError(a: Answer, type: string): void {
  clean(a);
  expect(a.status).toBe(400);
  const body = JSON.parse(a.text) as { __type?: unknown; message?: unknown };
  expect(body.__type).toBe(type);
  expect(body.message).toEqual(expect.any(String));
}

const deepArrays = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
const deepObjects = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;
const PROTOTYPE_NAMES = ["__proto__", "constructor", "hasOwnProperty", "toString", "valueOf", "__defineGetter__"];

describe("the local Step Functions endpoint", () => {
  it("refuses a body that is not a JSON object as SerializationException", async () => {
    for (const body of ["{", "null", "[]", '"x"', "1", "nul", Buffer.from([0x7b, 0xff, 0xfe, 0x7d])]) {
      awsError(await sfn("AWSStepFunctions.StartExecution", body), "SerializationException");
    }
    // A member of the wrong type, even one whose text a conversion would call.
    awsError(
      await sfn("AWSStepFunctions.StartExecution", '{"stateMachineArn":{"toString":1},"name":"a"}'),
      "SerializationException",
    );
    awsError(
      await sfn("AWSStepFunctions.SendTaskSuccess", '{"taskToken":["t"],"output":"{}"}'),
      "SerializationException",
    );
  });

  it("knows its operations by their own names only", async () => {
    for (const name of [...PROTOTYPE_NAMES, "", "Nope"]) {
      awsError(await sfn(`AWSStepFunctions.${name}`, "{}"), "UnknownOperationException");
    }
    awsError(await sfn("StartExecution", "{}"), "UnknownOperationException");
  });

  it("refuses a definition that is no state machine as InvalidDefinition", async () => {
    const create = (definition: string) =>
      sfn(
        "AWSStepFunctions.CreateStateMachine",
        JSON.stringify({ name: "m", roleArn: "arn:aws:iam::111122223333:role/r", definition }),
      );
    for (const definition of [
      "[]",
      "null",
      "1",
      "{}",
      '{"StartAt":"A","States":null}',
      '{"StartAt":"A","States":[]}',
      '{"StartAt":"A","States":{"A":null}}',
      '{"StartAt":"A","States":{"A":{"Type":"Parallel","Branches":7,"End":true}}}',
      '{"StartAt":"A","States":{"A":{"Type":"Parallel","Branches":[null],"End":true}}}',
      '{"StartAt":"A","States":{"A":{"Type":"Map","Iterator":{"States":{"B":7}},"End":true}}}',
      `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Result":${deepArrays(100_000)}}}}`,
      `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true,"Parameters":${deepObjects(30_000)}}}}`,
      '{"StartAt":"A","States":{"A":{"Type":"Task","Resource":{"toString":1},"End":true}}}',
    ]) {
      awsError(await create(definition), "InvalidDefinition");
    }
  });

  it("refuses input that is not JSON as InvalidExecutionInput, on the jobs machine and a caller's", async () => {
    const created = await sfn(
      "AWSStepFunctions.CreateStateMachine",
      JSON.stringify({
        name: "passing",
        roleArn: "arn:aws:iam::111122223333:role/r",
        definition: '{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}',
      }),
    );
    expect(created.status).toBe(200);
    const { stateMachineArn } = JSON.parse(created.text) as { stateMachineArn: string };
    for (const arn of [LOCAL_STATE_MACHINE_ARN, stateMachineArn]) {
      for (const input of ["{", "", "nul", deepArrays(100_000), deepObjects(30_000)]) {
        awsError(
          await sfn("AWSStepFunctions.StartExecution", JSON.stringify({ stateMachineArn: arn, name: "x1", input })),
          "InvalidExecutionInput",
        );
      }
    }
  });
});

describe("the local EventBridge endpoint", () => {
  it("knows its operations by their own names only", async () => {
    for (const name of [...PROTOTYPE_NAMES, "", "Nope"]) {
      awsError(await bus(`AWSEvents.${name}`, "{}"), "UnknownOperationException");
    }
    awsError(await bus("PutEvents", "{}"), "UnknownOperationException");
  });

  it("refuses a body that is not a JSON object as SerializationException", async () => {
    for (const op of ["PutRule", "PutTargets", "PutEvents", "RemoveTargets", "DeleteRule", "ListRules"]) {
      for (const body of ["null", "[]", "{", '"x"', "7"])
        awsError(await bus(`AWSEvents.${op}`, body), "SerializationException");
    }
    awsError(await bus("AWSEvents.PutRule", '{"Name":{"toString":1}}'), "SerializationException");
    awsError(await bus("AWSEvents.PutEvents", '{"Entries":[null]}'), "SerializationException");
    awsError(await bus("AWSEvents.PutTargets", '{"Rule":"r","Targets":7}'), "SerializationException");
    awsError(await bus("AWSEvents.RemoveTargets", '{"Rule":"r","Ids":7}'), "SerializationException");
  });

  it("names what a request misses, as ValidationException", async () => {
    awsError(await bus("AWSEvents.PutTargets", "{}"), "ValidationException");
    const put = await bus("AWSEvents.PutTargets", '{"Rule":"nothing-here","Targets":[]}');
    awsError(put, "ResourceNotFoundException");
    expect(put.text).toContain("Rule nothing-here does not exist");
  });

  it("refuses a time out of range, and details and patterns nested too deep", async () => {
    const entry = (more: object) =>
      JSON.stringify({ Entries: [{ Source: "s", DetailType: "d", Detail: "{}", ...more }] });
    for (const Time of [9e15, -9e15, 1e308])
      awsError(await bus("AWSEvents.PutEvents", entry({ Time })), "ValidationException");
    const ok = await bus("AWSEvents.PutEvents", entry({ Time: 1_700_000_000 }));
    expect(JSON.parse(ok.text)).toMatchObject({ FailedEntryCount: 0 });

    for (const Detail of [deepObjects(30_000), `{"a":${deepArrays(100_000)}}`]) {
      const deep = await bus("AWSEvents.PutEvents", entry({ Detail }));
      clean(deep);
      expect(JSON.parse(deep.text)).toMatchObject({ FailedEntryCount: 1, Entries: [{ ErrorCode: "MalformedDetail" }] });
    }
    for (const EventPattern of [deepObjects(100_000), `{"a":${deepArrays(100_000)}}`]) {
      awsError(
        await bus("AWSEvents.PutRule", JSON.stringify({ Name: "deep", EventPattern })),
        "InvalidEventPatternException",
      );
    }
  });
});

describe("the local Lambda endpoint", () => {
  it("answers a name that is not valid percent-encoding with Lambda's own error", async () => {
    for (const name of ["%zz", "%", "%E0%A4%A", "%C0%AF", "a%2Fb"]) {
      const a = await invoke(name);
      clean(a);
      expect(a.status).toBe(400);
      expect(a.headers["x-amzn-errortype"]).toBe("ValidationException");
    }
    const missing = await invoke("nothing-here");
    expect(missing.status).toBe(404);
    expect(missing.headers["x-amzn-errortype"]).toBe("ResourceNotFoundException");
  });
});

const SEED = Number(process.env.MAPGATE_FUZZ_SEED ?? 20_261_124);

describe(`the local endpoints under fuzzing (seed ${SEED})`, () => {
  it("answer a few thousand random and malformed requests with no 500 and no exception's words", async () => {
    const r = prng(SEED);
    const word = () =>
      Array.from({ length: 1 + r.int(12) }, () => r.pick([..."abcdefghijklmnopqrstuvwxyz0123456789-_.:/$"])).join("");
    const NUMBERS = ["0", "-0", "1e308", "-1e308", "9e15", "1e400", "123456789012345678901234567890", "0.1", "-7"];
    // A JSON value's text (never built as an object here: the test must not recurse over it either).
    // Nested 10^5 deep (up to 600 KB of text): rare, as each costs the endpoints a parse.
    const DEEP = [deepArrays(100_000), deepObjects(100_000), deepArrays(5_000), deepObjects(5_000)];
    const value = (budget = 3): string => {
      if (r.next() < 0.015) return r.pick(DEEP);
      switch (r.int(budget > 0 ? 10 : 5)) {
        case 0:
          return "null";
        case 1:
          return r.pick(["true", "false"]);
        case 2:
          return r.pick(NUMBERS);
        case 3:
          return JSON.stringify(word());
        case 4:
          return JSON.stringify(r.pick([...PROTOTYPE_NAMES, "", "\u0000", "\ud800", "é\u{1F30A}"]));
        case 5:
          return `[${Array.from({ length: r.int(4) }, () => value(budget - 1)).join(",")}]`;
        case 6:
          return `{"${r.pick(PROTOTYPE_NAMES)}":${value(budget - 1)}}`;
        default: {
          const keys = Array.from({ length: r.int(4) }, () => r.pick([word(), ...PROTOTYPE_NAMES]));
          return `{${keys.map((k) => `${JSON.stringify(k)}:${value(budget - 1)}`).join(",")}}`;
        }
      }
    };
    /** A JSON text inside a string member (Detail, EventPattern, definition, input, output). */
    const embedded = () =>
      r.next() < 0.3
        ? JSON.stringify(r.pick(["{", "", "nul", "[]", "{}", '{"a":', "[1,]", '{"a":1}}', ...DEEP.slice(2)]))
        : JSON.stringify(value());
    // Values a member plausibly holds, so that many requests pass the type checks and reach what follows them.
    const plausible = new Map<string, () => unknown>([
      ["Name", () => r.pick(["rule-1", "rule-2", word()])],
      ["Rule", () => r.pick(["rule-1", "rule-2", word()])],
      ["EventBusName", () => r.pick(["mapgate-events", "default"])],
      ["State", () => r.pick(["ENABLED", "DISABLED", word()])],
      ["Ids", () => [word(), "t1"]],
      ["Targets", () => [{ Id: "t1", Arn: `arn:aws:states:us-east-1:000000000000:stateMachine:${word()}` }]],
      ["Source", () => r.pick(["mapgate", word()])],
      ["DetailType", () => r.pick(["Job Completed", word()])],
      ["Time", () => (r.next() < 0.9 ? 1_700_000_000 + r.int(1e6) : r.pick([9e15, 8.64e12, -1, 1.5]))],
      ["Resources", () => [word()]],
      ["name", () => r.pick(["m1", "x1", word()])],
      ["roleArn", () => "arn:aws:iam::111122223333:role/r"],
      ["taskToken", () => word()],
      ["executionArn", () => r.pick([`${LOCAL_STATE_MACHINE_ARN.replace("stateMachine", "execution")}:x1`, word()])],
      ["stateMachineArn", () => r.pick([LOCAL_STATE_MACHINE_ARN, word()])],
    ]);
    const member = (name: string) => {
      const embeds = ["Detail", "EventPattern", "definition", "input", "output", "Input"].includes(name);
      const typed = plausible.get(name);
      const text = embeds && r.next() < 0.7 ? embedded() : typed && r.next() < 0.6 ? JSON.stringify(typed()) : value();
      return `${JSON.stringify(name)}:${text}`;
    };
    const objectWith = (names: readonly string[]) =>
      `{${names
        .filter(() => r.next() < 0.8)
        .map(member)
        .join(",")}}`;
    const body = (names: readonly string[]): string | Buffer => {
      const roll = r.next();
      if (roll < 0.1) return r.pick(["", "{", "null", "[]", '"x"', "1e999999", "}", "{}", "[{}]", ...DEEP]);
      if (roll < 0.15) return Buffer.from([0x7b, 0x22, 0xc3, 0x28, 0xff, 0x22, 0x3a, 0xf0, 0x9f, 0x7d]);
      return objectWith(names);
    };

    const SFN_OPS: Record<string, readonly string[]> = {
      StartExecution: ["stateMachineArn", "name", "input"],
      DescribeExecution: ["executionArn"],
      CreateStateMachine: ["name", "roleArn", "definition"],
      SendTaskSuccess: ["taskToken", "output"],
      SendTaskFailure: ["taskToken", "error", "cause"],
      SendTaskHeartbeat: ["taskToken"],
    };
    const EVENT_OPS: Record<string, readonly string[]> = {
      PutEvents: ["Entries"],
      PutRule: ["Name", "EventPattern", "State", "EventBusName"],
      PutTargets: ["Rule", "Targets", "EventBusName"],
      RemoveTargets: ["Rule", "Ids", "EventBusName"],
      DeleteRule: ["Name", "EventBusName"],
      ListRules: ["EventBusName"],
    };
    const target = (prefix: string, ops: readonly string[]) => {
      const roll = r.next();
      if (roll < 0.7) return `${prefix}.${r.pick(ops)}`;
      if (roll < 0.85) return `${prefix}.${r.pick(PROTOTYPE_NAMES)}`;
      return r.pick([word(), "", prefix, `${prefix}.`, `Other.${r.pick(ops)}`, r.pick(ops)]);
    };
    // Some well-formed requests too, so the fuzz reaches past the first checks.
    const sfnBody = (op: string): string | Buffer => {
      if (op === "StartExecution" && r.next() < 0.4) {
        return JSON.stringify({
          stateMachineArn: r.pick([LOCAL_STATE_MACHINE_ARN, "arn:aws:states:us-east-1:000000000000:stateMachine:m1"]),
          name: r.pick([word(), "fixed"]),
          input: JSON.parse(embedded()) as string,
        });
      }
      if (op === "CreateStateMachine" && r.next() < 0.4) {
        return JSON.stringify({
          name: r.pick(["m1", word()]),
          roleArn: "arn:aws:iam::111122223333:role/r",
          definition: `{"StartAt":"A","States":{"A":{"Type":${r.pick(['"Pass"', '"Succeed"', '"Task"', "7"])},${r.pick([
            '"End":true',
            `"Resource":"arn:aws:lambda:us-east-1:000000000000:function:${OPERATIONS_FUNCTION}","End":true`,
            `"Parameters":${value()},"End":true`,
            `"Next":"B"`,
          ])}}}}`,
        });
      }
      return body(Object.hasOwn(SFN_OPS, op) ? (SFN_OPS[op] ?? []) : []);
    };
    const eventsBody = (op: string): string | Buffer => {
      if (op === "PutEvents" && r.next() < 0.5) {
        const entry = () =>
          `{${["Source", "DetailType", "Detail", "Time", "EventBusName", "Resources"]
            .filter(() => r.next() < 0.85)
            .map(member)
            .join(",")}}`;
        return `{"Entries":[${Array.from({ length: r.int(12) }, entry).join(",")}]}`;
      }
      return body(Object.hasOwn(EVENT_OPS, op) ? (EVENT_OPS[op] ?? []) : []);
    };
    const lambdaPath = () => {
      const name = r.pick([
        OPERATIONS_FUNCTION,
        `${OPERATIONS_FUNCTION}:${word()}`,
        `arn:aws:lambda:us-east-1:000000000000:function:${OPERATIONS_FUNCTION}`,
        "%zz",
        "%",
        "%ff%fe",
        "%C0%AF",
        "%00",
        word(),
        encodeURIComponent(r.pick(PROTOTYPE_NAMES)),
        "a".repeat(1 + r.int(300)),
        "",
      ]);
      if (r.next() < 0.4) return `/2015-03-31/functions/${name}/invocations`;
      return r.pick([
        `/2015-03-31/functions/${name}/invocations?Qualifier=${r.pick([word(), "%zz", "$LATEST", "caller-0"])}`,
        `/2015-03-31/functions/${name}`,
        `//2015-03-31/functions/${name}/invocations`,
        `/${word()}`,
        "/",
        "*",
      ]);
    };

    const started = Date.now();
    let requests = 0;
    const failures: string[] = [];
    const check = async (what: string, answer: Promise<Answer>) => {
      requests++;
      try {
        const a = await answer;
        if (a.status >= 500 || LEAKS.some((l) => l.test(a.text))) {
          failures.push(`${what} → ${a.status} ${a.text.slice(0, 300)}`);
        }
      } catch (err) {
        failures.push(`${what} → ${(err as Error).message}`);
      }
    };
    for (let i = 0; i < 3000; i++) {
      const which = r.int(3);
      if (which === 0) {
        const t = target("AWSStepFunctions", Object.keys(SFN_OPS));
        const b = sfnBody(t.replace(/^AWSStepFunctions\./, ""));
        await check(`sfn #${i} ${t} ${String(b).slice(0, 200)}`, sfn(t, b));
      } else if (which === 1) {
        const t = target("AWSEvents", Object.keys(EVENT_OPS));
        const b = eventsBody(t.replace(/^AWSEvents\./, ""));
        await check(`events #${i} ${t} ${String(b).slice(0, 200)}`, bus(t, b));
      } else {
        const path = lambdaPath();
        const headers: Record<string, string> = {};
        if (r.next() < 0.3) headers["x-amz-invocation-type"] = r.pick(["Event", "DryRun", "RequestResponse", word()]);
        if (r.next() < 0.3) headers["x-amz-security-token"] = r.pick([word(), "arn:aws:iam::111122223333:role/r"]);
        const method = r.next() < 0.8 ? "POST" : r.pick(["GET", "PUT", "DELETE"]);
        const b = body(["operation", "params", "portalId", "taskToken"]);
        await check(`lambda #${i} ${method} ${path}`, send(lambda.endpoint, { method, path, headers, body: b }));
      }
    }
    // Request lines no HTTP client would send.
    for (const endpoint of [workflows.endpoint, events.endpoint, lambda.endpoint]) {
      for (const line of [
        "POST //[ HTTP/1.1",
        "POST http://[::1 HTTP/1.1",
        "POST /%zz%ff HTTP/1.1",
        "GET * HTTP/1.1",
      ]) {
        const status = await rawStatus(endpoint, line);
        requests++;
        if (status >= 500) failures.push(`${endpoint} ${line} → ${status}`);
      }
    }
    expect(failures).toEqual([]);
    expect(requests).toBeGreaterThan(3000);
    expect(Date.now() - started).toBeLessThan(60_000);
  });
});

/** The status a raw request line is answered with (0 when the connection is closed without one). */
function rawStatus(endpoint: string, line: string): Promise<number> {
  const url = new URL(endpoint);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), "127.0.0.1", () => {
      socket.end(`${line}\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`);
    });
    let head = "";
    socket.on("data", (c: Buffer) => (head += c.toString("latin1")));
    socket.on("end", () => resolve(Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)));
    socket.on("error", reject);
  });
}
