// Promises raced against deadlines that one interval timer checks: arming and clearing a timer per request (with
// the promise race around it) was ~3% of a warm read under load. A deadline is kept within one sweep's interval.
import type { Context } from "aws-lambda";

interface Waiting {
  readonly at: number;
  expire(): void;
}

export class Deadlines {
  readonly #sweepMs: number;
  readonly #waiting = new Set<Waiting>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(sweepMs: number) {
    this.#sweepMs = sweepMs;
  }

  /**
   * `running`'s outcome, or once `at` (a `performance.now()` time) has passed, `onExpiry`'s: its value, or its
   * throw as the rejection. `running` itself goes on; only its answer is no longer waited for.
   */
  race<T, U>(running: Promise<T>, at: number, onExpiry: () => U): Promise<T | U> {
    return new Promise<T | U>((resolve, reject) => {
      const entry: Waiting = {
        at,
        expire: () => {
          try {
            resolve(onExpiry());
          } catch (err) {
            reject(err instanceof Error ? err : new Error(String(err)));
          }
        },
      };
      this.#waiting.add(entry);
      if (!this.#sweeper) {
        this.#sweeper = setInterval(() => this.#sweep(), this.#sweepMs);
        // Waiting never keeps a process alive by itself: whatever `running` waits on does.
        this.#sweeper.unref();
      }
      running.then(
        (value) => {
          this.#waiting.delete(entry);
          resolve(value);
        },
        (err: unknown) => {
          this.#waiting.delete(entry);
          reject(err instanceof Error ? err : new Error(String(err)));
        },
      );
    });
  }

  #sweep(): void {
    const now = performance.now();
    for (const entry of this.#waiting) {
      if (entry.at > now) continue;
      this.#waiting.delete(entry);
      entry.expire();
    }
    if (this.#waiting.size === 0) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }
}

/** How long before the function's own timeout a request is answered with an error rather than cut off. */
export const EARLY_ANSWER_MS = 250;
const functionDeadlines = new Deadlines(100);

/**
 * A handler's work, or a TimeoutError (the error middy's early timeout throws, so the error envelope answers it as
 * any fault) once the invocation is within EARLY_ANSWER_MS of its end: a client gets an answer in the wire format
 * rather than the bare 500 API Gateway gives for a function that timed out.
 */
export function beforeTimeout<T>(running: Promise<T>, context: Pick<Context, "getRemainingTimeInMillis">): Promise<T> {
  const remaining = context.getRemainingTimeInMillis?.();
  if (typeof remaining !== "number" || !Number.isFinite(remaining)) return running;
  return functionDeadlines.race(running, performance.now() + remaining - EARLY_ANSWER_MS, () => {
    const err = new Error("[AbortError]: The operation was aborted.");
    err.name = "TimeoutError";
    throw err;
  });
}
