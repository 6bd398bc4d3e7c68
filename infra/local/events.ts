// The local engine's EventBridge: PutEvents (and PutRule / PutTargets / ListRules / DeleteRule / RemoveTargets
// for rules) on EventBridge's own JSON protocol. Every event taken is appended to the data folder's event log
// (`npm run admin -- events --follow` prints it) with the rules it matched; a matched rule's targets are
// delivered through the engine (a local state machine's StartExecution, the operations function's Invoke).
// A fault file in the data folder makes the bus answer ThrottlingException, to rehearse a throttled bus.
import { randomUUID } from "node:crypto";
import { appendFile, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { matchesPattern, patternProblem } from "./event-patterns.ts";

export const LOCAL_BUS = "mapgate-events";
const ACCOUNT = "000000000000";
const REGION = "us-east-1";
/** PutEvents takes at most ten entries and 256 KiB in all. */
const MAX_ENTRIES = 10;
const MAX_REQUEST_BYTES = 256 * 1024;

interface Rule {
  readonly name: string;
  readonly bus: string;
  readonly pattern: string;
  readonly state: "ENABLED" | "DISABLED";
  targets: { readonly id: string; readonly arn: string; readonly input?: string }[];
}

export interface EventFiles {
  /** One JSON event per line, appended. */
  readonly log: string;
  /** Rules on the bus, kept across restarts. */
  readonly rules: string;
  /** While it exists, PutEvents answers ThrottlingException. */
  readonly fault: string;
}

export const eventFiles = (dataDir: string): EventFiles => ({
  log: `${dataDir}/events.jsonl`,
  rules: `${dataDir}/event-rules.json`,
  fault: `${dataDir}/events.fault`,
});

export interface LocalEvents {
  readonly endpoint: string;
  readonly busArn: string;
  close(): Promise<void>;
}

/** Delivers a matched event to a rule's target: the engine knows what an ARN names. */
export type Deliver = (targetArn: string, input: string) => Promise<void>;

class EventsError extends Error {
  readonly type: string;

  constructor(type: string, message: string) {
    super(message);
    this.type = type;
  }
}

export async function startEvents(files: EventFiles, deliver: Deliver, busName = LOCAL_BUS): Promise<LocalEvents> {
  const rules = new Map<string, Rule>();
  if (existsSync(files.rules)) {
    for (const r of JSON.parse(await readFile(files.rules, "utf8")) as Rule[]) rules.set(`${r.bus}/${r.name}`, r);
  }
  const saveRules = () => writeFile(files.rules, JSON.stringify([...rules.values()], null, 1), { mode: 0o600 });
  const busArn = (bus: string) => `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${bus}`;
  const busOf = (name: unknown) => {
    const bus =
      typeof name === "string" && name !== "" ? name.replace(/^arn:aws:events:[^:]*:\d+:event-bus\//, "") : "default";
    if (bus !== busName && bus !== "default")
      throw new EventsError("ResourceNotFoundException", `Event bus ${bus} does not exist.`);
    return bus;
  };
  // Appends are queued so lines never interleave, and each event is on disk before PutEvents answers.
  let appending = Promise.resolve();
  const record = (line: string) =>
    (appending = appending.then(() => appendFile(files.log, `${line}\n`, { mode: 0o600 })));

  const putEvents = async (body: Record<string, unknown>, size: number) => {
    if (existsSync(files.fault)) throw new EventsError("ThrottlingException", "Rate exceeded");
    const entries = body.Entries;
    if (!Array.isArray(entries) || entries.length === 0 || entries.length > MAX_ENTRIES) {
      throw new EventsError("ValidationException", `Entries must hold 1 to ${MAX_ENTRIES} entries.`);
    }
    if (size > MAX_REQUEST_BYTES)
      throw new EventsError("ValidationException", "Total size of the entries in the request is over the limit.");
    const results: Record<string, string>[] = [];
    let failed = 0;
    for (const raw of entries as Record<string, unknown>[]) {
      const fail = (code: string, message: string) => {
        failed++;
        results.push({ ErrorCode: code, ErrorMessage: message });
      };
      let detail: unknown;
      try {
        detail = JSON.parse(String(raw.Detail ?? ""));
      } catch {
        detail = undefined;
      }
      if (typeof raw.Source !== "string" || raw.Source === "") {
        fail("InvalidArgument", "Parameter Source is not valid.");
        continue;
      }
      if (typeof raw.DetailType !== "string" || raw.DetailType === "") {
        fail("InvalidArgument", "Parameter DetailType is not valid.");
        continue;
      }
      if (detail === null || typeof detail !== "object" || Array.isArray(detail)) {
        fail("MalformedDetail", "Detail is malformed.");
        continue;
      }
      let bus: string;
      try {
        bus = busOf(raw.EventBusName);
      } catch (err) {
        fail("NotAuthorizedForSourceException", (err as Error).message);
        continue;
      }
      const id = randomUUID();
      const time = typeof raw.Time === "number" ? new Date(raw.Time * 1000) : new Date();
      const event = {
        version: "0",
        id,
        "detail-type": raw.DetailType,
        source: raw.Source,
        account: ACCOUNT,
        time: time.toISOString().replace(/\.\d{3}Z$/, "Z"),
        region: REGION,
        resources: Array.isArray(raw.Resources) ? raw.Resources : [],
        detail,
      };
      const matched = [...rules.values()].filter(
        (r) => r.bus === bus && r.state === "ENABLED" && matchesPattern(JSON.parse(r.pattern), event),
      );
      await record(JSON.stringify({ bus, ...event, rules: matched.map((r) => r.name) }));
      for (const rule of matched) {
        for (const t of rule.targets) void deliver(t.arn, t.input ?? JSON.stringify(event)).catch(() => undefined);
      }
      results.push({ EventId: id });
    }
    return { FailedEntryCount: failed, Entries: results };
  };

  const ops: Record<string, (body: Record<string, unknown>, size: number) => Promise<unknown>> = {
    PutEvents: putEvents,
    PutRule: async (b) => {
      const bus = busOf(b.EventBusName);
      const name = String(b.Name ?? "");
      if (!/^[\w.-]{1,64}$/.test(name)) throw new EventsError("ValidationException", "Rule name is not valid.");
      const pattern = String(b.EventPattern ?? "");
      let parsed: unknown;
      try {
        parsed = JSON.parse(pattern);
      } catch {
        throw new EventsError("InvalidEventPatternException", "Event pattern is not valid JSON.");
      }
      const problem = patternProblem(parsed);
      if (problem) throw new EventsError("InvalidEventPatternException", problem);
      const existing = rules.get(`${bus}/${name}`);
      rules.set(`${bus}/${name}`, {
        name,
        bus,
        pattern,
        state: b.State === "DISABLED" ? "DISABLED" : "ENABLED",
        targets: existing?.targets ?? [],
      });
      await saveRules();
      return { RuleArn: `arn:aws:events:${REGION}:${ACCOUNT}:rule/${bus === "default" ? "" : `${bus}/`}${name}` };
    },
    PutTargets: async (b) => {
      const rule = rules.get(`${busOf(b.EventBusName)}/${String(b.Rule ?? "")}`);
      if (!rule) throw new EventsError("ResourceNotFoundException", `Rule ${String(b.Rule)} does not exist.`);
      for (const t of (b.Targets ?? []) as { Id?: unknown; Arn?: unknown; Input?: unknown }[]) {
        const id = String(t.Id ?? "");
        rule.targets = [
          ...rule.targets.filter((x) => x.id !== id),
          { id, arn: String(t.Arn ?? ""), ...(typeof t.Input === "string" ? { input: t.Input } : {}) },
        ];
      }
      await saveRules();
      return { FailedEntryCount: 0, FailedEntries: [] };
    },
    RemoveTargets: async (b) => {
      const rule = rules.get(`${busOf(b.EventBusName)}/${String(b.Rule ?? "")}`);
      if (rule) rule.targets = rule.targets.filter((t) => !((b.Ids ?? []) as string[]).includes(t.id));
      await saveRules();
      return { FailedEntryCount: 0, FailedEntries: [] };
    },
    DeleteRule: async (b) => {
      rules.delete(`${busOf(b.EventBusName)}/${String(b.Name ?? "")}`);
      await saveRules();
      return {};
    },
    ListRules: async (b) => {
      const bus = busOf(b.EventBusName);
      return {
        Rules: [...rules.values()]
          .filter((r) => r.bus === bus)
          .map((r) => ({ Name: r.name, EventPattern: r.pattern, State: r.state, EventBusName: r.bus })),
      };
    },
  };

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { "content-type": "application/x-amz-json-1.1", "content-length": Buffer.byteLength(text) });
    res.end(text);
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const c of req as AsyncIterable<Buffer>) {
      size += c.length;
      if (size <= MAX_REQUEST_BYTES * 4) chunks.push(c);
    }
    const op = String(req.headers["x-amz-target"] ?? "").replace(/^AWSEvents\./, "");
    const fn = ops[op];
    if (!fn)
      return answer(res, 400, { __type: "UnknownOperationException", message: `${op} is not available locally` });
    try {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}") as Record<string, unknown>;
      return answer(res, 200, await fn(body, size));
    } catch (err) {
      if (err instanceof EventsError) return answer(res, 400, { __type: err.type, message: err.message });
      if (err instanceof SyntaxError)
        return answer(res, 400, { __type: "SerializationException", message: "Malformed JSON" });
      throw err;
    }
  };
  const server = createServer((req, res) => {
    handle(req, res).catch(() => answer(res, 500, { __type: "InternalException", message: "internal error" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  // The bus never keeps a process alive by itself (the engine's listeners do; a test's process may end).
  server.unref();
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    busArn: busArn(busName),
    close: async () => {
      await appending;
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
