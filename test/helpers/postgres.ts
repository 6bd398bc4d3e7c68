// A throwaway PostgreSQL cluster with PostGIS for a test file: initdb into a temporary folder, started by
// pg_ctl on a loopback port (and its own socket folder), stopped and removed after. A superuser for setting
// up, and a read-only login for data stores (as a careful administrator would give mapgate). When the tests
// run as root, PostgreSQL (which refuses to run as root) runs as the `postgres` user the package creates.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import pg from "pg";

export interface Postgres {
  readonly port: number;
  readonly database: string;
  /** A superuser's client of the test database (for setting up, and for checking what is there; a new one after restart). */
  readonly admin: pg.Client;
  /** The superuser's name and password. */
  readonly superuser: { readonly user: string; readonly password: string };
  /** A login that may only read, and its password: what a data store is registered with. */
  readonly reader: { readonly user: string; readonly password: string };
  readonly uri: (user?: string, password?: string) => string;
  stop(): Promise<void>;
  restart(): Promise<void>;
  /** Stops the server, leaving its files (to see what mapgate does with its database down). */
  halt(): Promise<void>;
}

export function postgresBin(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "postgres")))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], "bin") : undefined;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      server.close(() => resolve(typeof address === "object" && address ? address.port : 0));
    });
  });
}

const SUPERUSER = "mapgate_admin";

export async function startPostgres(): Promise<Postgres> {
  const bin = postgresBin();
  if (!bin) throw new Error("PostgreSQL is not installed (the postgresql package; .ci/run installs it)");
  const root = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "mapgate-pg-"));
  const data = join(dir, "data");
  const adminPassword = `admin-${Math.random().toString(36).slice(2)}`;
  const pwfile = join(dir, "pw");
  writeFileSync(pwfile, adminPassword);
  let runAs: string[] = [];
  if (root) {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim());
    chownSync(dir, uid, gid);
    chownSync(pwfile, uid, gid);
    chmodSync(dir, 0o700);
    runAs = ["runuser", "-u", "postgres", "--"];
  }
  const run = (program: string, args: string[]) => {
    const [cmd, ...rest] = [...runAs, join(bin, program), ...args];
    return execFileSync(cmd as string, rest, { stdio: ["ignore", "pipe", "pipe"], cwd: dir });
  };
  run("initdb", [
    "-D",
    data,
    "-U",
    SUPERUSER,
    `--pwfile=${pwfile}`,
    "--auth-host=scram-sha-256",
    "--auth-local=scram-sha-256",
    "-E",
    "UTF8",
    "--locale=C",
    "-N",
  ]);
  const port = await freePort();
  const options = [
    `-p ${port}`,
    "-h 127.0.0.1",
    `-k ${dir}`,
    "-c fsync=off",
    "-c full_page_writes=off",
    "-c synchronous_commit=off",
    "-c max_connections=60",
    "-c shared_buffers=32MB",
  ].join(" ");
  const start = () => run("pg_ctl", ["-D", data, "-o", options, "-l", join(dir, "log"), "-w", "-t", "60", "start"]);
  const halt = () => run("pg_ctl", ["-D", data, "-m", "fast", "-w", "stop"]);
  start();
  const database = "gis";
  const connect = async (db: string) => {
    const client = new pg.Client({ host: "127.0.0.1", port, user: SUPERUSER, password: adminPassword, database: db });
    // A test that halts the server ends this connection: that is expected, not a crash.
    client.on("error", () => undefined);
    await client.connect();
    return client;
  };
  const bootstrap = await connect("postgres");
  await bootstrap.query(`CREATE DATABASE ${database}`);
  await bootstrap.end();
  let admin = await connect(database);
  await admin.query("CREATE EXTENSION postgis");
  const reader = { user: "mapgate_reader", password: `read'er;@:/pw-${Math.random().toString(36).slice(2)}` };
  await admin.query(`CREATE ROLE ${reader.user} LOGIN PASSWORD '${reader.password.replaceAll("'", "''")}'`);
  await admin.query(`GRANT USAGE ON SCHEMA public TO ${reader.user}`);
  await admin.query(`ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO ${reader.user}`);
  let stopped = false;
  const handle: Postgres = {
    port,
    database,
    get admin() {
      return admin;
    },
    superuser: { user: SUPERUSER, password: adminPassword },
    reader,
    uri: (user = reader.user, password = reader.password) =>
      `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}?sslmode=disable`,
    stop: async () => {
      if (stopped) return;
      stopped = true;
      await admin.end().catch(() => undefined);
      try {
        run("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      } catch {
        // Already halted by the test.
      }
      rmSync(dir, { recursive: true, force: true });
    },
    halt: async () => {
      halt();
    },
    restart: async () => {
      start();
      await admin.end().catch(() => undefined);
      admin = await connect(database);
    },
  };
  return handle;
}

