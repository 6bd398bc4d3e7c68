// The AWS engine: iterates the system description, so every declared route and table exists here
// exactly as the local engine serves it.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  ArnFormat,
  type CfnElement,
  CfnOutput,
  Duration,
  RemovalPolicy,
  Size,
  Stack,
  type StackProps,
  Token,
  Validations,
} from "aws-cdk-lib";
import { AccessLogFormat } from "aws-cdk-lib/aws-apigateway";
import { HttpApi, HttpStage, LogGroupLogDestination } from "aws-cdk-lib/aws-apigatewayv2";
import {
  CfnVPCEndpoint,
  GatewayVpcEndpointAwsService,
  InterfaceVpcEndpoint,
  InterfaceVpcEndpointAwsService,
  type ISecurityGroup,
  type ISubnet,
  type IVpc,
  SecurityGroup,
  Subnet,
  Vpc,
} from "aws-cdk-lib/aws-ec2";
import { PolicyStatement, Role, ServicePrincipal } from "aws-cdk-lib/aws-iam";
import { DatabaseInstance, DatabaseInstanceEngine, DatabaseProxy, ProxyTarget } from "aws-cdk-lib/aws-rds";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { EventBus, Rule, Schedule } from "aws-cdk-lib/aws-events";
import { LambdaFunction as LambdaTarget } from "aws-cdk-lib/aws-events-targets";
import { Architecture, Runtime, Tracing } from "aws-cdk-lib/aws-lambda";
import { type ICommandHooks, NodejsFunction, OutputFormat, SourceMapMode } from "aws-cdk-lib/aws-lambda-nodejs";
import { BUNDLE } from "./bundling.ts";
import { LogGroup, RetentionDays } from "aws-cdk-lib/aws-logs";
import { BlockPublicAccess, Bucket, BucketEncryption } from "aws-cdk-lib/aws-s3";
import { DefinitionBody, LogLevel, StateMachine, StateMachineType } from "aws-cdk-lib/aws-stepfunctions";
import type { Construct } from "constructs";
import {
  type Access,
  EVENTS,
  type RouteSpec,
  invocationFunction,
  REDELIVERY,
  ROUTES,
  type SecretName,
  TABLES,
  type TableName,
  type TaskSpec,
  taskVariable,
  WORKFLOW,
} from "#shared/system.ts";
import { VIEWER_ASSETS, VIEWER_ASSETS_FOLDER } from "#shared/viewer/assets.ts";
import { MapgateCdn } from "./cdn.ts";
import { MapgateSecret, MapgateTable } from "./constructs.ts";
import { Monitoring, type Thresholds } from "./monitoring.ts";
import { MapgateRoutes } from "./api.ts";
import { Hosting, HOSTING_DATABASE, HOSTING_USER } from "./hosting.ts";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

export interface MapgateStackProps extends StackProps {
  /** RETAIN (default) keeps tables and logs when the stack is deleted; DESTROY is for throwaway stacks. */
  readonly removalPolicy?: RemovalPolicy;
  /** The public HTTPS origin when a custom domain fronts the API (absolute URLs are built from it). */
  readonly publicOrigin?: string;
  /**
   * The S3 buckets cloud data stores may live in. Functions that read data stores' content get read access to
   * these buckets only; registering a cloud store in another bucket is refused by `npm run admin`.
   */
  readonly cloudStoreBuckets?: readonly string[];
  /**
   * The temporary storage (MB) of the functions that read data stores: a cloud store's GeoPackage is copied
   * there once per version to be queried, so it bounds the largest one served (512–10240; 2048 by default).
   */
  readonly ephemeralStorageMb?: number;
  /** The tunables (`SIGNIN_*`, `OAUTH_*`, `SOAP_*`, `MAX_BODY_BYTES`; docs/local-engine.md), set on every function. */
  readonly tunables?: Readonly<Record<string, string>>;
  /**
   * The VPC of the databases data stores connect to: the functions that connect to them (and read data stores'
   * content) run in its subnets with its security group, and reach AWS services through the endpoints made
   * here. Without it those functions run outside any VPC and databases must be reachable from the internet.
   */
  readonly databaseVpc?: DatabaseVpc;
  /**
   * An RDS Proxy in front of one PostgreSQL instance of that VPC, bounding the connections of every function
   * together (each warm function keeps up to 4 per data store): data stores then name the proxy's endpoint
   * (the `DatabaseProxyEndpoint` output) as their host.
   */
  readonly databaseProxy?: DatabaseProxySpec;
  /**
   * Hosted layers' data in a PostgreSQL + PostGIS database the stack makes (docs/aws.md, "Hosting on Aurora"): an
   * Aurora Serverless v2 cluster that pauses at 0 capacity, behind RDS Proxy, in the databases' VPC (give
   * `databaseVpc` too), in a nested stack. The functions that keep and serve hosted data run in that VPC. Without it
   * hosted layers are GeoPackages in the item-files bucket.
   */
  readonly hosting?: { readonly maxCapacity?: number };
  /** Database hosts at loopback or link-local addresses (refused by default: they are the functions' own). */
  readonly allowLocalDatabaseHosts?: boolean;
  /** Database connections without TLS (refused by default: `sslmode=disable` refused, `prefer` made `require`). */
  readonly databaseTlsOptional?: boolean;
  /** A CloudFront distribution in front of the API (true by default); public content is cached there. */
  readonly cdn?: boolean;
  /**
   * The API's routes (true by default). A stack deployed while its routes were in the parent is upgraded in two
   * deploys, the first with `routes: false`: API Gateway refuses a route key the API already has, and CloudFormation
   * makes the nested stack's routes before it removes the parent's.
   */
  readonly routes?: boolean;
  /** Alarm thresholds other than the defaults (infra/aws/monitoring.ts). */
  readonly alarmThresholds?: Partial<Thresholds>;
  /** An email address subscribed to the alarm topic. */
  readonly alarmEmail?: string;
}

