// `npm run synth` / `npm run deploy`: the CDK app with cdk-nag's AwsSolutions checks as a validation plugin.
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { parsePublicOrigin, readConfig, TUNABLES } from "#shared/config.ts";
import { DEFAULT_THRESHOLDS, type Thresholds } from "./monitoring.ts";
import { MapgateStack } from "./stack.ts";

const app = new App();
const publicOrigin = app.node.tryGetContext("publicOrigin") as string | undefined;
// `-c publicOrigin=https://gis.example.com[/base/path]`: where absolute URLs point (a custom domain, CloudFront).
// Checked by the functions' own rule (shared/config.ts), which they apply again at cold start.
if (publicOrigin !== undefined) parsePublicOrigin(publicOrigin, "publicOrigin");
// `-c cloudStoreBuckets=a,b`: the buckets cloud data stores may live in (read-only grants).
const buckets = String(app.node.tryGetContext("cloudStoreBuckets") ?? "")
  .split(",")
  .map((b) => b.trim())
  .filter(Boolean);
// `-c ephemeralStorageMb=4096`: the temporary storage of the functions that read data stores, which hold a copy
// of each cloud store GeoPackage they query (512–10240; 2048 unless given).
const ephemeral = app.node.tryGetContext("ephemeralStorageMb") as unknown;
const ephemeralStorageMb = ephemeral === undefined ? undefined : Number(ephemeral);
// `-c SIGNIN_MAX_FAILURES=10` etc.: the tunables (docs/local-engine.md), checked here by the rules the functions
// apply at cold start, so a bad value stops the synth instead of every function.
const tunables = Object.fromEntries(
  TUNABLES.flatMap((name) => {
    const value = app.node.tryGetContext(name) as unknown;
    return value === undefined ? [] : [[name, String(value)]];
  }),
);
readConfig(tunables);
// The databases' VPC (docs/aws.md, "Reaching databases on AWS"): `-c databaseVpcId=vpc-…
// -c databaseSubnetIds=subnet-a,subnet-b -c databaseSecurityGroupId=sg-… -c databaseRouteTableIds=rtb-…`
// [-c databaseVpcEndpoints=false].
const list = (name: string) =>
  String(app.node.tryGetContext(name) ?? "")
    .split(",")
    .map((v) => v.trim())
    .filter(Boolean);
const flag = (name: string) => String(app.node.tryGetContext(name) ?? "") === "true";
const vpcId = app.node.tryGetContext("databaseVpcId") as string | undefined;
const databaseVpc = vpcId
  ? {
      vpcId,
      subnetIds: list("databaseSubnetIds"),
      securityGroupId: String(app.node.tryGetContext("databaseSecurityGroupId") ?? ""),
      routeTableIds: list("databaseRouteTableIds"),
      endpoints: String(app.node.tryGetContext("databaseVpcEndpoints") ?? "true") !== "false",
    }
  : undefined;
// An RDS Proxy in front of one instance of that VPC: `-c databaseProxyInstance=<identifier> -c
// databaseProxyEndpoint=<address> -c databaseProxyPort=5432 -c databaseProxySecretArn=<the proxy's login's secret>`.
const proxyInstance = app.node.tryGetContext("databaseProxyInstance") as string | undefined;
const databaseProxy = proxyInstance
  ? {
      instanceIdentifier: proxyInstance,
      endpoint: String(app.node.tryGetContext("databaseProxyEndpoint") ?? ""),
      port: Number(app.node.tryGetContext("databaseProxyPort") ?? 5432),
      secretArn: String(app.node.tryGetContext("databaseProxySecretArn") ?? ""),
    }
  : undefined;
// `-c hosting=true [-c hostingMaxCapacity=4]`: hosted layers in an Aurora PostgreSQL cluster the stack makes (needs the
// databases' VPC above).
const hostingMax = app.node.tryGetContext("hostingMaxCapacity") as unknown;
const hosting = flag("hosting")
  ? { ...(hostingMax !== undefined ? { maxCapacity: Number(hostingMax) } : {}) }
  : undefined;
// `-c cdn=false`: no CloudFront distribution in front of the API (there is one unless told otherwise).
const cdn = String(app.node.tryGetContext("cdn") ?? "true") !== "false";
// `-c routes=false`: the API without its routes, the first of the two deploys that upgrade a stack made while the
// routes were in the parent stack (docs/aws.md, "Upgrading").
const routes = String(app.node.tryGetContext("routes") ?? "true") !== "false";
// `-c alarmReadP99Ms=800` etc.: alarm thresholds other than the defaults (infra/aws/monitoring.ts).
const alarmThresholds: Partial<Thresholds> = {};
for (const name of Object.keys(DEFAULT_THRESHOLDS) as (keyof Thresholds)[]) {
  const raw = app.node.tryGetContext(name) as unknown;
  if (raw === undefined) continue;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0)
    throw new Error(`${name} must be a number of at least 0, got ${String(raw)}`);
  alarmThresholds[name] = value;
}
// `-c alarmEmail=ops@example.com`: subscribes an address to the alarm topic (it confirms by mail).
const alarmEmail = app.node.tryGetContext("alarmEmail") as string | undefined;
new MapgateStack(app, (app.node.tryGetContext("stackName") as string | undefined) ?? "mapgate", {
  ...(publicOrigin ? { publicOrigin } : {}),
  cloudStoreBuckets: buckets,
  ...(ephemeralStorageMb !== undefined ? { ephemeralStorageMb } : {}),
  tunables,
  ...(databaseVpc ? { databaseVpc } : {}),
  ...(databaseProxy ? { databaseProxy } : {}),
  ...(hosting ? { hosting } : {}),
  allowLocalDatabaseHosts: flag("allowLocalDatabaseHosts"),
  databaseTlsOptional: flag("databaseTlsOptional"),
  cdn,
  routes,
  alarmThresholds,
  ...(alarmEmail ? { alarmEmail } : {}),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
