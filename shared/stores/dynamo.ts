// The one DynamoDB client handlers use. Its endpoint comes from the SDK's own configuration
// (AWS_ENDPOINT_URL_DYNAMODB on the local engine), so no code here knows which engine it runs on.
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

export const ddb = DynamoDBDocumentClient.from(new DynamoDBClient({ maxAttempts: 4 }), {
  marshallOptions: { removeUndefinedValues: true },
});

/** True for the SDK's error when a ConditionExpression failed: the expected outcome of a lost race. */
export function isConditionFailure(err: unknown): boolean {
  return err instanceof Error && err.name === "ConditionalCheckFailedException";
}
