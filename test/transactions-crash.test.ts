// A local transaction is all-or-nothing across a crash, as DynamoDB's are: the real engine (`node
// infra/local/main.ts`) is killed with SIGKILL in the middle of bursts of multi-item transactions, restarted
// on the same data folder, and after each restart the whole of the test's data is checked for a transaction
// applied in part. The transactions are the role store's own shapes (create, rename, assign, delete, each a
// role item and its name reservation or holder counts moved together) and transfers between 2–10 accounts
// whose sum never changes.
import { randomInt, randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DynamoDBDocumentClient,
  GetCommand,
  PutCommand,
  QueryCommand,
  TransactWriteCommand,
} from "@aws-sdk/lib-dynamodb";
import { expect, it } from "vitest";
import { newDataDir, type RunningEngine, startEngine } from "./helpers/engine.ts";

const TableName = "mapgate-roles";
const PORTAL = "crash-portal";
const BANK = "crash-bank";
const ACCOUNTS = 10;
const START_BALANCE = 100;
const USERS = ["u0", "u1", "u2", "u3", "u4", "u5"];
// Few names, so creates and renames contend for them as concurrent admins would.
const NAMES = ["Editors", "Viewers", "Analysts", "Curators", "Owners", "Guests", "Auditors", "Mappers"];
const CYCLES = 8;
const WORKERS = 4;
// Wide enough that a kill at a random moment usually lands between two writes of one transaction.
const HOOK = { MAPGATE_TEST_TRANSACTION_STEP_DELAY_MS: "4" };

type Item = Record<string, unknown>;
type TransactItems = NonNullable<ConstructorParameters<typeof TransactWriteCommand>[0]["TransactItems"]>;

const nameKey = (name: string) => name.normalize("NFKC").toUpperCase().toLowerCase();
const pick = <T>(list: readonly T[]): T => list[randomInt(list.length)] as T;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function client(engine: RunningEngine): DynamoDBDocumentClient {
  const state = JSON.parse(readFileSync(join(engine.dataDir, "engine.json"), "utf8")) as { dynamoEndpoint: string };
  return DynamoDBDocumentClient.from(
    new DynamoDBClient({
      endpoint: state.dynamoEndpoint,
      region: "us-east-1",
      credentials: { accessKeyId: "x", secretAccessKey: "x" },
      // A request cut off by the kill is not retried against a dead engine.
      maxAttempts: 1,
    }),
  );
}