export interface DatabaseVpc {
  readonly vpcId: string;
  /** Private subnets (one per availability zone the databases are in, two at least for Lambda's availability). */
  readonly subnetIds: readonly string[];
  /** The functions' and the endpoints' group: it must reach the databases, and itself on 443 (the endpoints). */
  readonly securityGroupId: string;
  /** The subnets' route tables, for the DynamoDB and S3 gateway endpoints (free). */
  readonly routeTableIds: readonly string[];
  /**
   * Whether to make the endpoints the functions need (true by default): gateway endpoints for DynamoDB and S3,
   * interface endpoints for Secrets Manager, Step Functions and EventBridge. False when the VPC already has them
   * or a NAT gateway.
   */
  readonly endpoints?: boolean;
}

export interface DatabaseProxySpec {
  /** The RDS instance's identifier, endpoint address and port. */
  readonly instanceIdentifier: string;
  readonly endpoint: string;
  readonly port: number;
  /**
   * The proxy's own login to the database: a Secrets Manager secret (`{"username","password"}`) of the account,
   * which the proxy alone reads (not a data store's secret).
   */
  readonly secretArn: string;
  /** The share of the database's max_connections the proxy may use (1–100; 50 unless given). */
  readonly maxConnectionsPercent?: number;
}

/** The AWS services the functions in the databases' VPC call besides DynamoDB and S3. */
export const VPC_INTERFACE_ENDPOINTS = ["SECRETS_MANAGER", "STEP_FUNCTIONS", "EVENTBRIDGE"] as const;

/** Every function's memory (and so its CPU share): the cost model of `npm run bench` prices with it. */
export const FUNCTION_MEMORY_MB = 1024;

/**
 * The map viewer's files (maplibre-gl's CSP build and the viewer's own script and styles), copied beside the
 * bundle of the function that serves them after esbuild ran: read from disk there, never bundled as code.
 */
const viewerAssetCommands = (inputDir: string, outputDir: string): string[] => [
  `mkdir -p "${outputDir}/${VIEWER_ASSETS_FOLDER}"`,
  ...Object.entries(VIEWER_ASSETS).map(
    ([name, { source }]) => `cp "${inputDir}/${source}" "${outputDir}/${VIEWER_ASSETS_FOLDER}/${name}"`,
  ),
];

/**
 * After NodejsFunction's esbuild run: every function's bundle is rebuilt as an entry and chunks loaded on first use
 * (infra/aws/bundling.ts, same options), then the viewer's files are copied beside it when the function serves them.
 */
const afterBundlingHooks = (entryFile: string, viewerAssets: boolean): ICommandHooks => ({
  beforeBundling: () => [],
  beforeInstall: () => [],
  afterBundling: (inputDir, outputDir) => [
    [process.execPath, join(ROOT, "infra", "aws", "split-bundle.ts"), entryFile, outputDir]
      .map((arg) => JSON.stringify(arg))
      .join(" "),
    ...(viewerAssets ? viewerAssetCommands(inputDir, outputDir) : []),
  ],
});

const pascal = (id: string) => id.replace(/(^|-)(\w)/g, (_m, _d, c: string) => c.toUpperCase());

export class MapgateStack extends Stack {
  readonly api: HttpApi;
  /** The routes' nested stack; absent when `routes` is false (the step of an upgrade: docs/aws.md). */
  readonly routes: MapgateRoutes | undefined;
  readonly stateMachine: StateMachine;
  readonly cdn: MapgateCdn | undefined;
  readonly monitoring: Monitoring;

