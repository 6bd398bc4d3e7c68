// The features figure's second peer, where it is installed (`npm run bench:setup`): MapServer 8's OGC API Features
// (Debian's cgi-mapserver, a C program) on the same GeoPackage table, run as FastCGI processes by lighttpd on loopback,
// as it is deployed. Its layer holds the figure's where clause as a FILTER (OGC API Features Part 1 has no attribute
// filter); the bbox and the page come with each request. Its answers are its own (GeoJSON, every attribute as text),
// so the bench checks it pages the same features in the same order, not the same bytes.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

const MAPSERV = "/usr/lib/cgi-bin/mapserv";
const LIGHTTPD = "/usr/sbin/lighttpd";
/** FastCGI processes: one a core, as the engine's function workers. */
const PROCESSES = 2;

export interface MapServerPeer {
  /** The items of the layer, without a query. */
  readonly items: string;
  readonly child: ChildProcess;
  stop(): void;
}

/** Why the peer cannot run here, or undefined when it can. */
export function mapServerMissing(): string | undefined {
  const missing = [MAPSERV, LIGHTTPD].filter((p) => !existsSync(p));
  return missing.length > 0
    ? `not installed (${missing.join(", ")}; \`npm run bench:setup\` installs Debian's cgi-mapserver and lighttpd)`
    : undefined;
}

/** The processes whose parent is `pid`, from /proc. */
function childrenOf(pid: number | undefined): number[] {
  if (pid === undefined) return [];
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      if (Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]) === pid) found.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return found;
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

/** A string in a mapfile: double-quoted, its quotes and backslashes escaped (MapServer's parser reads both). */
const quoted = (s: string) => `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/** A string in lighttpd's configuration, which reads no backslash escape: one it could misread is refused. */
function lighttpdString(s: string): string {
  if (/[\\"\n]/.test(s)) throw new Error(`lighttpd's configuration cannot hold ${JSON.stringify(s)}`);
  return `"${s}"`;
}

export async function startMapServer(
  file: string,
  table: string,
  key: string,
  where: { field: string; value: string },
): Promise<MapServerPeer> {
  const dir = mkdtempSync(join(tmpdir(), "mapgate-bench-mapserver-"));
  try {
    return await serveFrom(dir, file, table, key, where);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

async function serveFrom(
  dir: string,
  file: string,
  table: string,
  key: string,
  where: { field: string; value: string },
): Promise<MapServerPeer> {
  const port = await freePort();
  // OGC API needs a feature id among the items: the table's key, read as a column (OGR keeps its FID apart).
  writeFileSync(
    join(dir, "bench.map"),
    `MAP
  NAME "bench"
  EXTENT -180 -90 180 90
  PROJECTION "init=epsg:4326" END
  WEB
    METADATA
      "ows_title" "bench"
      "ows_srs" "EPSG:4326"
      "ows_enable_request" "*"
      "oga_enable_request" "*"
      "oga_onlineresource" ${quoted(`http://127.0.0.1:${port}/mapserv/bench/ogcapi`)}
      "oga_max_limit" "10000"
    END
  END
  LAYER
    NAME ${quoted(table)}
    TYPE POINT
    STATUS ON
    TEMPLATE "void"
    CONNECTIONTYPE OGR
    CONNECTION ${quoted(file)}
    DATA ${quoted(`SELECT "${key}" AS mapgate_oid, * FROM "${table}"`)}
    FILTER (${quoted(`[${where.field}]`)} = ${quoted(where.value)})
    PROJECTION "init=epsg:4326" END
    METADATA
      "ows_title" ${quoted(table)}
      "gml_include_items" "all"
      "oga_featureid" "mapgate_oid"
    END
  END
END
`,
  );
  writeFileSync(
    join(dir, "mapserver.conf"),
    `CONFIG\n  MAPS\n    "bench" ${quoted(join(dir, "bench.map"))}\n  END\nEND\n`,
  );
  writeFileSync(
    join(dir, "lighttpd.conf"),
    `server.document-root = ${lighttpdString(dir)}
server.bind = "127.0.0.1"
server.port = ${port}
server.modules = ("mod_fastcgi")
server.errorlog = ${lighttpdString(join(dir, "error.log"))}
fastcgi.server = ( "/mapserv" => ((
  "bin-path" => ${lighttpdString(MAPSERV)},
  "socket" => ${lighttpdString(join(dir, "mapserv.sock"))},
  "check-local" => "disable",
  "max-procs" => ${PROCESSES},
  "bin-environment" => ( "MAPSERVER_CONFIG_FILE" => ${lighttpdString(join(dir, "mapserver.conf"))} ),
)))
`,
  );
  const child = spawn(LIGHTTPD, ["-D", "-f", join(dir, "lighttpd.conf")], { stdio: ["ignore", "ignore", "inherit"] });
  let failed: Error | undefined;
  child.on("error", (err) => {
    failed = err;
  });
  const stop = () => {
    // lighttpd leaves its FastCGI processes running when it is stopped: they are found first and ended after it
    // (before it, it would start others in their place); killed, since one waiting for a request ends at its next.
    const backends = childrenOf(child.pid);
    child.kill("SIGTERM");
    for (const pid of backends) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
  };
  const items = `http://127.0.0.1:${port}/mapserv/bench/ogcapi/collections/${encodeURIComponent(table)}/items`;
  for (let i = 0; ; i++) {
    try {
      if (failed) throw failed;
      const res = await fetch(`${items}?f=json&limit=1`, { signal: AbortSignal.timeout(10_000) });
      if (res.ok) {
        await res.body?.cancel();
        break;
      }
      throw new Error(`MapServer answered ${res.status}: ${(await res.text()).slice(0, 200)}`);
    } catch (err) {
      if (i >= 100 || failed || child.exitCode !== null) {
        stop();
        throw err;
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    items,
    child,
    stop: () => {
      stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
