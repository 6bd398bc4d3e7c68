// What `npm start` shows on its terminal: the engine's log goes to a file when a person is watching (so nothing
// scrolls the start-up notes away), and the demo passwords are printed in a box after the ready line and kept in
// an owner-only file of the data folder.
import { createWriteStream, existsSync, mkdirSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { PORTAL_ROOT } from "#shared/urls.ts";
import { setLogDestination } from "#shared/log.ts";
import { DEMO_PASSWORDS_FILE, type DemoPassword, LOG_FILE, writeDemoPasswords } from "./data-folder.ts";

/** Powertools' WARN level: lines at or above it are shown on the terminal too when the log goes to a file. */
const WARN = 16;

export interface LogChoice {
  /** The log file, or undefined when the log goes to standard output. */
  readonly file: string | undefined;
  /** Writes text (whole lines) to the log: where the engine sends its metric lines. */
  readonly write: (text: string) => void;
  close(): Promise<void>;
}

/**
 * Where the log goes: MAPGATE_LOG names a file (relative to the working folder) or `-` for standard output;
 * unset, it goes to the data folder's mapgate.log when standard output is a terminal, and to standard output
 * otherwise (a script or a pipe such as `npm start | tee log` keeps reading it there). With a file, warnings and
 * errors are also shown on the terminal, one short line each, naming what the line is about when it says (its
 * `layer` or `service` field).
 */
export function chooseLog(dataDir: string, setting: string | undefined, terminal: boolean): LogChoice {
  const toStdout = setting === "-" || setting === "stdout" || ((setting === undefined || setting === "") && !terminal);
  if (toStdout) return { file: undefined, write: (text) => process.stdout.write(text), close: async () => undefined };
  const file = setting ? (isAbsolute(setting) ? setting : resolve(setting)) : join(dataDir, LOG_FILE);
  if (!setting) mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const stream = createWriteStream(file, { flags: "a", mode: 0o600 });
  stream.on("error", (err) => {
    process.stderr.write(`mapgate: cannot write the log ${file}: ${err.message}\n`);
  });
  setLogDestination((line, level) => {
    stream.write(`${line}\n`);
    if (level < WARN) return;
    let message = "";
    try {
      const parsed = JSON.parse(line) as { level?: unknown; message?: unknown; layer?: unknown; service?: unknown };
      const about = [parsed.layer, parsed.service].find((v) => typeof v === "string");
      message = `${String(parsed.level ?? "").toLowerCase()}: ${String(parsed.message ?? "")}${about ? `: ${String(about).slice(0, 300)}` : ""}`;
    } catch {
      message = "a warning";
    }
    process.stderr.write(`mapgate: ${message} (details in ${file})\n`);
  });
  return {
    file,
    write: (text) => stream.write(text),
    close: () => new Promise<void>((done) => stream.end(() => done())),
  };
}

/** Draws lines in a box (plain box-drawing characters; widths counted in code points). */
export function box(lines: readonly string[]): string {
  const width = Math.max(...lines.map((l) => [...l].length));
  const pad = (l: string) => l + " ".repeat(width - [...l].length);
  return [`┌${"─".repeat(width + 2)}┐`, ...lines.map((l) => `│ ${pad(l)} │`), `└${"─".repeat(width + 2)}┘`].join("\n");
}

export interface StartNotes {
  readonly dataDir: string;
  readonly httpsUrl: string;
  /** The demo users created by this start (undefined on a later start). */
  readonly created: readonly { username: string; role: string; generatedPassword?: string }[] | undefined;
  readonly log: LogChoice;
}

const fromEnvironment: Readonly<Record<string, string>> = {
  admin: "MAPGATE_ADMIN_PASSWORD",
  publisher: "MAPGATE_PUBLISHER_PASSWORD",
  user: "MAPGATE_USER_PASSWORD",
};

/**
 * The notes printed after the ready line. On the first start the demo passwords are written to an owner-only
 * file of the data folder before they are shown.
 */
export async function startNotes(notes: StartNotes): Promise<string> {
  const signIn = `${notes.httpsUrl}${PORTAL_ROOT}/oauth2/signin`;
  const lines = ["mapgate is running.", `Sign in: ${signIn}`];
  const file = join(notes.dataDir, DEMO_PASSWORDS_FILE);
  if (notes.created) {
    const users: DemoPassword[] = notes.created.map((u) => ({
      username: u.username,
      role: u.role,
      password: u.generatedPassword ?? `(from ${fromEnvironment[u.username] ?? "the environment"})`,
    }));
    await writeDemoPasswords(notes.dataDir, signIn, users);
    lines.push(
      "Demo users (created now):",
      ...users.map((u) => `  ${u.username.padEnd(10)} ${u.role.padEnd(14)} ${u.password}`),
      `Also kept in ${file} (readable by you alone).`,
    );
  } else if (existsSync(file)) {
    lines.push(`Demo users: admin, publisher, user; passwords in ${file}.`);
  } else {
    lines.push("Demo users: admin, publisher, user (passwords as set on the first start).");
  }
  lines.push("A new password: npm run admin -- reset-password --user <name>");
  lines.push(
    notes.log.file
      ? `Log: ${notes.log.file} (warnings are shown here too; MAPGATE_LOG=- prints it all here).`
      : "Log: standard output (MAPGATE_LOG=<file> sends it to a file).",
  );
  lines.push("Stop: Ctrl+C.");
  return box(lines);
}
