// The synthesized cloud assembly, read the way CloudFormation and IAM would read it: every resource gets a
// physical name and ARN (tables get the local engine's names), intrinsics are resolved, and each function is
// described by what the template gives it — its bundle, handler, environment, timeout and its role's policy
// statements, which `allows` evaluates as IAM does for identity policies (explicit deny, then allow).
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { localTableName } from "#infra/local/dynamo.ts";
import { invocationFunction, REDELIVERY, ROUTES, TABLES, WORKFLOW } from "#shared/system.ts";

export const ACCOUNT = "123456789012";
export const REGION = "us-east-1";

type Json = Record<string, unknown>;
interface Resource {
  readonly Type: string;
  readonly Properties?: Json;
}

export interface Statement {
  readonly effect: "Allow" | "Deny";
  readonly actions: readonly string[];
  readonly resources: readonly string[];
  /** A `StringLike` condition on `s3:prefix` (a listing's prefix), the one condition the stack writes. */
  readonly prefixLike?: readonly string[];
}

/** What a request says besides its action and resource that a condition can test. */
export interface RequestContext {
  /** A ListBucket's `prefix` (absent: none given, which no `s3:prefix` condition matches). */
  readonly prefix?: string;
}

export interface FunctionArtifact {
  /** The route or task id the function was made for (its logical id when none matches). */
  readonly id: string;
  readonly logicalId: string;
  readonly name: string;
  readonly arn: string;
  readonly roleArn: string;
  readonly roleName: string;
  /** The folder the assets manifest uploads as the function's code. */
  readonly codeDir: string;
  readonly handler: string;
  readonly runtime: string;
  readonly timeoutSeconds: number;
  readonly memorySize: number;
  readonly logGroup: string;
  /** Environment.Variables with every intrinsic resolved, nothing added. */
  readonly environment: Readonly<Record<string, string>>;
  readonly statements: readonly Statement[];
}

const pascal = (id: string) => id.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

const HERE = dirname(fileURLToPath(import.meta.url));
const SYNTH = join(HERE, "synth-artifact.ts");

/** Synthesizes the stack with real bundling (CDK runs the local esbuild for every function). */
export async function synthesize(outdir: string, stackName: string, buckets: readonly string[]): Promise<Assembly> {
  try {
    await promisify(execFile)(process.execPath, [SYNTH, outdir, stackName, buckets.join(",")], {
      cwd: join(HERE, "..", ".."),
      maxBuffer: 64 * 1024 * 1024,
    });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`synth failed: ${e.message}\n${e.stderr ?? ""}`);
  }
  return new Assembly(outdir, stackName);
}

type AssetFiles = Readonly<Record<string, { source: { path: string; packaging: string } }>>;

interface Physical {
  readonly ref: string;
  readonly attrs: Readonly<Record<string, string>>;
}

export class Assembly {
  readonly dir: string;
  readonly stackName: string;
  readonly resources: Readonly<Record<string, Resource>>;
  readonly #physical = new Map<string, Physical>();
  readonly #assets: AssetFiles;

  constructor(dir: string, stackName: string) {
    this.dir = dir;
    this.stackName = stackName;
    const template = JSON.parse(readFileSync(join(dir, `${stackName}.template.json`), "utf8")) as {
      Resources: Record<string, Resource>;
    };
    this.#assets = (
      JSON.parse(readFileSync(join(dir, `${stackName}.assets.json`), "utf8")) as { files: AssetFiles }
    ).files;
    this.resources = { ...template.Resources, ...this.#nested(template.Resources) };
    for (const [id, r] of Object.entries(this.resources)) this.#physical.set(id, this.#name(id, r));
  }

