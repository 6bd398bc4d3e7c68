// The local engine's data folder: dynalite's LevelDB files, the TLS key and certificate, the token key,
// and a lock naming the one process that owns it (dynalite cannot share a folder between processes).
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { generate } from "selfsigned";

/** The data folder's folder of database stores' passwords (shared/stores/datastore-secrets.ts). */
export const DATASTORE_SECRETS_FOLDER = "datastore-secrets";

/** The data folder's folder of files users uploaded as items (shared/stores/item-files.ts). */
export const ITEM_FILES_FOLDER = "item-files";

/** The data folder's folder of hosted layers' data, one GeoPackage per service (shared/hosted/geopackage-store.ts). */
export const HOSTED_DATA_FOLDER = "hosted";

/** The hosting database's password (MAPGATE_HOSTED_DATABASE), owner-only, as `{"password": …}`. */
export const HOSTED_DATABASE_SECRET_FILE = "hosted-database.json";

/** The first start's demo passwords, readable by the user alone (mode 0600). */
export const DEMO_PASSWORDS_FILE = "demo-passwords.txt";
/** Where the engine's log (one JSON line per request, task and warning) goes when it runs in a terminal. */
export const LOG_FILE = "mapgate.log";

export interface DemoPassword {
  readonly username: string;
  readonly role: string;
  /** The generated password, or where it came from (an environment variable). */
  readonly password: string;
}

const passwordLine = (p: DemoPassword) => `${p.username.padEnd(10)} ${p.role.padEnd(14)} ${p.password}`;

/** Writes the demo users' passwords for the user alone (0600, the folder itself is 0700). */
export async function writeDemoPasswords(
  root: string,
  signInUrl: string,
  users: readonly DemoPassword[],
): Promise<string> {
  const file = join(root, DEMO_PASSWORDS_FILE);
  const text = [
    "# mapgate demo users, written on the first start; readable by you alone.",
    "# Keep them elsewhere and delete this file if you like; `npm run admin -- reset-password --user <name>` sets a new one.",
    `# Sign in at ${signInUrl}`,
    ...users.map(passwordLine),
    "",
  ].join("\n");
  await writePrivate(file, text);
  return file;
}

/** After a reset the file no longer holds that user's password: its line says so instead. */
export async function markPasswordReset(root: string, username: string, when = new Date()): Promise<void> {
  const file = join(root, DEMO_PASSWORDS_FILE);
  const text = await readFile(file, "utf8").catch(() => undefined);
  if (text === undefined) return;
  const lines = text.split("\n").map((line) => {
    const [name, role] = line.split(/ +/);
    return !line.startsWith("#") && name === username && role
      ? passwordLine({
          username,
          role,
          password: `(reset ${when.toISOString()} with npm run admin -- reset-password: shown once, not kept here)`,
        })
      : line;
  });
  await writePrivate(file, lines.join("\n"));
}

export class FolderInUseError extends Error {
  constructor(folder: string, pid: number) {
    super(
      `the data folder ${folder} is in use by another mapgate engine (process ${pid}); stop it first or set MAPGATE_DATA_DIR to another folder`,
    );
    this.name = "FolderInUseError";
  }
}

export interface DataFolder {
  readonly root: string;
  readonly dynamoPath: string;
  /** The local store's transaction journal: beside dynalite's files, so a crashed transaction is undone. */
  readonly transactionJournal: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly tokenKeyFile: string;
  readonly stateFile: string;
  release(): Promise<void>;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * Takes the folder's lock: a file holding the owner's pid, created complete in one step (written
 * elsewhere, then hard-linked into place), so no one ever reads a half-written lock and takes it as stale.
 */
async function lock(file: string): Promise<void> {
  const staging = `${file}.${process.pid}.${Date.now()}`;
  await writeFile(staging, String(process.pid), { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        await link(staging, file);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
        const holder = await readFile(file, "utf8").catch(() => "");
        const pid = Number(holder.trim());
        if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid))
          throw new FolderInUseError(file, pid);
        // The owner died without cleaning up: remove its lock, but only if it is still that same lock.
        if ((await readFile(file, "utf8").catch(() => "")) === holder) await rm(file, { force: true });
      }
    }
    throw new Error(`could not take the lock ${file}`);
  } finally {
    await rm(staging, { force: true });
  }
}

/** Removes the lock only while it is ours: a process that lost the race never deletes the winner's. */
async function unlock(file: string): Promise<void> {
  const holder = await readFile(file, "utf8").catch(() => "");
  if (holder.trim() === String(process.pid)) await rm(file, { force: true });
}

async function writePrivate(file: string, content: string): Promise<void> {
  await writeFile(file, content, { mode: 0o600 });
  await chmod(file, 0o600);
}

async function ensureCertificate(certFile: string, keyFile: string, hostName: string): Promise<void> {
  if (existsSync(certFile) && existsSync(keyFile)) return;
  const names = [...new Set(["localhost", hostName])];
  const pems = await generate([{ name: "commonName", value: hostName }], {
    keyType: "ec",
    curve: "P-256",
    algorithm: "sha256",
    notAfterDate: new Date(Date.now() + 825 * 24 * 3600 * 1000),
    extensions: [
      { name: "basicConstraints", cA: false },
      { name: "keyUsage", digitalSignature: true, keyEncipherment: true },
      { name: "extKeyUsage", serverAuth: true },
      {
        name: "subjectAltName",
        altNames: [
          ...names.map((value) => ({ type: 2 as const, value })),
          { type: 7 as const, ip: "127.0.0.1" },
          { type: 7 as const, ip: "::1" },
        ],
      },
    ],
  });
  await writePrivate(keyFile, pems.private);
  await writePrivate(certFile, pems.cert);
}

async function ensureTokenKey(file: string): Promise<void> {
  if (existsSync(file)) return;
  const key = { kid: `k${Date.now().toString(36)}`, k: randomBytes(32).toString("base64url") };
  await writePrivate(file, JSON.stringify(key));
}

/** Opens (creating on first use) the data folder and takes its lock. */
export async function openDataFolder(root: string, hostName: string): Promise<DataFolder> {
  await mkdir(root, { recursive: true, mode: 0o700 });
  const lockFile = join(root, "engine.lock");
  await lock(lockFile);
  const folder: DataFolder = {
    root,
    dynamoPath: join(root, "dynamodb"),
    transactionJournal: join(root, "dynamodb.journal"),
    certFile: join(root, "tls-cert.pem"),
    keyFile: join(root, "tls-key.pem"),
    tokenKeyFile: join(root, "token-key.json"),
    stateFile: join(root, "engine.json"),
    release: async () => {
      await rm(folder.stateFile, { force: true });
      await unlock(lockFile);
    },
  };
  try {
    await mkdir(folder.dynamoPath, { recursive: true, mode: 0o700 });
    await ensureCertificate(folder.certFile, folder.keyFile, hostName);
    await ensureTokenKey(folder.tokenKeyFile);
  } catch (err) {
    await folder.release();
    throw err;
  }
  return folder;
}
