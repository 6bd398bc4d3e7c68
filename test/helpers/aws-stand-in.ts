// The AWS endpoint the artifact test's functions reach (AWS_ENDPOINT_URL): every request is signed with the
// calling function's own credentials, as on Lambda, so the credential names the function and its role. Each
// DynamoDB, Secrets Manager, Step Functions and S3 request is turned into the IAM actions and resource ARNs
// AWS would authorize, checked against that role's statements from the template, answered with the
// service's own AccessDenied error when refused, and otherwise forwarded to the local engine's servers
// (dynalite behind the transaction proxy, the local Step Functions endpoint, s3rver). Secrets Manager is
// answered here: the local engine has none.
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, request, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { ACCOUNT, allows, type FunctionArtifact, REGION, type RequestContext } from "./artifact.ts";

type Json = Record<string, unknown>;

export interface Decision {
  /** The calling function's id (route or task). */
  readonly caller: string;
  readonly action: string;
  readonly resource: string;
  readonly allowed: boolean;
}

export interface Credentials {
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly sessionToken: string;
}

export interface StoredSecret {
  readonly arn: string;
  readonly value: string;
}

export interface StandInOptions {
  readonly functions: readonly FunctionArtifact[];
  readonly dynamodb: string;
  readonly stepFunctions: string;
  readonly s3: string;
  readonly events: string;
  readonly secrets: readonly StoredSecret[];
}

export interface AwsStandIn {
  readonly endpoint: string;
  /** Every authorization made, in order. */
  readonly decisions: Decision[];
  /** Requests whose credentials belong to no function, or whose service is not modelled. */
  readonly unknown: string[];
  /** The secrets held now: the stack's, and those the functions created (names, without their values). */
  secretNames(): string[];
  credentialsOf(fn: FunctionArtifact): Credentials;
  close(): Promise<void>;
}

interface Check {
  readonly action: string;
  readonly resource: string;
  readonly context?: RequestContext;
}

const tableArn = (name: string) =>
  name.startsWith("arn:") ? name : `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${name}`;

