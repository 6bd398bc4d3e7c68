// `node test/helpers/synth-artifact.ts <outdir> <stack name> <bucket,…>`: synthesizes the stack into a cloud
// assembly with real bundling, in its own process so the test can prepare the store meanwhile and CDK's
// and esbuild's output stays out of the test's unless the synth fails.
import { App } from "aws-cdk-lib";
import { MapgateStack } from "#infra/aws/stack.ts";

const [outdir, stackName, buckets = ""] = process.argv.slice(2);
if (!outdir || !stackName) throw new Error("usage: synth-artifact.ts <outdir> <stack name> [buckets]");
const app = new App({ outdir });
new MapgateStack(app, stackName, { cloudStoreBuckets: buckets.split(",").filter(Boolean) });
app.synth();
