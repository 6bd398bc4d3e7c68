// Other AWS services calling mapgate and hearing from it, through the AWS SDK against the local engine: an IAM
// caller invokes the operations function (Lambda Invoke), a caller's own state machine publishes and waits with
// a task token, and events reach the bus (and its log) with details that match the schemas in infra/events.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { InvokeCommand, LambdaClient } from "@aws-sdk/client-lambda";
import { PutRuleCommand, PutTargetsCommand, EventBridgeClient } from "@aws-sdk/client-eventbridge";
import {
  CreateStateMachineCommand,
  DescribeExecutionCommand,
  SendTaskSuccessCommand,
  SFNClient,
  StartExecutionCommand,
} from "@aws-sdk/client-sfn";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { ScanCommand } from "@aws-sdk/lib-dynamodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EVENTS, type EventType, eventSchemaFile } from "#shared/system.ts";
import { stableItemId } from "#shared/publishing.ts";
import { adminCommand, type DemoOrganization, demoOrganization } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";
import { runningStore } from "./helpers/store.ts";

let engine: RunningEngine;
let org: DemoOrganization;
let aws: { lambda: string; sfn: string; events: string };
const PIPELINE = "arn:aws:iam::111122223333:role/pipeline";
const STRANGER = "arn:aws:iam::111122223333:role/stranger";
let alias = "";

/** The SDK's credentials say who calls: a role session's session token names it on the local engine. */
const as = (principal: string | undefined) => ({
  region: "us-east-1",
  credentials: { accessKeyId: "local", secretAccessKey: "local", ...(principal ? { sessionToken: principal } : {}) },
});
const lambdaAs = (principal: string | undefined) => new LambdaClient({ endpoint: aws.lambda, ...as(principal) });

async function invoke(principal: string | undefined, functionName: string, payload: unknown) {
  const out = await lambdaAs(principal).send(
    new InvokeCommand({ FunctionName: functionName, Payload: Buffer.from(JSON.stringify(payload)) }),
  );
  return {
    error: out.FunctionError,
    answer: JSON.parse(Buffer.from(out.Payload ?? []).toString("utf8")) as Record<string, unknown>,
  };
}

const tileConfig = (serviceName: string) => ({
  type: "MapServer",
  serviceName,
  properties: { cacheStoreId: org.folderStore, pathInCachedStore: "/caches/tiles/Basemap" },
});

function events(): { "detail-type": string; source: string; detail: Record<string, unknown>; rules: string[] }[] {
  return readFileSync(join(engine.dataDir, "events.jsonl"), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as never);
}

async function eventually<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  ms = 20_000,
): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const found = await probe();
    if (found !== undefined) return found;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** `npm run admin -- register-caller`: answers the alias ARN the principal invokes. */
function registerCaller(principal: string, username: string): string {
  const args = ["register-caller", "--portal", org.portalId, "--principal", principal, "--username", username];
  return (JSON.parse(adminCommand(engine.dataDir, args)) as { invoke: string }).invoke;
}

beforeAll(async () => {
  engine = await startEngine({ env: { MAPGATE_REDELIVERY_SECONDS: "1" } });
  aws = (engine.ready as unknown as { aws: typeof aws }).aws;
  org = demoOrganization(engine.dataDir);
  alias = registerCaller(PIPELINE, "publisher");
}, 60_000);

afterAll(async () => {
  if (process.env.SHOW_ENGINE) console.log(engine?.lines.slice(-60).join("\n"));
  await engine?.stop();
});

