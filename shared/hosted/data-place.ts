// Where hosted layers' data lives in this deployment (a folder locally, the item-files bucket's `hosted/` on AWS), and
// the S3 client reaching the bucket, loaded only where a bucket is met: what the GeoPackage store and attachments'
// bytes both keep there.
import { config } from "#shared/config.ts";

/** The configured place of hosted data: a bucket or a folder. */
export function hostedDataPlace(): { readonly bucket: string } | { readonly dir: string } {
  const w = config().hostedData;
  if (!w) throw new Error("no hosted data storage configured (HOSTED_DATA_BUCKET or HOSTED_DATA_DIR)");
  return w;
}

/** The SDK and the function's one S3 client. */
export async function bucketClient() {
  const [s3, { sharedS3Client }] = await Promise.all([import("@aws-sdk/client-s3"), import("#shared/storage/s3.ts")]);
  return { s3, client: sharedS3Client() };
}