async function partition(ddb: DynamoDBDocumentClient, portalId: string): Promise<Item[]> {
  const out: Item[] = [];
  let start: Item | undefined;
  do {
    const page = await ddb.send(
      new QueryCommand({
        TableName,
        KeyConditionExpression: "portalId = :p",
        ExpressionAttributeValues: { ":p": portalId },
        ConsistentRead: true,
        ExclusiveStartKey: start,
      }),
    );
    out.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return out;
}

/** Every broken invariant: each one is a transaction of which only some writes survived. */
async function violations(ddb: DynamoDBDocumentClient): Promise<string[]> {
  const found: string[] = [];
  const items = await partition(ddb, PORTAL);
  const of = (prefix: string) => items.filter((i) => String(i.entry).startsWith(prefix));
  const roles = new Map(of("role#").map((r) => [String(r.roleId), r]));
  const names = new Map(of("name#").map((n) => [String(n.entry).slice("name#".length), n]));
  const users = of("user#");
  for (const [roleId, role] of roles) {
    const reservation = names.get(nameKey(String(role.name)));
    if (reservation?.roleId !== roleId) found.push(`role ${roleId} (${String(role.name)}) has no name reservation`);
    const holders = users.filter((u) => u.role === roleId).length;
    if (role.holders !== holders) found.push(`role ${roleId} counts ${String(role.holders)} holders, has ${holders}`);
  }
  for (const [key, reservation] of names) {
    const role = roles.get(String(reservation.roleId));
    if (!role || nameKey(String(role.name)) !== key) found.push(`the name ${key} is reserved for no role`);
  }
  for (const user of users) {
    if (user.role !== undefined && !roles.has(String(user.role)))
      found.push(`${String(user.entry)} holds the missing role ${String(user.role)}`);
  }
  const accounts = await partition(ddb, BANK);
  const sum = accounts.reduce((total, a) => total + Number(a.n), 0);
  if (accounts.length !== ACCOUNTS || sum !== ACCOUNTS * START_BALANCE)
    found.push(`${accounts.length} accounts hold ${sum}, not ${ACCOUNTS * START_BALANCE}`);
  return found;
}

async function seed(ddb: DynamoDBDocumentClient): Promise<void> {
  for (let i = 0; i < ACCOUNTS; i++)
    await ddb.send(new PutCommand({ TableName, Item: { portalId: BANK, entry: `acct#${i}`, n: START_BALANCE } }));
  for (const u of USERS) await ddb.send(new PutCommand({ TableName, Item: { portalId: PORTAL, entry: `user#${u}` } }));
}

/** One random operation, built as shared/stores/roles.ts builds it. A lost race is just a cancelled transaction. */
async function operation(ddb: DynamoDBDocumentClient): Promise<void> {
  const transact = (TransactItems: TransactItems) => ddb.send(new TransactWriteCommand({ TransactItems }));
  const roles = async () =>
    (await partition(ddb, PORTAL)).filter((i) => String(i.entry).startsWith("role#")) as (Item & {
      roleId: string;
      name: string;
      version: number;
    })[];
  const holderChange = (roleId: string, delta: number) => ({
    Update: {
      TableName,
      Key: { portalId: PORTAL, entry: `role#${roleId}` },
      UpdateExpression: "ADD #h :d",
      ConditionExpression: "attribute_exists(#e)",
      ExpressionAttributeNames: { "#h": "holders", "#e": "entry" },
      ExpressionAttributeValues: { ":d": delta },
    },
  });
  // A role's claim on its name, given up only by the role that holds it.
  const nameRelease = (role: { roleId: string; name: string }) => ({
    Delete: {
      TableName,
      Key: { portalId: PORTAL, entry: `name#${nameKey(role.name)}` },
      ConditionExpression: "#id = :id",
      ExpressionAttributeNames: { "#id": "roleId" },
      ExpressionAttributeValues: { ":id": role.roleId },
    },
  });
  const kind = randomInt(10);
  if (kind < 2) {
    const roleId = randomUUID().slice(0, 8);
    const name = pick(NAMES);
    await transact([
      {
        Put: {
          TableName,
          Item: { portalId: PORTAL, entry: `name#${nameKey(name)}`, roleId },
          ConditionExpression: "attribute_not_exists(#e)",
          ExpressionAttributeNames: { "#e": "entry" },
        },
      },
      {
        Put: {
          TableName,
          Item: { portalId: PORTAL, entry: `role#${roleId}`, roleId, name, version: 0, holders: 0 },
          ConditionExpression: "attribute_not_exists(#e)",
          ExpressionAttributeNames: { "#e": "entry" },
        },
      },
    ]);
  } else if (kind < 4) {
    const list = await roles();
    if (list.length === 0) return;
    const role = pick(list);
    const name = pick(NAMES);
    if (nameKey(name) === nameKey(role.name)) return;
    await transact([
      {
        Update: {
          TableName,
          Key: { portalId: PORTAL, entry: `role#${role.roleId}` },
          UpdateExpression: "SET #n = :n, #v = :next",
          ConditionExpression: "#v = :v",
          ExpressionAttributeNames: { "#n": "name", "#v": "version" },
          ExpressionAttributeValues: { ":n": name, ":next": role.version + 1, ":v": role.version },
        },
      },
      {
        Put: {
          TableName,
          Item: { portalId: PORTAL, entry: `name#${nameKey(name)}`, roleId: role.roleId },
          ConditionExpression: "attribute_not_exists(#e)",
          ExpressionAttributeNames: { "#e": "entry" },
        },
      },
      nameRelease(role),
    ]);
  } else if (kind < 6) {
    const user = `user#${pick(USERS)}`;
    const { Item } = await ddb.send(
      new GetCommand({ TableName, Key: { portalId: PORTAL, entry: user }, ConsistentRead: true }),
    );
    const from = Item?.role as string | undefined;
    const list = await roles();
    const to = list.length && randomInt(4) > 0 ? pick(list).roleId : undefined;
    if (from === to) return;
    await transact([
      {
        Update: {
          TableName,
          Key: { portalId: PORTAL, entry: user },
          UpdateExpression: to ? "SET #r = :to" : "REMOVE #r",
          ConditionExpression: from ? "#r = :from" : "attribute_not_exists(#r)",
          ExpressionAttributeNames: { "#r": "role" },
          ...(to || from
            ? { ExpressionAttributeValues: { ...(to ? { ":to": to } : {}), ...(from ? { ":from": from } : {}) } }
            : {}),
        },
      },
      ...(to ? [holderChange(to, 1)] : []),
      ...(from ? [holderChange(from, -1)] : []),
    ]);
  } else if (kind < 7) {
    const list = await roles();
    if (list.length === 0) return;
    const role = pick(list);
    await transact([
      {
        Delete: {
          TableName,
          Key: { portalId: PORTAL, entry: `role#${role.roleId}` },
          ConditionExpression: "#v = :v AND (attribute_not_exists(#h) OR #h = :zero)",
          ExpressionAttributeNames: { "#v": "version", "#h": "holders" },
          ExpressionAttributeValues: { ":v": role.version, ":zero": 0 },
        },
      },
      nameRelease(role),
    ]);
  } else {
    // A transfer among 2–10 accounts: the longer the transaction, the wider the window a crash can split.
    const count = 2 + randomInt(ACCOUNTS - 1);
    const accounts = [...Array(ACCOUNTS).keys()].sort(() => Math.random() - 0.5).slice(0, count);
    const deltas = accounts.map(() => randomInt(-20, 21));
    deltas[0] = (deltas[0] as number) - deltas.reduce((a, b) => a + b, 0);
    await transact(
      accounts.map((a, i) => ({
        Update: {
          TableName,
          Key: { portalId: BANK, entry: `acct#${a}` },
          UpdateExpression: "SET n = n + :d",
          ConditionExpression: "attribute_exists(n)",
          ExpressionAttributeValues: { ":d": deltas[i] },
        },
      })),
    );
  }
}

it("leaves no transaction half-applied when the engine is killed mid-burst, cycle after cycle", async () => {
  const dataDir = newDataDir();
  const broken: string[] = [];
  let previous = new Set<string>();
  let committed = 0;
  let interrupted = 0;
  for (let cycle = 0; cycle <= CYCLES; cycle++) {
    const engine = await startEngine({ dataDir, env: HOOK });
    const ddb = client(engine);
    try {
      if (cycle === 0) await seed(ddb);
      // Said by a start that found the last kill had cut a transaction short.
      if (engine.lines.some((l) => l.includes("rolled back a transaction a crash interrupted"))) interrupted++;
      // Only what this kill broke: a broken invariant stays broken through later cycles.
      const now = new Set(await violations(ddb));
      for (const v of now) if (!previous.has(v)) broken.push(`after kill ${cycle}: ${v}`);
      previous = now;
      if (cycle === CYCLES) break;
      let running = true;
      const workers = Array.from({ length: WORKERS }, async () => {
        while (running) {
          try {
            await operation(ddb);
            committed++;
          } catch {
            // Cancelled (a lost race) or cut off by the kill.
            if (engine.child.exitCode !== null || engine.child.signalCode !== null) return;
          }
        }
      });
      await sleep(randomInt(150, 450));
      await engine.stop("SIGKILL");
      running = false;
      await Promise.all(workers);
    } finally {
      ddb.destroy();
      await engine.stop("SIGKILL");
    }
  }
  expect(broken).toEqual([]);
  // The workload really ran, and some kills really did split a transaction.
  expect(committed).toBeGreaterThan(CYCLES);
  expect(interrupted).toBeGreaterThan(0);
}, 180_000);
