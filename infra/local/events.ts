// The local engine's EventBridge: PutEvents (and PutRule / PutTargets / ListRules / DeleteRule / RemoveTargets
// for rules) on EventBridge's own JSON protocol. Every event taken is appended to the data folder's event log
// (`npm run admin -- events --follow` prints it) with the rules it matched; a matched rule's targets are
// delivered through the engine (a local state machine's StartExecution, the operations function's Invoke).
// A fault file in the data folder makes the bus answer ThrottlingException, to rehearse a throttled bus.
import { randomUUID } from "node:crypto";
import { appendFile, readFile, writeFile } from "node:fs/promises";
import { existsSync } from "node:fs";
import { nestedDeeperThan } from "#shared/json-depth.ts";
import {
  AwsJsonError,
  type Json,
  listMember,
  MAX_NESTING,
  numberMember,
  parseNestedJson,
  serveAwsJson,
  stringMember,
} from "./aws-json.ts";
import { matchesPattern, patternProblem } from "./event-patterns.ts";

export const LOCAL_BUS = "mapgate-events";
const ACCOUNT = "000000000000";
const REGION = "us-east-1";
/** PutEvents takes at most ten entries and 256 KiB in all. */
const MAX_ENTRIES = 10;
const MAX_REQUEST_BYTES = 256 * 1024;
/**
 * The latest event time taken (seconds since the epoch; JavaScript dates end at 8.64e12): EventBridge takes
 * timestamps as numbers and refuses what is no time.
 */
const MAX_TIME_SECONDS = 8.64e12;

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

/** A required member, named as EventBridge's validation names what is missing. */
function required<T>(value: T | undefined, member: string): T {
  if (value === undefined) {
    throw new AwsJsonError(
      "ValidationException",
      `1 validation error detected: Value null at '${member}' failed to satisfy constraint: Member must not be null`,
    );
  }
  return value;
}

