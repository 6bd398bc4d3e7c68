// The local S3 (s3rver) with one bucket, and a client of its own to fill it, as the storage tests start it.
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { type LocalS3, startS3 } from "#infra/local/s3.ts";

/**
 * s3rver in a temporary folder with `bucket` made, and the client that made it (s3rver takes any key; path-style
 * addressing, as on loopback there is no bucket host name).
 */
export async function startS3WithBucket(bucket: string): Promise<{ s3: LocalS3; admin: S3Client }> {
  const s3 = await startS3(undefined);
  const admin = new S3Client({
    endpoint: s3.endpoint,
    forcePathStyle: true,
    region: "us-east-1",
    credentials: { accessKeyId: "admin", secretAccessKey: "admin" },
  });
  await admin.send(new CreateBucketCommand({ Bucket: bucket }));
  return { s3, admin };
}

/**
 * Points the AWS SDK of this process at `s3` as the local engine does for its functions (infra/local/engine.ts),
 * with `extra` variables besides: call before the S3 modules under test are imported, as they read it at load.
 */
export function useS3Environment(s3: LocalS3, extra: Record<string, string> = {}): void {
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_REGION: "us-east-1",
    AWS_ACCESS_KEY_ID: "local",
    AWS_SECRET_ACCESS_KEY: "local",
    S3_FORCE_PATH_STYLE: "true",
    ...extra,
  });
}