  constructor(scope: Construct, id: string, props: MapgateStackProps = {}) {
    super(scope, id, props);
    const removalPolicy = props.removalPolicy ?? RemovalPolicy.RETAIN;

    const tables = new Map<string, MapgateTable>();
    for (const spec of TABLES) {
      const table = new MapgateTable(this, `${pascal(spec.name)}Table`, spec, removalPolicy);
      tables.set(spec.name, table);
      new CfnOutput(this, `Table${pascal(spec.name)}`, { value: table.table.tableName });
    }
    const secrets = new Map<SecretName, MapgateSecret>([
      ["tokenKey", new MapgateSecret(this, "TokenKey", "tokenKey", removalPolicy)],
    ]);
    Validations.of(secrets.get("tokenKey")?.secret ?? this).acknowledge({
      id: "AwsSolutions-SMG4",
      reason:
        "The token key is rotated by an operator adding a new key id; an automatic rotation would invalidate every issued token at once.",
    });
    new CfnOutput(this, "TokenKeySecretArn", { value: secrets.get("tokenKey")?.secret.secretArn ?? "" });

    const accessLogs = new LogGroup(this, "ApiAccessLogs", { retention: RetentionDays.ONE_MONTH, removalPolicy });
    this.api = new HttpApi(this, "Api", { apiName: `${id}-api`, createDefaultStage: false });
    new HttpStage(this, "DefaultStage", {
      httpApi: this.api,
      stageName: "$default",
      autoDeploy: true,
      throttle: { rateLimit: 500, burstLimit: 1000 },
      accessLogSettings: {
        destination: new LogGroupLogDestination(accessLogs),
        format: AccessLogFormat.jsonWithStandardFields({
          caller: false,
          httpMethod: true,
          ip: true,
          protocol: true,
          requestTime: true,
          resourcePath: true,
          responseLength: true,
          status: true,
          user: false,
        }),
      },
    });

    // The routes, their integrations and invoke permissions, in a nested stack (infra/aws/api.ts): the API stays
    // here, since the CDN in front of it is named in the functions' variables, which the routes reach.
    this.routes = props.routes === false ? undefined : new MapgateRoutes(this, "Routes", { api: this.api });

    // The CDN, unless turned off: absolute URLs point at it when no custom domain is given.
    this.cdn = props.cdn === false ? undefined : new MapgateCdn(this, "Cdn", { api: this.api, removalPolicy });
    const publicOrigin =
      props.publicOrigin ?? (this.cdn ? `https://${this.cdn.distribution.distributionDomainName}` : undefined);
    if (this.cdn) {
      new CfnOutput(this, "CdnUrl", { value: `https://${this.cdn.distribution.distributionDomainName}` });
      new CfnOutput(this, "DistributionId", { value: this.cdn.distribution.distributionId });
    }

    const ephemeralMb = props.ephemeralStorageMb ?? 2048;
    if (!Number.isInteger(ephemeralMb) || ephemeralMb < 512 || ephemeralMb > 10240)
      throw new Error(
        `ephemeralStorageMb must be an integer from 512 to 10240, got ${String(props.ephemeralStorageMb)}`,
      );
    const buckets = [...(props.cloudStoreBuckets ?? [])];
    for (const b of buckets) {
      if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(b))
        throw new Error(`cloudStoreBuckets: ${b} is not a bucket name`);
    }
    new CfnOutput(this, "CloudStoreBuckets", { value: buckets.join(",") });
    /** Read-only access to the cloud stores' buckets, for the functions that read data stores' content. */
    const grantStorage = (role: Role) => {
      if (buckets.length === 0) return;
      role.addToPolicy(
        new PolicyStatement({ actions: ["s3:ListBucket"], resources: buckets.map((b) => `arn:aws:s3:::${b}`) }),
      );
      role.addToPolicy(
        new PolicyStatement({ actions: ["s3:GetObject"], resources: buckets.map((b) => `arn:aws:s3:::${b}/*`) }),
      );
      for (const b of buckets) {
        Validations.of(role).acknowledge({
          id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:aws:s3:::${b}/*]`,
          reason: `Reading any object of the cloud-store bucket ${b}: caches are published by reference to paths in it.`,
        });
      }
    };

    // Database stores' passwords: one secret each, named under this prefix by the registration, read only by
    // the functions that connect to data stores.
    const datastoreSecretPrefix = `${this.stackName}/datastores/`;
    new CfnOutput(this, "DatastoreSecretPrefix", { value: datastoreSecretPrefix });
    const grantDatastoreSecrets = (role: Role, level: "read" | "write") => {
      const arn = this.formatArn({
        service: "secretsmanager",
        resource: "secret",
        resourceName: `${datastoreSecretPrefix}*`,
        arnFormat: ArnFormat.COLON_RESOURCE_NAME,
      });
      // Reading is connecting; writing is registering, changing and removing stores (which never read one back).
      const actions =
        level === "read"
          ? ["secretsmanager:GetSecretValue"]
          : ["secretsmanager:CreateSecret", "secretsmanager:PutSecretValue", "secretsmanager:DeleteSecret"];
      role.addToPolicy(new PolicyStatement({ actions, resources: [arn] }));
      Validations.of(role).acknowledge({
        // cdk-nag names the region and account as the synth knows them (`npm run synth` knows a default region).
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:${Token.isUnresolved(this.region) ? "<AWS::Region>" : this.region}:${Token.isUnresolved(this.account) ? "<AWS::AccountId>" : this.account}:secret:${datastoreSecretPrefix}*]`,
        reason:
          "The password of any database data store: stores are registered after deployment, each with its own secret under this prefix.",
      });
    };
    /** The rules of registration on AWS (shared/config.ts DataStorePolicy), beside the grants they go with. */
    const datastorePolicy = {
      DATASTORE_FOLDERS: "refuse",
      DATASTORE_LOCAL_HOSTS: props.allowLocalDatabaseHosts ? "allow" : "refuse",
      DATASTORE_TLS: props.databaseTlsOptional ? "allow" : "require",
      CLOUD_STORE_BUCKETS: buckets.join(","),
    };
    // The operator command applies the same rules when it registers a store for this stack.
    new CfnOutput(this, "DatabaseLocalHosts", { value: datastorePolicy.DATASTORE_LOCAL_HOSTS });
    new CfnOutput(this, "DatabaseTls", { value: datastorePolicy.DATASTORE_TLS });
    const network = props.databaseVpc ? this.databaseNetwork(props.databaseVpc) : undefined;
    if (props.databaseProxy) {
      if (!network) throw new Error("databaseProxy: the proxy lives in the databases' VPC: give databaseVpc too");
      this.databaseProxy(props.databaseProxy, network);
    }
    if (props.hosting && !network)
      throw new Error("hosting: the hosting database lives in the databases' VPC: give databaseVpc too");
    const hosting =
      props.hosting && network
        ? new Hosting(this, "Hosting", {
            network,
            removalPolicy,
            ...(props.hosting.maxCapacity !== undefined ? { maxCapacity: props.hosting.maxCapacity } : {}),
          })
        : undefined;
    if (hosting) new CfnOutput(this, "HostingProxyEndpoint", { value: hosting.proxy.endpoint });

    /**
     * A function in a VPC creates and removes its network interfaces. EC2's Describe actions take no resource,
     * and the others are scoped here to the stack's own subnets and security group where IAM allows it.
     */
    const grantNetworkInterfaces = (role: Role) => {
      role.addToPolicy(
        new PolicyStatement({
          actions: [
            "ec2:CreateNetworkInterface",
            "ec2:DescribeNetworkInterfaces",
            "ec2:DescribeSubnets",
            "ec2:DeleteNetworkInterface",
            "ec2:AssignPrivateIpAddresses",
            "ec2:UnassignPrivateIpAddresses",
          ],
          resources: ["*"],
        }),
      );
      Validations.of(role).acknowledge({
        id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        reason:
          "Lambda manages the network interfaces of a function in a VPC; EC2's network-interface actions take no narrower resource (AWS's own AWSLambdaVPCAccessExecutionRole grants them on *).",
      });
    };

    // What mapgate tells other systems. Functions that raise events may put them on this bus only.
    const bus = new EventBus(this, "Events", { eventBusName: `${id}-events` });
    new CfnOutput(this, "EventBusName", { value: bus.eventBusName });
    new CfnOutput(this, "EventBusArn", { value: bus.eventBusArn });
    new CfnOutput(this, "EventSource", { value: EVENTS.source });
    /** The grants a spec's flags ask for, each with the environment variable that names what it grants. */
    const grantIntegrations = (fn: NodejsFunction, spec: Pick<TaskSpec, "emits" | "answersCallers" | "id">) => {
      if (spec.emits) {
        bus.grantPutEventsTo(fn);
        fn.addEnvironment("EVENT_BUS_NAME", bus.eventBusName);
      }
      if (spec.answersCallers && fn.role) {
        // Task tokens are not resources IAM can name: SendTaskSuccess/Failure take `*` only.
        // (Acknowledged with the role's X-Ray grant, the other `*` it holds: see makeFunction.)
        fn.addToRolePolicy(
          new PolicyStatement({ actions: ["states:SendTaskSuccess", "states:SendTaskFailure"], resources: ["*"] }),
        );
      }
    };

    // Files users upload as items: private, encrypted, reached over TLS only, by the functions that declare them.
    const itemFilesBucket = new Bucket(this, "ItemFiles", {
      blockPublicAccess: BlockPublicAccess.BLOCK_ALL,
      encryption: BucketEncryption.S3_MANAGED,
      enforceSSL: true,
      removalPolicy,
    });
    Validations.of(itemFilesBucket).acknowledge({
      id: "AwsSolutions-S1",
      reason:
        "Only mapgate's functions read and write this bucket, and each request to them is logged with its caller by the function; object-level trails are the operator's choice (CloudTrail data events).",
    });
    /**
     * The object actions a level needs under one prefix of the item-files bucket and no more (the bucket's grant
     * helpers add List*, GetBucket* and more), with the variable naming the bucket: uploaded files (`items/`) and
     * hosted layers' data (`hosted/`, read by the service function, written by publishing).
     */
    const grantBucketPrefix = (
      fn: NodejsFunction,
      level: Access,
      prefix: string,
      env: string,
      whose: string,
      parts = false,
      listing = parts,
    ) => {
      // A writer of uploaded files also assembles files uploaded in parts (`parts`): an S3 multipart upload it may
      // abort, and a listing of its own prefix alone (an item's parts). A writer of hosted data lists its prefix too
      // (`listing`): a service's attachments, removed with the service.
      const actions =
        level === "write"
          ? ["s3:GetObject", "s3:PutObject", "s3:DeleteObject", ...(parts ? ["s3:AbortMultipartUpload"] : [])]
          : ["s3:GetObject"];
      fn.addToRolePolicy(new PolicyStatement({ actions, resources: [itemFilesBucket.arnForObjects(`${prefix}/*`)] }));
      if (level === "write" && listing) {
        fn.addToRolePolicy(
          new PolicyStatement({
            actions: ["s3:ListBucket"],
            resources: [itemFilesBucket.bucketArn],
            conditions: { StringLike: { "s3:prefix": [`${prefix}/*`] } },
          }),
        );
      }
      const bucketId = Stack.of(this).getLogicalId(itemFilesBucket.node.defaultChild as CfnElement);
      if (fn.role) {
        Validations.of(fn.role).acknowledge({
          id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${bucketId}.Arn>/${prefix}/*]`,
          reason: `Any ${whose}: keyed by item id, and the item's record decides who reads it.`,
        });
      }
      fn.addEnvironment(env, itemFilesBucket.bucketName);
    };

    const functions: { id: string; fn: NodejsFunction }[] = [];
    const makeFunction = (
      id: string,
      entry: string,
      timeout: Duration,
      access: Readonly<Record<string, Access>>,
      {
        readsStorage = false,
        datastoreSecrets,
        viewerAssets = false,
        itemFiles,
        hostedData,
      }: Pick<RouteSpec, "readsStorage" | "datastoreSecrets" | "viewerAssets" | "itemFiles" | "hostedData"> = {},
    ) => {
      const name = pascal(id);
      const logGroup = new LogGroup(this, `${name}Logs`, { retention: RetentionDays.ONE_MONTH, removalPolicy });
      // An explicit role with only this function's log group, instead of the managed basic-execution policy.
      const role = new Role(this, `${name}Role`, { assumedBy: new ServicePrincipal("lambda.amazonaws.com") });
      logGroup.grantWrite(role);
      // What connects to databases (and reads stores' content) is what runs in their VPC.
      const connects = readsStorage || datastoreSecrets === "read";
      const secretsLevel = datastoreSecrets === "write" ? "write" : connects ? "read" : undefined;
      if (readsStorage) grantStorage(role);
      if (secretsLevel) grantDatastoreSecrets(role, secretsLevel);
      // What keeps or serves hosted data reaches the hosting database (when the stack has one) in its VPC too.
      const hosts = hostedData !== undefined && hosting !== undefined;
      const inVpc = (connects || hosts) && network ? network : undefined;
      if (inVpc) grantNetworkInterfaces(role);
      const entryFile = join(ROOT, "functions", `${entry}.ts`);
      const fn = new NodejsFunction(this, `${name}Function`, {
        entry: entryFile,
        handler: "handler",
        runtime: Runtime.NODEJS_24_X,
        architecture: Architecture.ARM_64,
        memorySize: FUNCTION_MEMORY_MB,
        // Readers copy stores' files, and hosted-data writers stage a service's GeoPackage (or an upload), in /tmp.
        ...(readsStorage || hostedData === "write" ? { ephemeralStorageSize: Size.mebibytes(ephemeralMb) } : {}),
        timeout,
        role,
        logGroup,
        ...(inVpc
          ? { vpc: inVpc.vpc, vpcSubnets: { subnets: [...inVpc.subnets] }, securityGroups: [inVpc.securityGroup] }
          : {}),
        // Each invocation is traced (the state machine's executions too), its log lines carry the trace id.
        tracing: Tracing.ACTIVE,
        projectRoot: ROOT,
        depsLockFilePath: join(ROOT, "package-lock.json"),
        environment: {
          POWERTOOLS_SERVICE_NAME: "mapgate",
          POWERTOOLS_LOG_LEVEL: "INFO",
          // The `Stack` dimension of every metric the function writes (shared/metrics.ts).
          MAPGATE_STACK: this.stackName,
          ...(publicOrigin ? { PUBLIC_HTTPS_ORIGIN: publicOrigin } : {}),
          ...props.tunables,
        },
        bundling: {
          format: OutputFormat.ESM,
          target: BUNDLE.target,
          platform: BUNDLE.platform,
          minify: BUNDLE.minify,
          mainFields: [...BUNDLE.mainFields],
          banner: BUNDLE.banner,
          externalModules: [...BUNDLE.external],
          sourceMap: true,
          sourceMapMode: SourceMapMode.EXTERNAL,
          commandHooks: afterBundlingHooks(entryFile, viewerAssets),
        },
      });
      // The grant and the variable naming what it grants, together (shared/stores/datastore-secrets.ts).
      if (secretsLevel) {
        fn.addEnvironment("DATASTORE_SECRET_PREFIX", datastoreSecretPrefix);
        for (const [k, v] of Object.entries(datastorePolicy)) fn.addEnvironment(k, v);
      }
      if (itemFiles) grantBucketPrefix(fn, itemFiles, "items", "ITEM_FILES_BUCKET", "uploaded item's file", true);
      if (hostedData)
        grantBucketPrefix(fn, hostedData, "hosted", "HOSTED_DATA_BUCKET", "hosted layer's data", false, true);
      if (hosts && hosting) {
        // Through the proxy, with the cluster's login; the password only in its secret (shared/config.ts).
        hosting.secret.grantRead(fn);
        fn.addEnvironment(
          "HOSTED_DATABASE",
          `postgresql://${HOSTING_USER}@${hosting.proxy.endpoint}:5432/${HOSTING_DATABASE}?sslmode=verify-full`,
        );
        fn.addEnvironment("HOSTED_DATABASE_SECRET_ID", hosting.secret.secretArn);
      }
      for (const [table, level] of Object.entries(access)) {
        const t = tables.get(table as TableName);
        if (!t) throw new Error(`${id} names unknown table ${table}`);
        t.grantTo(fn, level);
      }
      const answersCallers = [...WORKFLOW.tasks, invocationFunction()].some((f) => f.id === id && f.answersCallers);
      Validations.of(role).acknowledge({
        id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
        reason: `${id} sends its traces to X-Ray (PutTraceSegments, PutTelemetryRecords)${answersCallers ? " and answers callers' task tokens (states:SendTaskSuccess/Failure)" : ""}; neither accepts a narrower resource.`,
      });
      functions.push({ id, fn });
      return fn;
    };

    // The workflow: its task functions, then the state machine running the definition file.
    const taskFunctions = WORKFLOW.tasks.map((task) => {
      const fn = makeFunction(task.id, task.id, Duration.minutes(task.timeoutMinutes ?? 5), task.tables, task);
      if (task.nodeOptions) fn.addEnvironment("NODE_OPTIONS", task.nodeOptions);
      grantIntegrations(fn, task);
      return { task, fn };
    });
    const workflowLogs = new LogGroup(this, "WorkflowLogs", { retention: RetentionDays.ONE_MONTH, removalPolicy });
    this.stateMachine = new StateMachine(this, "Jobs", {
      stateMachineType: StateMachineType.STANDARD,
      definitionBody: DefinitionBody.fromString(readFileSync(join(ROOT, WORKFLOW.file), "utf8")),
      definitionSubstitutions: Object.fromEntries(
        taskFunctions.map(({ task, fn }) => [taskVariable(task.id), fn.functionArn]),
      ),
      logs: { destination: workflowLogs, level: LogLevel.ALL, includeExecutionData: true },
      tracingEnabled: true,
      // No `timeout` here: DefinitionBody.fromString ignores it. The definition's own TimeoutSeconds (one hour)
      // ends an execution; jobs still processing after JOB_DEADLINE_MS are failed on read.
    });
    for (const { fn } of taskFunctions) fn.grantInvoke(this.stateMachine);
    // The state machine's role: invoking each task function (and its versions, `<arn>:*`), and X-Ray and
    // CloudWatch Logs delivery, which take no narrower resource than `*`.
    Validations.of(this.stateMachine.role).acknowledge({
      id: "AwsSolutions::AwsSolutions-IAM5[Resource::*]",
      reason: "X-Ray tracing and CloudWatch Logs delivery for the state machine accept no narrower resource.",
    });
    for (const { task, fn } of taskFunctions) {
      const logicalId = Stack.of(this).getLogicalId(fn.node.defaultChild as CfnElement);
      Validations.of(this.stateMachine.role).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId}.Arn>:*]`,
        reason: `Invoking the ${task.id} task function's versions; no other function.`,
      });
    }

    for (const route of ROUTES) {
      const fn = makeFunction(route.id, route.handler ?? route.id, Duration.seconds(29), route.tables, route);
      for (const secret of route.secrets) secrets.get(secret)?.grantTo(fn);
      // Requests through the CDN carry the viewer's address, which a route believes with the edge key.
      this.cdn?.grantTo(fn);
      grantIntegrations(fn, route);
      if (route.startsWorkflow) {
        this.stateMachine.grantStartExecution(fn);
        fn.addEnvironment("STATE_MACHINE_ARN", this.stateMachine.stateMachineArn);
      }
      this.routes?.route(route, fn);
    }
    new CfnOutput(this, "ApiUrl", { value: this.api.apiEndpoint });

    // The operations function: other AWS services invoke it through their own alias (register-caller creates it
    // with a resource policy naming the caller's principal); no route reaches it.
    const operations = invocationFunction();
    const operationsFn = makeFunction(
      operations.id,
      operations.id,
      Duration.seconds(60),
      operations.tables,
      operations,
    );
    grantIntegrations(operationsFn, operations);
    this.stateMachine.grantStartExecution(operationsFn);
    operationsFn.addEnvironment("STATE_MACHINE_ARN", this.stateMachine.stateMachineArn);
    // The absolute URLs its answers hold (job results, service URLs) are the API's when nothing fronts it.
    if (!publicOrigin) operationsFn.addEnvironment("PUBLIC_HTTPS_ORIGIN", this.api.apiEndpoint);
    new CfnOutput(this, "OperationsFunctionArn", { value: operationsFn.functionArn });

    // Every minute: the events the bus did not take at once are sent again (and, hourly, the sweep runs).
    const redelivery = makeFunction(REDELIVERY.id, REDELIVERY.id, Duration.minutes(2), REDELIVERY.tables, REDELIVERY);
    grantIntegrations(redelivery, REDELIVERY);
    // Its hourly sweep lists the hosted layers' files (shared/hosted/sweep.ts); uploads' parts it lists with the
    // item files' grant.
    redelivery.addToRolePolicy(
      new PolicyStatement({
        actions: ["s3:ListBucket"],
        resources: [itemFilesBucket.bucketArn],
        conditions: { StringLike: { "s3:prefix": ["hosted/*"] } },
      }),
    );
    new Rule(this, "EventsRedeliverySchedule", {
      schedule: Schedule.rate(Duration.minutes(1)),
      targets: [new LambdaTarget(redelivery, { retryAttempts: 2 })],
    });

    // Alarms, the composite "unhealthy" alarm, their topic and the dashboard, in a nested stack of their own.
    const written = new Set(
      [...ROUTES, ...WORKFLOW.tasks, operations, REDELIVERY].flatMap((f) =>
        Object.entries(f.tables).flatMap(([t, a]) => (a === "write" ? [t] : [])),
      ),
    );
    this.monitoring = new Monitoring(this, "Monitoring", {
      stackName: this.stackName,
      api: this.api,
      functions,
      tables: TABLES.map((spec) => ({
        name: spec.name,
        tableName: tables.get(spec.name)?.table.tableName ?? "",
        written: written.has(spec.name),
      })),
      stateMachine: this.stateMachine,
      ...(this.cdn ? { distributionId: this.cdn.distribution.distributionId } : {}),
      ...(props.alarmThresholds ? { thresholds: props.alarmThresholds } : {}),
      ...(props.alarmEmail ? { alarmEmail: props.alarmEmail } : {}),
      removalPolicy,
    });
    new CfnOutput(this, "AlarmTopicArn", { value: this.monitoring.topic.topicArn });
    new CfnOutput(this, "DashboardUrl", {
      value: `https://${this.region}.console.aws.amazon.com/cloudwatch/home?region=${this.region}#dashboards/dashboard/${this.stackName}`,
    });
  }

  /**
   * The proxy: TLS required from the functions, password authentication with its own secret, in the functions'
   * subnets and security group (which must let the proxy reach the database).
   */
  private databaseProxy(
    spec: DatabaseProxySpec,
    network: { vpc: IVpc; subnets: readonly ISubnet[]; securityGroup: ISecurityGroup },
  ): void {
    if (!/^[A-Za-z][A-Za-z0-9-]{0,62}$/.test(spec.instanceIdentifier))
      throw new Error(`databaseProxy: ${spec.instanceIdentifier} is not an RDS instance identifier`);
    if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65535)
      throw new Error(`databaseProxy: port ${String(spec.port)} is not a port`);
    if (!/^arn:aws[a-z-]*:secretsmanager:[a-z0-9-]+:\d{12}:secret:.+$/.test(spec.secretArn))
      throw new Error("databaseProxy: the secret is given by its complete ARN");
    const percent = spec.maxConnectionsPercent ?? 50;
    if (!Number.isInteger(percent) || percent < 1 || percent > 100)
      throw new Error("databaseProxy: maxConnectionsPercent is 1–100");
    const instance = DatabaseInstance.fromDatabaseInstanceAttributes(this, "Database", {
      instanceIdentifier: spec.instanceIdentifier,
      instanceEndpointAddress: spec.endpoint,
      port: spec.port,
      securityGroups: [network.securityGroup],
      engine: DatabaseInstanceEngine.POSTGRES,
    });
    const proxy = new DatabaseProxy(this, "DatabaseProxy", {
      proxyTarget: ProxyTarget.fromInstance(instance),
      secrets: [Secret.fromSecretCompleteArn(this, "DatabaseProxySecret", spec.secretArn)],
      vpc: network.vpc,
      vpcSubnets: { subnets: [...network.subnets] },
      securityGroups: [network.securityGroup],
      requireTLS: true,
      iamAuth: false,
      maxConnectionsPercent: percent,
    });
    new CfnOutput(this, "DatabaseProxyEndpoint", { value: proxy.endpoint });
  }

  /**
   * The databases' VPC as given (nothing about it is looked up, so synth needs no account), and the endpoints
   * through which functions in it still reach DynamoDB and S3 (gateway endpoints, free) and Secrets Manager,
   * Step Functions and EventBridge (interface endpoints, billed per hour and per GB: see docs/aws.md).
   */
  private databaseNetwork(spec: DatabaseVpc): {
    vpc: IVpc;
    subnets: readonly ISubnet[];
    securityGroup: ISecurityGroup;
  } {
    if (!/^vpc-[0-9a-f]+$/.test(spec.vpcId)) throw new Error(`databaseVpc: ${spec.vpcId} is not a VPC id`);
    if (spec.subnetIds.length === 0 || spec.subnetIds.some((s) => !/^subnet-[0-9a-f]+$/.test(s)))
      throw new Error("databaseVpc: give the subnets as subnet-… ids");
    if (!/^sg-[0-9a-f]+$/.test(spec.securityGroupId))
      throw new Error(`databaseVpc: ${spec.securityGroupId} is not a security group id`);
    if (spec.routeTableIds.some((r) => !/^rtb-[0-9a-f]+$/.test(r)))
      throw new Error("databaseVpc: give the route tables as rtb-… ids");
    const vpc = Vpc.fromVpcAttributes(this, "DatabaseVpc", {
      vpcId: spec.vpcId,
      availabilityZones: this.availabilityZones,
    });
    const subnets = spec.subnetIds.map((id, i) => Subnet.fromSubnetId(this, `DatabaseSubnet${i}`, id));
    const securityGroup = SecurityGroup.fromSecurityGroupId(this, "DatabaseSecurityGroup", spec.securityGroupId, {
      allowAllOutbound: false,
      mutable: false,
    });
    if (spec.endpoints !== false) {
      if (spec.routeTableIds.length === 0)
        throw new Error("databaseVpc: give the subnets' route tables (for the DynamoDB and S3 gateway endpoints)");
      // Gateway endpoints attach to route tables (several subnets often share one), not to subnets.
      const routeTableIds = [...new Set(spec.routeTableIds)];
      for (const [name, service] of [
        ["DynamoDb", GatewayVpcEndpointAwsService.DYNAMODB],
        ["S3", GatewayVpcEndpointAwsService.S3],
      ] as const) {
        new CfnVPCEndpoint(this, `${name}Endpoint`, {
          vpcId: spec.vpcId,
          serviceName: service.name,
          vpcEndpointType: "Gateway",
          routeTableIds,
        });
      }
      for (const key of VPC_INTERFACE_ENDPOINTS) {
        new InterfaceVpcEndpoint(this, `${pascal(key.toLowerCase().replace(/_/g, "-"))}Endpoint`, {
          vpc,
          service: InterfaceVpcEndpointAwsService[key],
          subnets: { subnets: [...subnets] },
          securityGroups: [securityGroup],
          privateDnsEnabled: true,
          open: false,
        });
      }
    }
    return { vpc, subnets, securityGroup };
  }
}