export async function startEvents(files: EventFiles, deliver: Deliver, busName = LOCAL_BUS): Promise<LocalEvents> {
  const rules = new Map<string, Rule>();
  if (existsSync(files.rules)) {
    for (const r of JSON.parse(await readFile(files.rules, "utf8")) as Rule[]) rules.set(`${r.bus}/${r.name}`, r);
  }
  const saveRules = () => writeFile(files.rules, JSON.stringify([...rules.values()], null, 1), { mode: 0o600 });
  const busArn = (bus: string) => `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${bus}`;
  const busOf = (name: string | undefined) => {
    const bus = name ? name.replace(/^arn:aws:events:[^:]*:\d+:event-bus\//, "") : "default";
    if (bus !== busName && bus !== "default")
      throw new AwsJsonError("ResourceNotFoundException", `Event bus ${bus} does not exist.`);
    return bus;
  };
  // Appends are queued so lines never interleave, and each event is on disk before PutEvents answers.
  let appending = Promise.resolve();
  const record = (line: string) =>
    (appending = appending.then(() => appendFile(files.log, `${line}\n`, { mode: 0o600 })));

  const putEvents = async (body: Json, size: number) => {
    if (existsSync(files.fault)) throw new AwsJsonError("ThrottlingException", "Rate exceeded");
    const entries = listMember(body, "Entries", "object");
    if (!entries || entries.length === 0 || entries.length > MAX_ENTRIES) {
      throw new AwsJsonError("ValidationException", `Entries must hold 1 to ${MAX_ENTRIES} entries.`);
    }
    if (size > MAX_REQUEST_BYTES)
      throw new AwsJsonError("ValidationException", "Total size of the entries in the request is over the limit.");
    // Every entry's members are read before any is taken: a malformed request takes none.
    const read = entries.map((raw) => {
      const time = numberMember(raw, "Time");
      if (time !== undefined && !(Math.abs(time) <= MAX_TIME_SECONDS)) {
        throw new AwsJsonError("ValidationException", "Parameter Time is not a valid timestamp.");
      }
      return {
        source: stringMember(raw, "Source"),
        detailType: stringMember(raw, "DetailType"),
        detailText: stringMember(raw, "Detail"),
        busName: stringMember(raw, "EventBusName"),
        resources: listMember(raw, "Resources", "string") ?? [],
        time: time === undefined ? new Date() : new Date(time * 1000),
      };
    });
    const results: Record<string, string>[] = [];
    let failed = 0;
    for (const raw of read) {
      const fail = (code: string, message: string) => {
        failed++;
        results.push({ ErrorCode: code, ErrorMessage: message });
      };
      let detail: unknown;
      try {
        detail = JSON.parse(raw.detailText ?? "");
      } catch {
        detail = undefined;
      }
      if (!raw.source) {
        fail("InvalidArgument", "Parameter Source is not valid.");
        continue;
      }
      if (!raw.detailType) {
        fail("InvalidArgument", "Parameter DetailType is not valid.");
        continue;
      }
      if (detail === null || typeof detail !== "object" || Array.isArray(detail)) {
        fail("MalformedDetail", "Detail is malformed.");
        continue;
      }
      // What the bus keeps is serialised and matched, which recurses through the detail.
      if (nestedDeeperThan(detail, MAX_NESTING)) {
        fail("MalformedDetail", `Detail is malformed: it nests more than ${MAX_NESTING} levels deep.`);
        continue;
      }
      let bus: string;
      try {
        bus = busOf(raw.busName);
      } catch (err) {
        fail("NotAuthorizedForSourceException", (err as Error).message);
        continue;
      }
      const id = randomUUID();
      const event = {
        version: "0",
        id,
        "detail-type": raw.detailType,
        source: raw.source,
        account: ACCOUNT,
        time: raw.time.toISOString().replace(/\.\d{3}Z$/, "Z"),
        region: REGION,
        resources: raw.resources,
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

  const ops = new Map<string, (body: Json, size: number) => Promise<unknown>>([
    ["PutEvents", putEvents],
    [
      "PutRule",
      async (b) => {
        const bus = busOf(stringMember(b, "EventBusName"));
        const name = required(stringMember(b, "Name"), "name");
        if (!/^[\w.-]{1,64}$/.test(name)) throw new AwsJsonError("ValidationException", "Rule name is not valid.");
        const pattern = stringMember(b, "EventPattern") ?? "";
        const state = stringMember(b, "State");
        // Checking and matching a pattern recurse through it.
        const parsed = parseNestedJson(pattern, "InvalidEventPatternException", {
          notJson: "Event pattern is not valid JSON.",
          tooDeep: `Event pattern nests more than ${MAX_NESTING} levels deep.`,
        });
        const problem = patternProblem(parsed);
        if (problem) throw new AwsJsonError("InvalidEventPatternException", problem);
        const existing = rules.get(`${bus}/${name}`);
        rules.set(`${bus}/${name}`, {
          name,
          bus,
          pattern,
          state: state === "DISABLED" ? "DISABLED" : "ENABLED",
          targets: existing?.targets ?? [],
        });
        await saveRules();
        return { RuleArn: `arn:aws:events:${REGION}:${ACCOUNT}:rule/${bus === "default" ? "" : `${bus}/`}${name}` };
      },
    ],
    [
      "PutTargets",
      async (b) => {
        const bus = busOf(stringMember(b, "EventBusName"));
        const ruleName = required(stringMember(b, "Rule"), "rule");
        const targets = required(listMember(b, "Targets", "object"), "targets");
        const given = targets.map((t) => {
          const input = stringMember(t, "Input");
          return {
            id: stringMember(t, "Id") ?? "",
            arn: stringMember(t, "Arn") ?? "",
            ...(input !== undefined ? { input } : {}),
          };
        });
        const rule = rules.get(`${bus}/${ruleName}`);
        if (!rule) throw new AwsJsonError("ResourceNotFoundException", `Rule ${ruleName.slice(0, 64)} does not exist.`);
        for (const t of given) rule.targets = [...rule.targets.filter((x) => x.id !== t.id), t];
        await saveRules();
        return { FailedEntryCount: 0, FailedEntries: [] };
      },
    ],
    [
      "RemoveTargets",
      async (b) => {
        const bus = busOf(stringMember(b, "EventBusName"));
        const ruleName = required(stringMember(b, "Rule"), "rule");
        const ids = required(listMember(b, "Ids", "string"), "ids");
        const rule = rules.get(`${bus}/${ruleName}`);
        if (rule) rule.targets = rule.targets.filter((t) => !ids.includes(t.id));
        await saveRules();
        return { FailedEntryCount: 0, FailedEntries: [] };
      },
    ],
    [
      "DeleteRule",
      async (b) => {
        const bus = busOf(stringMember(b, "EventBusName"));
        rules.delete(`${bus}/${required(stringMember(b, "Name"), "name")}`);
        await saveRules();
        return {};
      },
    ],
    [
      "ListRules",
      async (b) => {
        const bus = busOf(stringMember(b, "EventBusName"));
        return {
          Rules: [...rules.values()]
            .filter((r) => r.bus === bus)
            .map((r) => ({ Name: r.name, EventPattern: r.pattern, State: r.state, EventBusName: r.bus })),
        };
      },
    ],
  ]);
  const operations = new Set(ops.keys());

  const { server, endpoint } = await serveAwsJson({
    service: "AWSEvents",
    version: "1.1",
    internalType: "InternalException",
    // Read whole (to know its size) but kept only up to a bound: a larger request is refused anyway; each
    // operation holds its entries to MAX_REQUEST_BYTES itself.
    maxBytes: MAX_REQUEST_BYTES * 4,
    operations: () => operations,
    handle: async (operation, body, size) => ({ body: await ops.get(operation)?.(body, size) }),
  });
  // The bus never keeps a process alive by itself (the engine's listeners do; a test's process may end).
  server.unref();
  return {
    endpoint,
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
