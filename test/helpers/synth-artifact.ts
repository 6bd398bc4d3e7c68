// `node test/helpers/synth-artifact.ts <outdir> <stack name> <bucket,…>`: synthesizes the stack into a cloud
// assembly with real bundling, in its own process so the test can prepare the store meanwhile and CDK's
// and esbuild's output stays out of the test's unless the synth fails.
import { App } from "aws-cdk-lib";
import { MapgateStack } from "#infra/aws/stack.ts";

const [outdir, stackName, buckets = ""] = process.argv.slice(2);
if (!outdir || !stackName) throw new Error("usage: synth-artifact.ts <outdir> <stack name> [buckets]");
const app = new App({ outdir });
// Every publish of a file is a job here (PUBLISH_IN_REQUEST_MB=0), so the publishing task's bundle runs under its
// own policy, reading the upload from the item-files bucket.
new MapgateStack(app, stackName, {
  cloudStoreBuckets: buckets.split(",").filter(Boolean),
  tunables: { PUBLISH_IN_REQUEST_MB: "0" },
});
app.synth();
