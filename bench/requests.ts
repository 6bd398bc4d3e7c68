// DynamoDB requests sent so far by this process's store clients (every handler and task sends through them).
import { observeStore } from "#shared/stores/dynamo.ts";

let count = 0;
observeStore("countBenchRequests", (next) => async (args) => {
  count++;
  return next(args);
});

export const dynamoRequests = () => count;
