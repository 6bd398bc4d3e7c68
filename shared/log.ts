import { Logger } from "@aws-lambda-powertools/logger";

// Request-scoped fields are passed on each call, never appended to the shared logger: the local engine
// serves concurrent requests from one process, where appended keys would leak between requests.
export const logger = new Logger({ serviceName: "mapgate" });
