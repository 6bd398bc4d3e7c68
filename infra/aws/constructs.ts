// Small constructs whose grant methods also set the environment variable the function reads, so a
// function can never be given a table without being told its name (or the other way round).
import { type CfnElement, RemovalPolicy, Stack, Validations } from "aws-cdk-lib";
import { AttributeType, Billing, TableEncryptionV2, TableV2 } from "aws-cdk-lib/aws-dynamodb";
import type { Function as LambdaFunction } from "aws-cdk-lib/aws-lambda";
import { Secret } from "aws-cdk-lib/aws-secretsmanager";
import { Construct } from "constructs";
import { type Access, SECRETS, type SecretName, type TableSpec, tableEnvName } from "#shared/system.ts";

export class MapgateTable extends Construct {
  readonly table: TableV2;
  readonly spec: TableSpec;

  constructor(scope: Construct, id: string, spec: TableSpec, removalPolicy: RemovalPolicy) {
    super(scope, id);
    this.spec = spec;
    const key = (name: string) => ({ name, type: AttributeType.STRING });
    this.table = new TableV2(this, "Table", {
      partitionKey: key(spec.partitionKey),
      ...(spec.sortKey ? { sortKey: key(spec.sortKey) } : {}),
      billing: Billing.onDemand(),
      encryption: TableEncryptionV2.awsManagedKey(),
      pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: true },
      deletionProtection: removalPolicy === RemovalPolicy.RETAIN,
      removalPolicy,
      ...(spec.ttlAttribute ? { timeToLiveAttribute: spec.ttlAttribute } : {}),
      globalSecondaryIndexes: (spec.indexes ?? []).map((i) => ({
        indexName: i.name,
        partitionKey: key(i.partitionKey),
        ...(i.sortKey ? { sortKey: key(i.sortKey) } : {}),
      })),
    });
  }

  grantTo(fn: LambdaFunction, access: Access): void {
    if (access === "write") this.table.grantReadWriteData(fn);
    else this.table.grantReadData(fn);
    fn.addEnvironment(tableEnvName(this.spec.name), this.table.tableName);
    if (this.spec.indexes?.length && fn.role) {
      const logicalId = Stack.of(this).getLogicalId(this.table.node.defaultChild as CfnElement);
      Validations.of(fn.role).acknowledge({
        id: `AwsSolutions::AwsSolutions-IAM5[Resource::<${logicalId}.Arn>/index/*]`,
        reason: `Queries of the ${this.spec.name} table's own secondary indexes; the grant names no other table.`,
      });
    }
  }
}

export class MapgateSecret extends Construct {
  readonly secret: Secret;
  readonly #env: string;

  constructor(scope: Construct, id: string, name: SecretName, removalPolicy: RemovalPolicy) {
    super(scope, id);
    this.#env = SECRETS[name].env;
    this.secret = new Secret(this, "Secret", {
      description: SECRETS[name].description,
      // Kept with the tables: a stack deleted and deployed again must still open the tokens and codes the
      // retained tables refer to (and a new key would sign everyone out).
      removalPolicy,
      // {kid, k}: the token code derives its 256-bit key from k, and kid names it so keys can rotate.
      generateSecretString: {
        secretStringTemplate: JSON.stringify({ kid: "k1" }),
        generateStringKey: "k",
        passwordLength: 64,
        excludePunctuation: true,
      },
    });
  }

  grantTo(fn: LambdaFunction): void {
    this.secret.grantRead(fn);
    fn.addEnvironment(this.#env, this.secret.secretArn);
  }
}