  /**
   * The nested stacks' resources (the routes' stack), read as the parent's: each `Ref` to a parameter replaced by
   * what the parent passes it (a function's ARN, the API's id), which then resolves in the parent. Only stacks
   * whose parameters are all the parent's own resources (not another nested stack's outputs) are read so.
   */
  #nested(parent: Readonly<Record<string, Resource>>): Record<string, Resource> {
    const out: Record<string, Resource> = {};
    for (const r of Object.values(parent)) {
      if (r.Type !== "AWS::CloudFormation::Stack") continue;
      // The template's URL ends in its asset's hash, which the assets manifest maps to the file.
      const hash = /([0-9a-f]{64})\.json"/.exec(JSON.stringify(r.Properties?.TemplateURL))?.[1];
      const path = hash ? this.#assets[hash]?.source.path : undefined;
      const parameters = (r.Properties?.Parameters ?? {}) as Json;
      if (path === undefined || JSON.stringify(parameters).includes('"Outputs.')) continue;
      const nested = JSON.parse(readFileSync(join(this.dir, path), "utf8")) as { Resources: Record<string, Resource> };
      const substitute = (value: unknown): unknown => {
        if (Array.isArray(value)) return value.map(substitute);
        if (value === null || typeof value !== "object") return value;
        const obj = value as Json;
        if (Object.keys(obj).length === 1 && typeof obj.Ref === "string" && Object.hasOwn(parameters, obj.Ref))
          return parameters[obj.Ref];
        return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, substitute(v)]));
      };
      for (const [id, resource] of Object.entries(nested.Resources)) {
        if (Object.hasOwn(parent, id) || Object.hasOwn(out, id)) throw new Error(`${id} is in two stacks`);
        out[id] = substitute(resource) as Resource;
      }
    }
    return out;
  }

  /** What CloudFormation would name each resource; tables get the names the local store uses. */
  #name(id: string, r: Resource): Physical {
    const name = `${this.stackName}-${id}`;
    switch (r.Type) {
      case "AWS::DynamoDB::GlobalTable": {
        const spec = TABLES.find((t) => new RegExp(`^${pascal(t.name)}Table[0-9A-F]{8}$`).test(id));
        const hash = (r.Properties?.KeySchema as { AttributeName: string; KeyType: string }[] | undefined)?.find(
          (k) => k.KeyType === "HASH",
        );
        if (!spec || hash?.AttributeName !== spec.partitionKey) throw new Error(`no declared table for ${id}`);
        const table = localTableName(spec.name);
        return { ref: table, attrs: { Arn: `arn:aws:dynamodb:${REGION}:${ACCOUNT}:table/${table}` } };
      }
      case "AWS::SecretsManager::Secret": {
        // Ref on a secret is its ARN, which ends in six random characters.
        const arn = `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${name}-AbC123`;
        return { ref: arn, attrs: { Id: arn } };
      }
      case "AWS::StepFunctions::StateMachine": {
        const arn = `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${name}`;
        return { ref: arn, attrs: { Arn: arn, Name: name } };
      }
      case "AWS::Lambda::Function":
        return { ref: name, attrs: { Arn: `arn:aws:lambda:${REGION}:${ACCOUNT}:function:${name}` } };
      case "AWS::IAM::Role":
        return { ref: name, attrs: { Arn: `arn:aws:iam::${ACCOUNT}:role/${name}` } };
      case "AWS::ApiGatewayV2::Api":
        return {
          ref: name,
          attrs: { ApiEndpoint: `https://${name.toLowerCase()}.execute-api.${REGION}.amazonaws.com` },
        };
      case "AWS::Events::Rule":
        return { ref: name, attrs: { Arn: `arn:aws:events:${REGION}:${ACCOUNT}:rule/${name}` } };
      case "AWS::Events::EventBus": {
        const bus = String(r.Properties?.Name ?? name);
        return { ref: bus, attrs: { Arn: `arn:aws:events:${REGION}:${ACCOUNT}:event-bus/${bus}`, Name: bus } };
      }
      case "AWS::CloudFront::Distribution":
        return { ref: name, attrs: { DomainName: `${name.toLowerCase().slice(0, 14)}.cloudfront.net` } };
      case "AWS::S3::Bucket": {
        // Bucket names are lowercase and global: a name of this stack's, as CloudFormation would make one.
        const bucket = `${this.stackName}-${id}`.toLowerCase().slice(0, 63);
        return { ref: bucket, attrs: { Arn: `arn:aws:s3:::${bucket}`, DomainName: `${bucket}.s3.amazonaws.com` } };
      }
      case "AWS::Logs::LogGroup":
        return { ref: name, attrs: { Arn: `arn:aws:logs:${REGION}:${ACCOUNT}:log-group:${name}:*` } };
      default:
        return { ref: name, attrs: {} };
    }
  }

  resource(id: string): Resource {
    const r = this.resources[id];
    if (!r) throw new Error(`no resource ${id} in the template`);
    return r;
  }

  ofType(type: string): [string, Resource][] {
    return Object.entries(this.resources).filter(([, r]) => r.Type === type);
  }

  ref(id: string): string {
    const p = this.#physical.get(id);
    if (!p) throw new Error(`Ref to ${id}, which the template does not hold`);
    return p.ref;
  }

  attr(id: string, name: string): string {
    const value = this.#physical.get(id)?.attrs[name];
    if (value === undefined) throw new Error(`Fn::GetAtt ${id}.${name} is not modelled here`);
    return value;
  }

  /** CloudFormation's intrinsics, as far as the template uses them; anything else is refused loudly. */
  resolve(value: unknown): unknown {
    if (Array.isArray(value)) return value.map((v) => this.resolve(v));
    if (value === null || typeof value !== "object") return value;
    const obj = value as Json;
    const [key] = Object.keys(obj);
    if (Object.keys(obj).length === 1 && key && (key === "Ref" || key.startsWith("Fn::"))) {
      const arg = obj[key];
      switch (key) {
        case "Ref": {
          const pseudo: Record<string, string> = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::StackName": this.stackName,
          };
          return pseudo[String(arg)] ?? this.ref(String(arg));
        }
        case "Fn::GetAtt": {
          const [id, name] = Array.isArray(arg) ? (arg as string[]) : String(arg).split(".");
          return this.attr(String(id), String(name));
        }
        case "Fn::Join": {
          const [sep, parts] = arg as [string, unknown[]];
          return (this.resolve(parts) as unknown[]).map(String).join(sep);
        }
        default:
          throw new Error(`${key} is not modelled here`);
      }
    }
    return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, this.resolve(v)]));
  }

  str(value: unknown): string {
    const out = this.resolve(value);
    if (typeof out !== "string") throw new Error(`expected a string, got ${JSON.stringify(out)}`);
    return out;
  }

  /** Every statement of the identity policies attached to a role (inline and AWS::IAM::Policy). */
  statementsOf(roleId: string): Statement[] {
    const role = this.resource(roleId);
    if (role.Properties?.ManagedPolicyArns) throw new Error(`${roleId}: managed policies are not modelled here`);
    const documents = [
      ...((role.Properties?.Policies as { PolicyDocument: unknown }[] | undefined) ?? []).map((p) => p.PolicyDocument),
      // A role's inline policy, and the managed policies CDK moves statements to past IAM's 10 KB inline limit.
      ...[...this.ofType("AWS::IAM::Policy"), ...this.ofType("AWS::IAM::ManagedPolicy")]
        .filter(([, p]) => ((this.resolve(p.Properties?.Roles) ?? []) as string[]).includes(this.ref(roleId)))
        .map(([, p]) => p.Properties?.PolicyDocument),
    ];
    return documents.flatMap((doc) => {
      const raw = this.resolve((doc as { Statement: unknown }).Statement);
      return (Array.isArray(raw) ? raw : [raw]).map((s) => toStatement(s as Json));
    });
  }

  functions(): FunctionArtifact[] {
    const ids = [
      ...ROUTES.map((r) => r.id),
      ...WORKFLOW.tasks.map((t) => t.id),
      invocationFunction().id,
      REDELIVERY.id,
    ];
    return this.ofType("AWS::Lambda::Function").map(([logicalId, r]) => {
      const p = r.Properties ?? {};
      const code = p.Code as { S3Key?: unknown };
      const hash = String(code.S3Key).replace(/\.zip$/, "");
      const asset = this.#assets[hash];
      if (!asset || asset.source.packaging !== "zip") throw new Error(`${logicalId}: no zip asset ${hash}`);
      const role = p.Role as { "Fn::GetAtt": [string, string] };
      const roleId = role["Fn::GetAtt"][0];
      const env = this.resolve((p.Environment as { Variables?: unknown } | undefined)?.Variables ?? {}) as Record<
        string,
        unknown
      >;
      for (const [k, v] of Object.entries(env)) if (typeof v !== "string") throw new Error(`${logicalId}: ${k}`);
      const logging = p.LoggingConfig as { LogGroup?: unknown } | undefined;
      return {
        id: ids.find((id) => new RegExp(`^${pascal(id)}Function[0-9A-F]{8}$`).test(logicalId)) ?? logicalId,
        logicalId,
        name: this.ref(logicalId),
        arn: this.attr(logicalId, "Arn"),
        roleArn: this.attr(roleId, "Arn"),
        roleName: this.ref(roleId),
        codeDir: join(this.dir, asset.source.path),
        handler: String(p.Handler),
        runtime: String(p.Runtime),
        timeoutSeconds: Number(p.Timeout ?? 3),
        memorySize: Number(p.MemorySize ?? 128),
        logGroup: logging?.LogGroup ? this.str(logging.LogGroup) : `/aws/lambda/${this.ref(logicalId)}`,
        environment: env as Record<string, string>,
        statements: this.statementsOf(roleId),
      };
    });
  }
}

