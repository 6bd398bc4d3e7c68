// `npm run synth` / `npm run deploy`: the CDK app with cdk-nag's AwsSolutions checks as a validation plugin.
import { App, Validations } from "aws-cdk-lib";
import { AwsSolutionsChecks } from "cdk-nag";
import { MapgateStack } from "./stack.ts";

const app = new App();
const publicOrigin = app.node.tryGetContext("publicOrigin") as string | undefined;
new MapgateStack(app, (app.node.tryGetContext("stackName") as string | undefined) ?? "mapgate", {
  ...(publicOrigin ? { publicOrigin } : {}),
  env: { account: process.env.CDK_DEFAULT_ACCOUNT, region: process.env.CDK_DEFAULT_REGION },
});
Validations.of(app).addPlugins(new AwsSolutionsChecks(app));
app.synth();