describe("IAM callers (Lambda Invoke of the operations function)", () => {
  it("publishes as the registered member and answers the REST operation's JSON", async () => {
    expect(alias).toMatch(/^arn:aws:lambda:us-east-1:000000000000:function:mapgate-operations:caller-[0-9a-f]{24}$/);
    // A role session of the registered role is that role.
    const session = "arn:aws:sts::111122223333:assumed-role/pipeline/nightly-run";
    const started = await invoke(session, alias, {
      operation: "publish",
      portalId: "self",
      params: { serverId: org.serverId, serverFolder: "Pipelines", serviceConfiguration: tileConfig("Nightly") },
    });
    expect(started.error).toBeUndefined();
    expect(started.answer).toMatchObject({
      success: true,
      jobId: expect.stringMatching(/^[0-9a-f]{32}$/),
      key: expect.any(String),
    });
    const job = await eventually("the job", async () => {
      const j = await invoke(session, alias, {
        operation: "getJob",
        params: { jobId: started.answer.jobId, key: started.answer.key },
      });
      return j.answer.status === "processing" ? undefined : j.answer;
    });
    expect(job).toMatchObject({ status: "completed", definition: { operation: "publish", serverFolder: "Pipelines" } });
    const itemId = (job.result as { services: { serviceItemId: string }[] }).services[0]?.serviceItemId;
    const item = await invoke(session, alias, { operation: "getItem", params: { itemId } });
    expect(item.answer).toMatchObject({ id: itemId, owner: "publisher", type: "Map Service", access: "private" });
  });

  it("answers errors as the REST operation does, and the member's privileges bound the caller", async () => {
    const refused = await invoke(PIPELINE, alias, { operation: "createRole", params: { name: "NotAllowed" } });
    expect(refused.answer).toMatchObject({ error: { code: 403 } });
    const invalid = await invoke(PIPELINE, alias, { operation: "publish", params: { serverId: org.serverId } });
    expect(invalid.answer).toMatchObject({
      error: {
        code: 400,
        message: "Unable to publish the service.",
        details: ["'serviceConfiguration' must be specified."],
      },
    });
    const unknown = await invoke(PIPELINE, alias, { operation: "dropTables" });
    expect(unknown.answer).toMatchObject({ error: { code: 400, message: "Invalid invocation." } });
  });

  it("refuses a principal the alias's policy does not name, an unregistered alias and a principal claimed in the body", async () => {
    await expect(
      lambdaAs(STRANGER).send(new InvokeCommand({ FunctionName: alias, Payload: Buffer.from('{"operation":"self"}') })),
    ).rejects.toMatchObject({ name: "AccessDeniedException" });
    const unregistered = `${alias.replace(/caller-[0-9a-f]{24}$/, "")}caller-${"0".repeat(24)}`;
    await expect(
      lambdaAs(STRANGER).send(new InvokeCommand({ FunctionName: unregistered, Payload: Buffer.from("{}") })),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
    // The unqualified function: the account's own operator may invoke it, but it answers registered callers only.
    const bare = alias.replace(/:caller-[0-9a-f]{24}$/, "");
    const forged = await invoke(undefined, bare, { operation: "self", principal: PIPELINE });
    expect(forged.answer).toMatchObject({ error: { code: 403 } });
    // Through a registered alias, a principal in the body is refused too, not ignored.
    const claimed = await invoke(PIPELINE, alias, { operation: "self", principal: STRANGER });
    expect(claimed.answer).toMatchObject({ error: { code: 400 } });
    expect(JSON.stringify(claimed.answer)).toContain("who calls is known from IAM");
    const unqualified = await invoke(undefined, bare, { operation: "self" });
    expect(unqualified.answer).toMatchObject({ error: { code: 403 } });
  });

  it("refuses a caller once removed", async () => {
    const other = "arn:aws:iam::111122223333:role/short-lived";
    const registered = { invoke: registerCaller(other, "user") };
    expect((await invoke(other, registered.invoke, { operation: "self" })).answer).toMatchObject({ id: org.portalId });
    adminCommand(engine.dataDir, ["remove-caller", "--principal", other]);
    await expect(
      lambdaAs(other).send(
        new InvokeCommand({ FunctionName: registered.invoke, Payload: Buffer.from('{"operation":"self"}') }),
      ),
    ).rejects.toMatchObject({ name: "ResourceNotFoundException" });
  });
});

describe("a caller's workflow publishes and waits (.waitForTaskToken)", () => {
  const sfn = () => new SFNClient({ endpoint: aws.sfn, ...as(undefined) });
  const waitingState = (payload: Record<string, unknown>) => ({
    Comment: "A data team's pipeline: publish, wait for the job, carry on with its result.",
    StartAt: "Publish",
    States: {
      Publish: {
        Type: "Task",
        Resource: "arn:aws:states:::lambda:invoke.waitForTaskToken",
        Parameters: { FunctionName: alias, Payload: { ...payload, "taskToken.$": "$$.Task.Token" } },
        TimeoutSeconds: 60,
        Catch: [
          { ErrorEquals: ["mapgate.JobFailed", "mapgate.OperationRefused"], ResultPath: "$.failure", Next: "Failed" },
        ],
        ResultPath: "$.job",
        End: true,
      },
      Failed: { Type: "Fail", ErrorPath: "$.failure.Error", CausePath: "$.failure.Cause" },
    },
  });

  async function run(name: string, definition: object) {
    const { stateMachineArn } = await sfn().send(
      new CreateStateMachineCommand({ name, definition: JSON.stringify(definition), roleArn: PIPELINE }),
    );
    const { executionArn } = await sfn().send(new StartExecutionCommand({ stateMachineArn, input: "{}" }));
    return eventually("the execution", async () => {
      const e = await sfn().send(new DescribeExecutionCommand({ executionArn }));
      return e.status === "RUNNING" ? undefined : e;
    });
  }

  it("refuses an execution input or a task output over 256 KiB, as Step Functions does", async () => {
    const { stateMachineArn } = await sfn().send(
      new CreateStateMachineCommand({
        name: "too-large",
        definition: JSON.stringify({ StartAt: "Done", States: { Done: { Type: "Succeed" } } }),
        roleArn: PIPELINE,
      }),
    );
    const big = JSON.stringify({ blob: "x".repeat(262_144) });
    await expect(sfn().send(new StartExecutionCommand({ stateMachineArn, input: big }))).rejects.toMatchObject({
      name: "ValidationException",
    });
    await expect(sfn().send(new SendTaskSuccessCommand({ taskToken: "t", output: big }))).rejects.toMatchObject({
      name: "ValidationException",
    });
  });

  it("gets the job's result when it completes", async () => {
    const done = await run(
      "publish-and-wait",
      waitingState({
        operation: "publish",
        params: { serverId: org.serverId, serviceConfiguration: tileConfig("Waited") },
      }),
    );
    expect(done.status).toBe("SUCCEEDED");
    const output = JSON.parse(done.output ?? "{}") as {
      job: { status: string; result: { services: { serviceUrl: string }[] } };
    };
    expect(output.job.status).toBe("completed");
    expect(output.job.result.services[0]?.serviceUrl).toMatch(/\/rest\/services\/Waited\/MapServer$/);
  });

  it("fails at once with mapgate.OperationRefused when the operation is refused before a job starts", async () => {
    const done = await run(
      "refused-and-told",
      waitingState({ operation: "publish", params: { serverId: org.serverId } }),
    );
    expect(done).toMatchObject({ status: "FAILED", error: "mapgate.OperationRefused" });
    expect(JSON.parse(done.cause ?? "{}")).toMatchObject({
      code: 400,
      details: ["'serviceConfiguration' must be specified."],
    });
  });

  it("fails at once when the event names a principal, even through the caller's own alias", async () => {
    const done = await run(
      "forged-and-told",
      waitingState({ operation: "publish", principal: STRANGER, params: { serverId: org.serverId } }),
    );
    expect(done).toMatchObject({ status: "FAILED", error: "mapgate.OperationRefused" });
    expect(done.cause).toContain("who calls is known from IAM");
  });

  it("fails with mapgate.JobFailed and the job's message when the job fails", async () => {
    // A service already holds the name publishLayers gives the first dataset's layer: the job fails on it.
    const clash = `attribution_${stableItemId(org.folderStore, "/data/world.gpkg/attribution").slice(0, 6)}`;
    const blocker = await invoke(PIPELINE, alias, {
      operation: "publish",
      params: { serverId: org.serverId, serverFolder: "Clash", serviceConfiguration: tileConfig(clash) },
    });
    await eventually("the blocking service", async () => {
      const j = await invoke(PIPELINE, alias, {
        operation: "getJob",
        params: { jobId: blocker.answer.jobId, key: blocker.answer.key },
      });
      return j.answer.status === "completed" ? true : undefined;
    });
    const done = await run(
      "layers-and-told",
      waitingState({
        operation: "publishLayers",
        params: { datastoreId: org.folderStore, serverId: org.serverId, serverFolder: "Clash" },
      }),
    );
    expect(done).toMatchObject({ status: "FAILED", error: "mapgate.JobFailed" });
    expect(JSON.parse(done.cause ?? "{}")).toMatchObject({
      operation: "publishLayers",
      message: `A service named '${clash}' exists already and is not this dataset's layer.`,
    });
  });
});

describe("events", () => {
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  addFormats.default(ajv);
  const validators = Object.fromEntries(
    (Object.keys(EVENTS.types) as EventType[]).map((t) => [
      EVENTS.types[t],
      ajv.compile(JSON.parse(readFileSync(join(ROOT, eventSchemaFile(t)), "utf8")) as object),
    ]),
  );

  it("raises every kind of event, each detail valid against its schema", async () => {
    // What the tests above did raised job and publishing events; a role change, an unpublish and a lockout now.
    const admin = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: "admin", password: PASSWORDS.admin }),
    }).then((r) => r.json<{ token: string }>().token);
    const rest = `${engine.ready.https}/portal/sharing/rest`;
    await call(`${rest}/portals/self/createRole`, {
      ca: engine.ca,
      body: form({ f: "json", token: admin, name: "Pipelines" }),
    });
    const published = events().find((e) => e["detail-type"] === "Service Published");
    // The URL the event hands out is the service's: it answers its JSON (to whom may see it) until unpublished.
    const serviceJson = await call(`${String(published?.detail.url)}?f=json&token=${admin}`, { ca: engine.ca });
    expect(serviceJson.json()).toMatchObject({ tileInfo: expect.any(Object) });
    await call(`${rest}/content/users/publisher/items/${String(published?.detail.itemId)}/delete`, {
      ca: engine.ca,
      body: form({ f: "json", token: admin }),
    });
    // An edit of a hosted layer (an empty service defined, then a feature added).
    await call(`${rest}/content/users/admin/createService`, {
      ca: engine.ca,
      body: form({
        f: "json",
        token: admin,
        outputType: "featureService",
        createParameters: JSON.stringify({ name: "Edited" }),
      }),
    });
    const hosted = `${engine.ready.https}/arcgis/rest/admin/services/Hosted/Edited/FeatureServer`;
    await call(`${hosted}/addToDefinition`, {
      ca: engine.ca,
      body: form({
        f: "json",
        token: admin,
        addToDefinition: JSON.stringify({ layers: [{ name: "Points", geometryType: "esriGeometryPoint" }] }),
      }),
    });
    const added = await call(hosted.replace("/rest/admin/services/", "/rest/services/") + "/0/addFeatures", {
      ca: engine.ca,
      body: form({ f: "json", token: admin, features: JSON.stringify([{ attributes: {}, geometry: { x: 1, y: 2 } }]) }),
    });
    expect(added.json()).toMatchObject({ addResults: [{ success: true }] });
    for (let i = 0; i < 6; i++) {
      await call(`${rest}/generateToken`, {
        ca: engine.ca,
        body: form({ f: "json", username: "nobody-here", password: "wrong" }),
      });
    }
    const seen = await eventually("every kind of event", () => {
      const kinds = new Set(events().map((e) => e["detail-type"]));
      return Object.values(EVENTS.types).every((t) => kinds.has(t)) ? events() : undefined;
    });
    for (const e of seen) {
      expect(e.source).toBe("mapgate");
      const validate = validators[e["detail-type"]];
      expect(validate, e["detail-type"]).toBeDefined();
      expect(validate?.(e.detail) ? [] : validate?.errors, e["detail-type"]).toEqual([]);
    }
    expect(seen.filter((e) => e["detail-type"] === "Sign-in Locked")).toHaveLength(1);
    expect(seen.find((e) => e["detail-type"] === "Job Submitted" && e.detail.caller)).toBeDefined();
  });

  it("evaluates the bus's rules and delivers to their targets", async () => {
    const bridge = new EventBridgeClient({ endpoint: aws.events, ...as(undefined) });
    await bridge.send(
      new PutRuleCommand({
        Name: "roles-to-log",
        EventBusName: "mapgate-events",
        EventPattern: JSON.stringify({
          source: ["mapgate"],
          "detail-type": ["Role Changed"],
          detail: { change: ["deleted"] },
        }),
      }),
    );
    const target = await new SFNClient({ endpoint: aws.sfn, ...as(undefined) }).send(
      new CreateStateMachineCommand({
        name: "on-role-deleted",
        definition: JSON.stringify({ StartAt: "Done", States: { Done: { Type: "Succeed" } } }),
        roleArn: PIPELINE,
      }),
    );
    await bridge.send(
      new PutTargetsCommand({
        Rule: "roles-to-log",
        EventBusName: "mapgate-events",
        Targets: [{ Id: "1", Arn: target.stateMachineArn }],
      }),
    );
    const admin = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: "admin", password: PASSWORDS.admin }),
    }).then((r) => r.json<{ token: string }>().token);
    const rest = `${engine.ready.https}/portal/sharing/rest/portals/self`;
    const created = await call(`${rest}/createRole`, {
      ca: engine.ca,
      body: form({ f: "json", token: admin, name: "Brief" }),
    }).then((r) => r.json<{ id: string }>());
    await call(`${rest}/roles/${created.id}/delete`, { ca: engine.ca, body: form({ f: "json", token: admin }) });
    const matched = await eventually("the matched event", () =>
      events().find(
        (e) => e["detail-type"] === "Role Changed" && e.detail.roleId === created.id && e.detail.change === "deleted",
      ),
    );
    expect(matched.rules).toEqual(["roles-to-log"]);
    const created_ = events().find((e) => e.detail.roleId === created.id && e.detail.change === "created");
    expect(created_?.rules).toEqual([]);
  });

  it("neither fails nor waits on a throttled bus: the event is kept and sent again", async () => {
    const fault = join(engine.dataDir, "events.fault");
    const { writeFileSync, rmSync } = await import("node:fs");
    writeFileSync(fault, "ThrottlingException");
    const admin = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
      ca: engine.ca,
      body: form({ f: "json", username: "admin", password: PASSWORDS.admin }),
    }).then((r) => r.json<{ token: string }>().token);
    const created = await call(`${engine.ready.https}/portal/sharing/rest/portals/self/createRole`, {
      ca: engine.ca,
      body: form({ f: "json", token: admin, name: "Throttled" }),
    }).then((r) => r.json<{ success: boolean; id: string }>());
    expect(created.success).toBe(true);
    expect(events().some((e) => e.detail.roleId === created.id)).toBe(false);
    const kept = await runningStore(engine.dataDir).send(new ScanCommand({ TableName: "mapgate-outbox" }));
    const outboxed = (kept.Items ?? []).find((i) => String(i.detail).includes(created.id));
    expect(outboxed).toBeDefined();
    rmSync(fault);
    // events-redeliver runs every second here (every minute on AWS).
    const redelivered = await eventually("the redelivered event", () =>
      events().find((e) => e.detail.roleId === created.id),
    );
    // Sent again unchanged: consumers de-duplicate by the same eventId.
    expect(redelivered.detail).toMatchObject({ change: "created", name: "Throttled", eventId: outboxed?.eventId });
  });

  it("follows the log with npm run admin -- events --follow", async () => {
    const child = spawn(
      process.execPath,
      [join(ROOT, "infra/admin/cli.ts"), "events", "--follow", "--data-dir", engine.dataDir],
      {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    try {
      let text = "";
      child.stdout.on("data", (c: Buffer) => {
        text += c.toString("utf8");
      });
      const complete = () => text.split("\n").slice(0, -1);
      await eventually("the events so far", () => (complete().length >= events().length ? true : undefined));
      const admin = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
        ca: engine.ca,
        body: form({ f: "json", username: "admin", password: PASSWORDS.admin }),
      }).then((r) => r.json<{ token: string }>().token);
      await call(`${engine.ready.https}/portal/sharing/rest/portals/self/createRole`, {
        ca: engine.ca,
        body: form({ f: "json", token: admin, name: "Followed" }),
      });
      const line = await eventually("the new event, printed", () => complete().find((l) => l.includes('"Followed"')));
      expect(JSON.parse(line)).toMatchObject({
        "detail-type": "Role Changed",
        detail: { change: "created", name: "Followed" },
      });
    } finally {
      child.kill();
    }
  });

  it("prints the log with npm run admin -- events", () => {
    const printed = adminCommand(engine.dataDir, ["events"]).trim().split("\n");
    expect(printed.length).toBe(events().length);
    expect(JSON.parse(printed[0] ?? "{}")).toMatchObject({ source: "mapgate", version: "0" });
  });
});
