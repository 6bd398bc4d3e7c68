// What every client script starts with: its input (JSON on stdin) and an ArcGISIdentityManager signed in as
// the input's user at the input's portal; and how the scripts driven by a list of calls run them.
import { ArcGISIdentityManager } from "@esri/arcgis-rest-request";

export async function signedIn<T>(): Promise<{ input: T; session: ArcGISIdentityManager }> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const input = JSON.parse(Buffer.concat(chunks).toString("utf8")) as T & {
    portal: string;
    username: string;
    password: string;
  };
  const session = await ArcGISIdentityManager.signIn({
    username: input.username,
    password: input.password,
    portal: input.portal,
  });
  return { input, session };
}

/** The input, and a session unless the input names no user (an anonymous caller: no token at all). */
export async function signedInOrAnonymous<T>(): Promise<{ input: T; session: ArcGISIdentityManager | undefined }> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const input = JSON.parse(Buffer.concat(chunks).toString("utf8")) as T & {
    portal: string;
    username: string;
    password: string;
  };
  if (input.username === "") return { input, session: undefined };
  const session = await ArcGISIdentityManager.signIn({
    username: input.username,
    password: input.password,
    portal: input.portal,
  });
  return { input, session };
}

/** One call a test asks of a client script: a library function by name, with its options. */
export interface Call {
  fn: string;
  options: Record<string, unknown>;
}

/**
 * Runs `calls` one after the other through `table` and answers their results: what a call answered, or the
 * error it threw (its name, code, message and the server's details), so later calls still run.
 */
export async function runCalls(
  calls: readonly Call[],
  table: Record<string, (o: Record<string, unknown>) => Promise<unknown>>,
): Promise<unknown[]> {
  const results: unknown[] = [];
  for (const call of calls) {
    const fn = table[call.fn];
    if (!fn) throw new Error(`unknown call ${call.fn}`);
    try {
      results.push(await fn(call.options));
    } catch (err) {
      results.push({
        error: {
          name: (err as Error).name,
          code: (err as { code?: unknown }).code,
          message: (err as Error).message,
          details: (err as { response?: { error?: { details?: unknown } } }).response?.error?.details,
        },
      });
    }
  }
  return results;
}