function toStatement(s: Json): Statement {
  // Other conditions, NotAction and NotResource change what a statement means: refuse rather than misread them.
  for (const unsupported of ["NotAction", "NotResource", "Principal", "NotPrincipal"]) {
    if (unsupported in s) throw new Error(`policy statement with ${unsupported} is not modelled here`);
  }
  const list = (v: unknown) => (Array.isArray(v) ? v.map(String) : [String(v)]);
  if (s.Effect !== "Allow" && s.Effect !== "Deny") throw new Error(`bad Effect ${String(s.Effect)}`);
  const statement = { effect: s.Effect, actions: list(s.Action), resources: list(s.Resource) } as const;
  if (!("Condition" in s)) return statement;
  const condition = s.Condition as Record<string, Record<string, unknown>>;
  const like = condition.StringLike;
  if (Object.keys(condition).length !== 1 || !like || Object.keys(like).join() !== "s3:prefix")
    throw new Error(`policy condition ${JSON.stringify(condition)} is not modelled here`);
  return { ...statement, prefixLike: list(like["s3:prefix"]) };
}

/** IAM's wildcards: `*` any run of characters (`/` and `:` included), `?` one character. */
function wildcard(pattern: string, value: string, ignoreCase: boolean): boolean {
  const source = pattern
    .split("")
    .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${source}$`, ignoreCase ? "is" : "s").test(value);
}

/** An identity policy's answer: an explicit Deny wins, then any Allow, else the implicit deny. */
export function allows(
  statements: readonly Statement[],
  action: string,
  resource: string,
  context: RequestContext = {},
): boolean {
  // A condition on a key the request lacks does not hold (StringLike with no s3:prefix: no match).
  const holds = (s: Statement) =>
    !s.prefixLike ||
    (context.prefix !== undefined && s.prefixLike.some((p) => wildcard(p, context.prefix as string, false)));
  const matches = (s: Statement) =>
    s.actions.some((a) => wildcard(a, action, true)) &&
    s.resources.some((r) => wildcard(r, resource, false)) &&
    holds(s);
  if (statements.some((s) => s.effect === "Deny" && matches(s))) return false;
  return statements.some((s) => s.effect === "Allow" && matches(s));
}

/** ArnLike, as a resource policy's `AWS:SourceArn` condition compares: wildcards within each of six parts. */
export function arnLike(pattern: string, arn: string): boolean {
  const p = pattern.split(":");
  const a = arn.split(":");
  if (p.length < 6 || a.length < 6) return false;
  const head = (parts: string[]) => [...parts.slice(0, 5), parts.slice(5).join(":")];
  const [hp, ha] = [head(p), head(a)];
  return hp.every((part, i) => wildcard(part, ha[i] ?? "", false));
}