/** The WKB inside a GeoPackage geometry blob (past its header and envelope). */
export function gpkgWkb(blob: Uint8Array): Buffer {
  const flags = blob[3] ?? 0;
  const envelope = [0, 32, 48, 48, 64][(flags >> 1) & 0x07] ?? 0;
  return Buffer.from(blob.subarray(8 + envelope));
}

const PG_TYPES: readonly [RegExp, string][] = [
  [/^INTEGER$/i, "bigint"],
  [/^(BOOLEAN|TINYINT|SMALLINT)$/i, "smallint"],
  [/^(MEDIUMINT|INT)$/i, "integer"],
  [/^(REAL|DOUBLE)$/i, "double precision"],
  [/^FLOAT$/i, "real"],
  [/^TEXT\((\d+)\)$/i, "varchar($1)"],
  [/^TEXT$/i, "text"],
  [/^DATE$/i, "date"],
  [/^DATETIME$/i, "timestamptz"],
  [/^BLOB$/i, "bytea"],
];

/**
 * Copies a GeoPackage table into PostGIS as `schema.table` with the same columns (types mapped as a careful
 * loader maps them: what mapgate answers for each must be the same), its integer key as primary key, its
 * geometry column typed and indexed.
 */
export async function copyGeoPackageTable(
  file: string,
  table: string,
  client: pg.Client,
  target = `public.${table}`,
): Promise<number> {
  const db = new DatabaseSync(file, { readOnly: true });
  try {
    const columns = db.prepare(`SELECT name, type, pk, "notnull" FROM pragma_table_info(?)`).all(table) as {
      name: string;
      type: string;
      pk: number;
      notnull: number;
    }[];
    const g = db
      .prepare("SELECT column_name, geometry_type_name, srs_id FROM gpkg_geometry_columns WHERE table_name = ?")
      .get(table) as { column_name: string; geometry_type_name: string; srs_id: number } | undefined;
    const q = (s: string) => `"${s.replaceAll('"', '""')}"`;
    const definitions = columns.map((c) => {
      if (g && c.name === g.column_name) return `${q(c.name)} geometry(${g.geometry_type_name}, ${g.srs_id})`;
      const mapped = PG_TYPES.find(([re]) => re.test(c.type.trim()));
      const type = mapped ? c.type.trim().replace(mapped[0], mapped[1]) : "text";
      return `${q(c.name)} ${c.pk ? "integer PRIMARY KEY" : type}${c.notnull && !c.pk ? " NOT NULL" : ""}`;
    });
    await client.query(`CREATE TABLE ${target} (${definitions.join(", ")})`);
    const rows = db.prepare(`SELECT * FROM ${q(table)} ORDER BY 1`).all() as Record<string, unknown>[];
    const names = columns.map((c) => c.name);
    for (let i = 0; i < rows.length; i += 2000) {
      const batch = rows.slice(i, i + 2000);
      const values: unknown[] = [];
      const tuples = batch.map((row) => {
        const cells = names.map((n) => {
          let v = row[n];
          if (g && n === g.column_name) {
            values.push(v instanceof Uint8Array ? gpkgWkb(v) : null);
            return `ST_SetSRID(ST_GeomFromWKB($${values.length}), ${g.srs_id})`;
          }
          if (typeof v === "bigint") v = Number(v);
          if (v instanceof Uint8Array) v = Buffer.from(v);
          values.push(v ?? null);
          return `$${values.length}`;
        });
        return `(${cells.join(", ")})`;
      });
      await client.query(`INSERT INTO ${target} (${names.map(q).join(", ")}) VALUES ${tuples.join(", ")}`, values);
    }
    if (g) await client.query(`CREATE INDEX ON ${target} USING gist (${q(g.column_name)})`);
    await client.query(`ANALYZE ${target}`);
    return rows.length;
  } finally {
    db.close();
  }
}

/** A tiny server on loopback that accepts connections and never answers: a database host that swallows packets. */
export async function blackHole(): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<Socket>();
  const server: Server = createServer((s) => {
    sockets.add(s);
    s.on("error", () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : 0,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}
