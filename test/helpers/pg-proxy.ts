// A stand-in for RDS Proxy in front of a paused Aurora cluster, on loopback before a test's PostgreSQL: it refuses a
// startup message carrying `options` (as the proxy does), holds the first connection for a while before reaching
// the server (as a cluster resuming from 0 capacity does), and records what would pin a session on the real proxy
// (a session-level SET, a named prepared statement, a temporary table, an advisory lock). It reads the protocol's
// message framing only, and passes every byte on unchanged.
import { connect, createServer, type Server, type Socket } from "node:net";

export interface PgProxy {
  readonly port: number;
  /** The startup parameters of every connection that reached the server, in order (the first one was held). */
  readonly startups: Record<string, string>[];
  /** Connections refused for their startup `options`: each one's `application_name` ("" without one). */
  readonly refused: string[];
  /** What would have pinned a session, as `kind: text`. */
  readonly pins: string[];
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSS_REQUEST = 80877104;

/** An ErrorResponse (FATAL) message. */
function fatal(code: string, message: string): Buffer {
  const fields = Buffer.concat([Buffer.from(`SFATAL\0VFATAL\0C${code}\0M${message}\0`, "utf8"), Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write("E", 0, "latin1");
  head.writeInt32BE(fields.length + 4, 1);
  return Buffer.concat([head, fields]);
}

/** The statements of a simple query that would pin a session on RDS Proxy. */
function pinsOf(sql: string): string[] {
  const found: string[] = [];
  for (const statement of sql.split(";")) {
    const s = statement.trim();
    if (/^SET\s+(?!LOCAL\b)/i.test(s) || /^SET\s+SESSION\b/i.test(s)) found.push(`session SET: ${s.slice(0, 80)}`);
    if (/^CREATE\s+(?:GLOBAL\s+|LOCAL\s+)?TEMP(?:ORARY)?\s+TABLE/i.test(s))
      found.push(`temporary table: ${s.slice(0, 80)}`);
    if (/^PREPARE\s/i.test(s)) found.push(`PREPARE: ${s.slice(0, 80)}`);
  }
  if (/pg_advisory_(?:xact_)?lock/i.test(sql)) found.push(`advisory lock: ${sql.slice(0, 80)}`);
  return found;
}

/**
 * Starts the stand-in before `upstreamPort`; `firstDelayMs` holds the first connection that passes startup before
 * it is forwarded (later ones pass at once, as a resumed cluster answers).
 */
export async function startPgProxy(upstreamPort: number, firstDelayMs: number): Promise<PgProxy> {
  const startups: Record<string, string>[] = [];
  const pins: string[] = [];
  const refused: string[] = [];
  let first = true;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => undefined);
    let buffered = Buffer.alloc(0);
    let upstream: Socket | undefined;
    let started = false;
    let ended = false;
    /** Client → server messages after startup, read for what would pin the session. */
    let pending = Buffer.alloc(0);
    const watch = (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 5) {
        const length = pending.readInt32BE(1);
        if (pending.length < 1 + length) break;
        const type = String.fromCharCode(pending[0] ?? 0);
        const body = pending.subarray(5, 1 + length);
        if (type === "Q") pins.push(...pinsOf(body.toString("utf8").replace(/\0$/, "")));
        if (type === "P") {
          const end = body.indexOf(0);
          const name = body.subarray(0, end).toString("utf8");
          const query = body.subarray(end + 1, body.indexOf(0, end + 1)).toString("utf8");
          if (name !== "") pins.push(`named prepared statement: ${name}`);
          pins.push(...pinsOf(query));
        }
        pending = pending.subarray(1 + length);
      }
    };
    const onData = (chunk: Buffer) => {
      if (ended) return;
      if (started) {
        watch(chunk);
        upstream?.write(chunk);
        return;
      }
      buffered = Buffer.concat([buffered, chunk]);
      if (buffered.length < 8) return;
      const length = buffered.readInt32BE(0);
      if (buffered.length < length) return;
      const code = buffered.readInt32BE(4);
      if (code === SSL_REQUEST || code === GSS_REQUEST) {
        // No TLS here (the tests connect with sslmode=disable): "N", and the startup message follows.
        buffered = buffered.subarray(length);
        client.write("N");
        if (buffered.length > 0) onData(Buffer.alloc(0));
        return;
      }
      const startup = buffered.subarray(0, length);
      const rest = buffered.subarray(length);
      const params = startup.subarray(8).toString("utf8").split("\0");
      const named: Record<string, string> = {};
      for (let i = 0; i + 1 < params.length; i += 2) if (params[i]) named[params[i] as string] = params[i + 1] ?? "";
      if ("options" in named) {
        refused.push(named.application_name ?? "");
        ended = true;
        client.end(fatal("0A000", "Feature not supported: RDS Proxy currently doesn't support command-line options."));
        return;
      }
      started = true;
      startups.push(named);
      client.pause();
      const delay = first ? firstDelayMs : 0;
      first = false;
      setTimeout(() => {
        if (client.destroyed) return;
        upstream = connect(upstreamPort, "127.0.0.1", () => {
          upstream?.write(startup);
          if (rest.length > 0) {
            watch(rest);
            upstream?.write(rest);
          }
          client.resume();
        });
        sockets.add(upstream);
        upstream.on("data", (d: Buffer) => client.write(d));
        upstream.on("error", () => client.destroy());
        upstream.on("close", () => client.end());
        client.on("close", () => upstream?.destroy());
      }, delay);
    };
    client.on("data", onData);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    startups,
    refused,
    pins,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

/** The login mapgate owns its hosted data with: a password with every character a URI or a GDAL string must escape. */
export const HOST_LOGIN = { user: "mapgate_host", password: `host'pw;@:/${Math.random().toString(36).slice(2)}` };

/**
 * The hosting database as the postgis suites run it: `db` with HOST_LOGIN allowed to make schemas in its database
 * (a schema per service, nothing more), behind the proxy stand-in holding the first connection `firstDelayMs`, and
 * the MAPGATE_HOSTED_DATABASE value that reaches it through the proxy.
 */
export async function hostThroughProxy(
  db: { port: number; database: string; admin: { query(sql: string): Promise<unknown> } },
  firstDelayMs: number,
): Promise<{ proxy: PgProxy; env: { MAPGATE_HOSTED_DATABASE: string } }> {
  const { user, password } = HOST_LOGIN;
  await db.admin.query(`CREATE ROLE ${user} LOGIN PASSWORD '${password.replaceAll("'", "''")}'`);
  await db.admin.query(`GRANT CREATE ON DATABASE ${db.database} TO ${user}`);
  const proxy = await startPgProxy(db.port, firstDelayMs);
  const uri = `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${proxy.port}/${db.database}?sslmode=disable`;
  return { proxy, env: { MAPGATE_HOSTED_DATABASE: uri } };
}

/** GDAL's PG: connection string for HOST_LOGIN straight to `db` (not through the proxy), with `extra` options. */
export const hostGdalSource = (db: { port: number; database: string }, extra = "") =>
  `PG:host=127.0.0.1 port=${db.port} dbname=${db.database} user=${HOST_LOGIN.user} password='${HOST_LOGIN.password.replaceAll("'", "\\'")}'${extra}`;
