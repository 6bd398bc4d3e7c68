// The hosting database (an option of the stack, `-c hosting=true`): an Aurora PostgreSQL Serverless v2 cluster that
// may pause at 0 capacity when idle, and an RDS Proxy in front of it, both in the databases' VPC, in a nested stack of
// their own (the parent stack is near CloudFormation's 500 resources). The functions that keep and serve hosted
// layers' data reach it through the proxy with the cluster's generated login (shared/features/hosting-database.ts).
import { Duration, NestedStack, RemovalPolicy, Validations } from "aws-cdk-lib";
import type { ISecurityGroup, ISubnet, IVpc } from "aws-cdk-lib/aws-ec2";
import {
  AuroraPostgresEngineVersion,
  ClusterInstance,
  Credentials,
  DatabaseCluster,
  DatabaseClusterEngine,
  type DatabaseProxy,
} from "aws-cdk-lib/aws-rds";
import type { ISecret } from "aws-cdk-lib/aws-secretsmanager";
import type { Construct } from "constructs";

/** The database and login the cluster is made with (the login's password: the cluster's generated secret). */
export const HOSTING_DATABASE = "mapgate";
export const HOSTING_USER = "mapgate_host";
/** The most capacity (ACU) the cluster scales to, unless `-c hostingMaxCapacity` says otherwise. */
export const HOSTING_MAX_ACU = 4;

export interface HostingProps {
  readonly network: { vpc: IVpc; subnets: readonly ISubnet[]; securityGroup: ISecurityGroup };
  /** 1–256 ACU. */
  readonly maxCapacity?: number;
  readonly removalPolicy: RemovalPolicy;
}

export class Hosting extends NestedStack {
  readonly proxy: DatabaseProxy;
  readonly secret: ISecret;

  constructor(scope: Construct, id: string, props: HostingProps) {
    super(scope, id);
    const max = props.maxCapacity ?? HOSTING_MAX_ACU;
    if (!Number.isFinite(max) || max < 1 || max > 256) throw new Error("hostingMaxCapacity is 1–256 ACU");
    const { vpc, subnets, securityGroup } = props.network;
    const retained = props.removalPolicy === RemovalPolicy.RETAIN;
    const cluster = new DatabaseCluster(this, "Database", {
      // 16.3 and later may pause at 0 ACU.
      engine: DatabaseClusterEngine.auroraPostgres({ version: AuroraPostgresEngineVersion.VER_16_6 }),
      credentials: Credentials.fromGeneratedSecret(HOSTING_USER),
      defaultDatabaseName: HOSTING_DATABASE,
      writer: ClusterInstance.serverlessV2("Writer"),
      // Paused when idle (after five minutes without a connection): no compute billed then.
      serverlessV2MinCapacity: 0,
      serverlessV2MaxCapacity: max,
      vpc,
      vpcSubnets: { subnets: [...subnets] },
      securityGroups: [securityGroup],
      storageEncrypted: true,
      iamAuthentication: false,
      deletionProtection: retained,
      // Users' data: a stack removed keeps a final snapshot, never nothing.
      removalPolicy: retained ? RemovalPolicy.RETAIN : RemovalPolicy.SNAPSHOT,
      backup: { retention: Duration.days(7) },
    });
    const secret = cluster.secret;
    if (!secret) throw new Error("the hosting cluster has no generated secret");
    this.secret = secret;
    this.proxy = cluster.addProxy("Proxy", {
      secrets: [secret],
      vpc,
      vpcSubnets: { subnets: [...subnets] },
      securityGroups: [securityGroup],
      requireTLS: true,
      iamAuth: false,
      // Long enough for a cluster resuming from 0 capacity (~15 s) before a borrowed connection is refused.
      borrowTimeout: Duration.seconds(30),
      maxConnectionsPercent: 90,
    });
    Validations.of(this).acknowledge(
      {
        id: "AwsSolutions-SMG4",
        reason:
          "The hosting login's password is read by the proxy and the functions at each cold start; rotation is the operator's choice (Secrets Manager's single-user rotation works unchanged, as the proxy rereads the secret).",
      },
      {
        id: "AwsSolutions-RDS6",
        reason: "mapgate logs in with a password through RDS Proxy (IAM authentication is not used).",
      },
      {
        id: "AwsSolutions-RDS11",
        reason: "The cluster is reached only through the proxy, in private subnets; the port hides nothing.",
      },
      {
        id: "AwsSolutions-RDS10",
        reason: "Deletion protection follows the stack's removal policy (on when data is retained).",
      },
    );
  }
}