/** The actions and resources DynamoDB authorizes for one request (per item, for transactions). */
function dynamoChecks(operation: string, body: Json): Check[] {
  const each = (action: string, table: unknown) => ({
    action: `dynamodb:${action}`,
    resource: tableArn(String(table)),
  });
  switch (operation) {
    case "BatchGetItem":
    case "BatchWriteItem":
      return Object.keys((body.RequestItems as Json | undefined) ?? {}).map((t) => each(operation, t));
    case "TransactGetItems":
      return ((body.TransactItems as { Get: Json }[] | undefined) ?? []).map((i) => each("GetItem", i.Get.TableName));
    case "TransactWriteItems": {
      const actions: Record<string, string> = {
        Put: "PutItem",
        Update: "UpdateItem",
        Delete: "DeleteItem",
        ConditionCheck: "ConditionCheckItem",
      };
      return ((body.TransactItems as Json[] | undefined) ?? []).flatMap((item) =>
        Object.entries(item).map(([kind, op]) => each(actions[kind] ?? kind, (op as Json).TableName)),
      );
    }
    case "Query":
    case "Scan": {
      const base = tableArn(String(body.TableName));
      return [{ action: `dynamodb:${operation}`, resource: body.IndexName ? `${base}/index/${body.IndexName}` : base }];
    }
    default:
      return [
        body.TableName
          ? each(operation, body.TableName)
          : { action: `dynamodb:${operation}`, resource: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/*` },
      ];
  }
}

/** S3's action for a path-style request (`/<bucket>[/<key>]`), as the S3 authorization reference lists it. */
function s3Check(method: string, url: URL): Check {
  const [, bucket = "", ...rest] = url.pathname.split("/");
  const key = rest.map(decodeURIComponent).join("/");
  const bucketArn = `arn:aws:s3:::${decodeURIComponent(bucket)}`;
  if (key === "") {
    if (url.searchParams.has("location")) return { action: "s3:GetBucketLocation", resource: bucketArn };
    if (method === "PUT") return { action: "s3:CreateBucket", resource: bucketArn };
    if (method === "GET" || method === "HEAD") {
      const prefix = url.searchParams.get("prefix");
      return { action: "s3:ListBucket", resource: bucketArn, ...(prefix !== null ? { context: { prefix } } : {}) };
    }
    return { action: `s3:${method}Bucket`, resource: bucketArn };
  }
  const object = `${bucketArn}/${key}`;
  // A multipart upload: creating, completing and sending its parts are s3:PutObject; stopping it is its own action.
  if (method === "POST" && (url.searchParams.has("uploads") || url.searchParams.has("uploadId")))
    return { action: "s3:PutObject", resource: object };
  if (method === "DELETE" && url.searchParams.has("uploadId"))
    return { action: "s3:AbortMultipartUpload", resource: object };
  const actions: Record<string, string> = {
    GET: "s3:GetObject",
    HEAD: "s3:GetObject",
    PUT: "s3:PutObject",
    DELETE: "s3:DeleteObject",
  };
  return { action: actions[method] ?? `s3:${method}Object`, resource: object };
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of req as AsyncIterable<Buffer>) chunks.push(c);
  return Buffer.concat(chunks);
}

function forward(upstream: string, req: IncomingMessage, body: Buffer, res: ServerResponse): Promise<void> {
  const u = new URL(upstream);
  return new Promise((resolve, reject) => {
    const out = request(
      { host: u.hostname, port: u.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on("end", resolve);
        answer.on("error", reject);
      },
    );
    out.on("error", reject);
    out.end(body);
  });
}

export async function startAwsStandIn(options: StandInOptions): Promise<AwsStandIn> {
  const decisions: Decision[] = [];
  const unknown: string[] = [];
  const byKey = new Map<string, FunctionArtifact>();
  const credentials = new Map<string, Credentials>();
  for (const fn of options.functions) {
    // Each function's role session: an access key id that names it, as a real session's names its role.
    const accessKeyId = `ASIA${createHash("sha256").update(fn.arn).digest("hex").slice(0, 16).toUpperCase()}`;
    byKey.set(accessKeyId, fn);
    credentials.set(fn.arn, {
      accessKeyId,
      secretAccessKey: randomBytes(30).toString("base64"),
      sessionToken: randomBytes(60).toString("base64"),
    });
  }

  const authorize = (fn: FunctionArtifact, checks: readonly Check[]): Check | undefined => {
    let denied: Check | undefined;
    for (const c of checks) {
      const allowed = allows(fn.statements, c.action, c.resource, c.context);
      decisions.push({ caller: fn.id, action: c.action, resource: c.resource, allowed });
      if (!allowed) denied ??= c;
    }
    return denied;
  };
  /** IAM's own wording, which each service puts in its AccessDenied message. */
  const refusal = (fn: FunctionArtifact, c: Check) =>
    `User: arn:aws:sts::${ACCOUNT}:assumed-role/${fn.roleName}/${fn.name} is not authorized to perform: ` +
    `${c.action} on resource: ${c.resource} because no identity-based policy allows the ${c.action} action`;
  const json = (res: ServerResponse, status: number, type: string, body: Json) => {
    const text = JSON.stringify(body);
    res.writeHead(status, {
      "content-type": type,
      "content-length": Buffer.byteLength(text),
      "x-amzn-requestid": randomUUID(),
    });
    res.end(text);
  };

  // The stack's own secrets, and those the functions create (data stores' passwords).
  const secrets: { arn: string; value: string }[] = options.secrets.map((x) => ({ ...x }));
  const findSecret = (id: string) =>
    secrets.find((s) => s.arn === id || s.arn.split(":secret:")[1]?.replace(/-[A-Za-z0-9]{6}$/, "") === id);

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body = await bodyOf(req);
    const auth = String(req.headers.authorization ?? "");
    const scope = /Credential=([^/,\s]+)\/\d{8}\/([^/]+)\/([^/]+)\/aws4_request/.exec(auth);
    const fn = scope?.[1] ? byKey.get(scope[1]) : undefined;
    if (!scope || !fn) {
      unknown.push(`${req.method} ${req.url} (${auth ? "unknown credentials" : "unsigned"})`);
      return json(res, 403, "application/json", {
        __type: "UnrecognizedClientException",
        message: "The security token included in the request is invalid.",
      });
    }
    const service = scope[3];
    const target = String(req.headers["x-amz-target"] ?? "");
    const input = () => (body.length ? (JSON.parse(body.toString("utf8")) as Json) : {});

    if (service === "dynamodb") {
      const operation = target.replace(/^DynamoDB_20120810\./, "");
      const denied = authorize(fn, dynamoChecks(operation, input()));
      if (denied) {
        return json(res, 400, "application/x-amz-json-1.0", {
          __type: "com.amazon.coral.service#AccessDeniedException",
          Message: refusal(fn, denied),
        });
      }
      return forward(options.dynamodb, req, body, res);
    }

    if (service === "secretsmanager") {
      const operation = target.replace(/^secretsmanager\./, "");
      const given = input();
      // CreateSecret names the secret; the others give its id (a name or an ARN). A new secret's ARN ends with
      // six random characters, as Secrets Manager makes them.
      const id = String((operation === "CreateSecret" ? given.Name : given.SecretId) ?? "");
      const secret = findSecret(id);
      const suffix = operation === "CreateSecret" ? `-${randomUUID().replace(/-/g, "").slice(0, 6)}` : "";
      const resource =
        secret?.arn ??
        (id.startsWith("arn:") ? id : `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${id}${suffix}`);
      const denied = authorize(fn, [{ action: `secretsmanager:${operation}`, resource }]);
      const type = "application/x-amz-json-1.1";
      if (denied) return json(res, 400, type, { __type: "AccessDeniedException", Message: refusal(fn, denied) });
      const notFound = () =>
        json(res, 400, type, {
          __type: "ResourceNotFoundException",
          Message: "Secrets Manager can't find the specified secret.",
        });
      if (operation === "CreateSecret") {
        if (secret)
          return json(res, 400, type, { __type: "ResourceExistsException", Message: "The secret already exists." });
        secrets.push({ arn: resource, value: String(given.SecretString ?? "") });
        return json(res, 200, type, { ARN: resource, Name: id, VersionId: randomUUID() });
      }
      if (operation === "PutSecretValue") {
        if (!secret) return notFound();
        secret.value = String(given.SecretString ?? "");
        return json(res, 200, type, { ARN: secret.arn, VersionId: randomUUID(), VersionStages: ["AWSCURRENT"] });
      }
      if (operation === "DeleteSecret") {
        if (!secret) return notFound();
        secrets.splice(secrets.indexOf(secret), 1);
        return json(res, 200, type, { ARN: secret.arn, DeletionDate: Math.floor(Date.now() / 1000) });
      }
      if (operation !== "GetSecretValue") {
        return json(res, 400, type, { __type: "InvalidRequestException", Message: `${operation} is not served here` });
      }
      if (!secret) return notFound();
      return json(res, 200, type, {
        ARN: secret.arn,
        Name: secret.arn.split(":secret:")[1]?.replace(/-[A-Za-z0-9]{6}$/, ""),
        VersionId: "00000000-0000-4000-8000-000000000001",
        SecretString: secret.value,
        VersionStages: ["AWSCURRENT"],
        CreatedDate: 1_700_000_000,
      });
    }

    if (service === "states") {
      const operation = target.replace(/^AWSStepFunctions\./, "");
      const body_ = input();
      const resource = String(body_.stateMachineArn ?? body_.executionArn ?? "*");
      const denied = authorize(fn, [{ action: `states:${operation}`, resource }]);
      if (denied) {
        return json(res, 400, "application/x-amz-json-1.0", {
          __type: "com.amazonaws.swf.base.model#AccessDeniedException",
          message: refusal(fn, denied),
        });
      }
      return forward(options.stepFunctions, req, body, res);
    }

    if (service === "events") {
      const operation = target.replace(/^AWSEvents\./, "");
      const entries = (input().Entries ?? []) as { EventBusName?: string }[];
      const busArn = (name = "default") =>
        name.startsWith("arn:") ? name : `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${name}`;
      const denied = authorize(
        fn,
        entries.map((e) => ({ action: `events:${operation}`, resource: busArn(e.EventBusName) })),
      );
      if (denied) {
        return json(res, 400, "application/x-amz-json-1.1", {
          __type: "AccessDeniedException",
          message: refusal(fn, denied),
        });
      }
      return forward(options.events, req, body, res);
    }

    if (service === "s3") {
      const denied = authorize(fn, [s3Check(req.method ?? "GET", new URL(req.url ?? "/", "http://s3"))]);
      if (denied) {
        const xml =
          `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>` +
          `<Message>${refusal(fn, denied)}</Message><RequestId>${randomUUID()}</RequestId></Error>`;
        res.writeHead(403, { "content-type": "application/xml", "content-length": Buffer.byteLength(xml) });
        res.end(req.method === "HEAD" ? undefined : xml);
        return;
      }
      return forward(options.s3, req, body, res);
    }

    // A service nothing here models: recorded, and refused as AWS refuses an action no policy allows.
    const action = `${service}:${target.split(".").pop() || req.method}`;
    decisions.push({ caller: fn.id, action, resource: String(req.url), allowed: false });
    unknown.push(`${fn.id}: ${action}`);
    return json(res, 400, "application/json", {
      __type: "AccessDeniedException",
      message: `${action} is not modelled`,
    });
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      unknown.push(`stand-in fault: ${String(err)}`);
      if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" });
      res.end(JSON.stringify({ __type: "InternalFailure", message: String(err) }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    decisions,
    unknown,
    secretNames: () => secrets.map((x) => x.arn.split(":secret:")[1]?.replace(/-[A-Za-z0-9]{6}$/, "") ?? ""),
    credentialsOf: (fn) => {
      const c = credentials.get(fn.arn);
      if (!c) throw new Error(`no credentials for ${fn.id}`);
      return c;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
