// Asynchronous jobs. A job's state only moves forward (processing → completed | failed), by conditional
// writes; its key is stored as a SHA-256 hash and compared in constant time; its expiry is checked on read.
import { createHash, timingSafeEqual } from "node:crypto";
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { tableName } from "#shared/config.ts";
import { ddb, isConditionFailure, scanAll } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";

export const OPERATIONS = ["describe", "publish", "publishLayers", "publishHosted"] as const;
export type JobOperation = (typeof OPERATIONS)[number];
export type JobStatus = "processing" | "completed" | "failed";

export interface Job {
  readonly jobId: string;
  readonly portalId: string;
  readonly owner: string;
  readonly keyHash: string;
  readonly operation: JobOperation;
  readonly params: Readonly<Record<string, string>>;
  /** The workflow input, kept so an execution that died with its engine can be run again. */
  readonly input: string;
  readonly status: JobStatus;
  readonly message: string;
  /** What a completed job left undone, and why (publishLayers' skipped datasets): its warning messages. */
  readonly warnings: readonly string[];
  readonly result: unknown;
  readonly created: number;
  readonly modified: number;
  /** Epoch seconds after which the job no longer exists for anyone (DynamoDB's TTL reclaims it later). */
  readonly expiresAt: number;
  /** The task token a caller's workflow waits on, answered when the job ends (a credential: never shown). */
  readonly taskToken?: string | undefined;
}

export const JOB_RETENTION_SECONDS = 7 * 24 * 3600;

export const hashKey = (key: string) => createHash("sha256").update(key, "utf8").digest("hex");

/** What a job's workflow execution is given: who asked for what (tasks see no request). */
export interface JobStart {
  readonly jobId: string;
  readonly portalId: string;
  readonly owner: string;
  readonly operation: JobOperation;
  readonly params: Readonly<Record<string, string>>;
  /** The public HTTPS origin, for the URLs a job writes. */
  readonly origin: string;
  /**
   * A caller's workflow waits on this job (`.waitForTaskToken`): its token is on the job's record, never in the
   * execution's input, which the workflow's logs keep.
   */
  readonly callerWaits?: true;
}

/** A new job's record, processing, readable for JOB_RETENTION_SECONDS with `key`. */
export function newJob(start: JobStart, key: string, now = Date.now(), taskToken?: string): Job {
  return {
    jobId: start.jobId,
    portalId: start.portalId,
    owner: start.owner,
    keyHash: hashKey(key),
    operation: start.operation,
    params: start.params,
    input: JSON.stringify(start),
    status: "processing",
    message: "",
    warnings: [],
    result: null,
    created: now,
    modified: now,
    expiresAt: Math.floor(now / 1000) + JOB_RETENTION_SECONDS,
    ...(taskToken ? { taskToken } : {}),
  };
}

/** Constant-time: the time taken says nothing about how much of the key was right. */
export function keyMatches(job: Job, key: string): boolean {
  const given = Buffer.from(hashKey(key), "hex");
  const stored = Buffer.from(job.keyHash, "hex");
  return given.length === stored.length && timingSafeEqual(given, stored);
}

function toJob(item: Record<string, unknown>): Job {
  const r = new RecordReader("job", item);
  return {
    jobId: r.string("jobId"),
    portalId: r.string("portalId"),
    owner: r.string("owner"),
    keyHash: r.string("keyHash"),
    operation: r.oneOf("operation", OPERATIONS),
    params: (item.params ?? {}) as Record<string, string>,
    input: r.string("input"),
    status: r.oneOf("status", ["processing", "completed", "failed"] as const),
    message: r.optionalString("message") ?? "",
    warnings: r.strings("warnings"),
    result: item.result ?? null,
    created: r.number("created"),
    modified: r.number("modified"),
    expiresAt: r.number("expiresAt"),
    taskToken: r.optionalString("taskToken"),
  };
}

/** A job that exists and has not expired (expiry is checked here, never left to TTL). */
export async function getJob(jobId: string, now = Date.now()): Promise<Job | undefined> {
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("jobs"), Key: { jobId }, ConsistentRead: true }),
  );
  if (!Item) return undefined;
  const job = toJob(Item);
  return job.expiresAt * 1000 > now ? job : undefined;
}

export async function createJob(job: Job): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: tableName("jobs"),
      Item: { ...job },
      ConditionExpression: "attribute_not_exists(jobId)",
    }),
  );
}

/** Moves a processing job to its end state; answers false when it had ended already (a repeated task). */
export async function finishJob(
  jobId: string,
  status: "completed" | "failed",
  result: unknown,
  message: string,
  warnings: readonly string[] = [],
): Promise<boolean> {
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("jobs"),
        Key: { jobId },
        UpdateExpression: "SET #s = :s, #r = :r, #m = :m, #w = :w, #t = :t",
        ConditionExpression: "#s = :processing",
        ExpressionAttributeNames: {
          "#s": "status",
          "#r": "result",
          "#m": "message",
          "#w": "warnings",
          "#t": "modified",
        },
        ExpressionAttributeValues: {
          ":s": status,
          ":r": result ?? null,
          ":m": message,
          ":w": [...warnings],
          ":t": Date.now(),
          ":processing": "processing",
        },
      }),
    );
    return true;
  } catch (err) {
    if (isConditionFailure(err)) return false;
    throw err;
  }
}

/** Jobs still processing (the local engine resumes them at start; the jobs table is small there). */
export async function processingJobs(): Promise<Job[]> {
  const items = await scanAll({
    TableName: tableName("jobs"),
    FilterExpression: "#s = :p",
    ExpressionAttributeNames: { "#s": "status" },
    ExpressionAttributeValues: { ":p": "processing" },
  });
  return items.map(toJob);
}
