// `npm start`: the whole system on this machine. Configuration comes from documented environment
// variables (see docs/local-engine.md), so scripts and several instances can run side by side.
// Before any store or handler module loads: the engine's SDK clients reach its store in-process.
import "./in-process-dynamo.ts";
import { resolve } from "node:path";
import { chooseLog, startNotes } from "./console.ts";
import { FolderInUseError } from "./data-folder.ts";
import { startEngine } from "./engine.ts";

function port(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 65535) {
    console.error(`mapgate: ${name} must be a port number (0 picks a free one), got ${JSON.stringify(raw)}`);
    process.exit(2);
  }
  return n;
}

const host = process.env.MAPGATE_HOST || "localhost";
const dataDir = resolve(process.env.MAPGATE_DATA_DIR || ".mapgate");
const allSSL = process.env.MAPGATE_ALL_SSL;
const log = chooseLog(dataDir, process.env.MAPGATE_LOG, process.stdout.isTTY === true);

const hostedDatabase = process.env.MAPGATE_HOSTED_DATABASE;
// It holds a password: not left in the environment the functions (and anything they start) see.
delete process.env.MAPGATE_HOSTED_DATABASE;

let engine: Awaited<ReturnType<typeof startEngine>>;
try {
  engine = await startEngine({
    dataDir,
    host,
    httpsPort: port("MAPGATE_HTTPS_PORT", 8443),
    httpPort: port("MAPGATE_HTTP_PORT", 8080),
    metrics: log.write,
    ...(allSSL ? { allSSL: allSSL === "true" } : {}),
    ...(hostedDatabase ? { hostedDatabase } : {}),
    passwords: {
      ...(process.env.MAPGATE_ADMIN_PASSWORD ? { admin: process.env.MAPGATE_ADMIN_PASSWORD } : {}),
      ...(process.env.MAPGATE_PUBLISHER_PASSWORD ? { publisher: process.env.MAPGATE_PUBLISHER_PASSWORD } : {}),
      ...(process.env.MAPGATE_USER_PASSWORD ? { user: process.env.MAPGATE_USER_PASSWORD } : {}),
    },
  });
} catch (err) {
  if (err instanceof FolderInUseError) {
    console.error(`mapgate: ${err.message}`);
    process.exit(3);
  }
  console.error("mapgate: could not start:", err instanceof Error ? err.message : err);
  process.exit(1);
}

const out = (line: string) => process.stdout.write(`${line}\n`);
out(`mapgate: data folder ${dataDir}`);
out(`mapgate: home        ${engine.httpsUrl}/  (open it in a browser; see below)`);
out(`mapgate: portal      ${engine.httpsUrl}/portal/sharing/rest`);
out(`mapgate: server      ${engine.httpsUrl}/arcgis/rest/info`);
out(`mapgate: plain HTTP  ${engine.httpUrl}/portal/sharing/rest`);
out(`mapgate: certificate ${engine.certFile}  (curl --cacert, or NODE_EXTRA_CA_CERTS for Node clients)`);
out(
  `mapgate: in a browser: trust that certificate (import it as an authority) or accept the warning once, then open ${engine.httpsUrl}/ ; or open ${engine.httpUrl}/ (plain HTTP, this machine only: public services, no sign-in; refused if the organization requires HTTPS)`,
);
out(
  `mapgate: AWS SDK endpoints for local callers: lambda ${engine.endpoints.lambda}  stepfunctions ${engine.endpoints.sfn}  eventbridge ${engine.endpoints.events}`,
);
if (engine.demo) out("mapgate: created the demo organization");
const notes = await startNotes({ dataDir, httpsUrl: engine.httpsUrl, created: engine.demo?.users, log });
// One line a script can wait for; everything after `ready ` is JSON. The notes follow it, so the passwords are
// the last thing on the screen.
out(
  `mapgate: ready ${JSON.stringify({ https: engine.httpsUrl, http: engine.httpUrl, cert: engine.certFile, pid: process.pid, aws: engine.endpoints })}`,
);
out(notes);

let stopping = false;
const shutdown = (signal: string) => {
  if (stopping) return;
  stopping = true;
  out(`mapgate: ${signal}: finishing requests in flight, then stopping`);
  engine.stop().then(
    async () => {
      out("mapgate: stopped");
      await log.close();
      process.exit(0);
    },
    (err) => {
      console.error("mapgate: stop failed:", err);
      process.exit(1);
    },
  );
};
process.on("SIGINT", () => shutdown("SIGINT"));
process.on("SIGTERM", () => shutdown("SIGTERM"));
