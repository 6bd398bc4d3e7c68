import { AsyncLocalStorage } from "node:async_hooks";
import { LogFormatter, LogItem, Logger, LogLevelThreshold } from "@aws-lambda-powertools/logger";
import type { LogAttributes, UnformattedAttributes } from "@aws-lambda-powertools/logger/types";

/**
 * The request (or workflow task run) a log line belongs to. Kept in async-local storage rather than appended to
 * the shared logger: the local engine serves concurrent requests from one process, where appended keys would
 * leak between requests.
 */
const scope = new AsyncLocalStorage<{ readonly requestId: string }>();

/** Runs `fn` with every log line it writes carrying `requestId`. */
export function inRequest<T>(requestId: string | undefined, fn: () => T): T {
  return requestId ? scope.run({ requestId }, fn) : fn();
}

/** Powertools' own keys, plus the request id of the scope the line was written in (and the X-Ray trace id). */
class RequestFormatter extends LogFormatter {
  override formatAttributes(attributes: UnformattedAttributes, additional: LogAttributes): LogItem {
    const requestId = scope.getStore()?.requestId;
    return new LogItem({
      attributes: {
        level: attributes.logLevel,
        message: attributes.message,
        timestamp: this.formatTimestamp(attributes.timestamp),
        service: attributes.serviceName,
        sampling_rate: attributes.sampleRateValue,
        xray_trace_id: attributes.xRayTraceId,
        ...(requestId ? { requestId } : {}),
      },
    }).addAttributes(additional);
  }
}

let destination: ((line: string, level: number) => void) | undefined;

/**
 * Sends every log line to `write` instead of standard output (the local engine's log file); Lambda keeps
 * standard output, which CloudWatch reads. `level` is Powertools' number (WARN is 16, ERROR 20).
 */
export function setLogDestination(write: (line: string, level: number) => void): void {
  destination = write;
}

class MapgateLogger extends Logger {
  protected override printLog(logLevel: number, log: LogItem): void {
    if (!destination) return super.printLog(logLevel, log);
    log.prepareForPrint();
    destination(JSON.stringify(log.getAttributes(), this.getJsonReplacer()), logLevel);
  }
}

/**
 * Writes a line that a logger elsewhere formatted (`level` as Powertools numbers it) where this logger writes its
 * own: the destination when one is set, else standard output, or standard error from WARN, as Powertools does.
 */
export function writeLogLine(line: string, level: number): void {
  if (destination) destination(line, level);
  else if (level >= LogLevelThreshold.WARN) process.stderr.write(`${line}\n`);
  else process.stdout.write(`${line}\n`);
}

export const logger = new MapgateLogger({ serviceName: "mapgate", logFormatter: new RequestFormatter() });

/**
 * Whether info lines are written. The access log asks first, so that at a higher level a request pays nothing for
 * its line. Read once: the level comes from POWERTOOLS_LOG_LEVEL when the logger is made and mapgate never changes
 * it (the logger's own getter reads the environment on every call).
 */
const INFO_ENABLED = logger.level <= LogLevelThreshold.INFO;
export const infoEnabled = (): boolean => INFO_ENABLED;
