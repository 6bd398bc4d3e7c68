// The two ways people hand mapgate a PostgreSQL database: a libpq URI (`postgresql://user:pw@host:5432/db`)
// and the connection string ArcGIS writes for an enterprise geodatabase (`SERVER=…;INSTANCE=sde:postgresql:
// host,port;DBCLIENT=postgresql;DATABASE=…;USER=…;PASSWORD=…;AUTHENTICATION_MODE=DBMS`). Both become one
// PostgresConnection and the password apart from it, so the password can go to a secret and nowhere else.
// Errors name the part that is wrong and never repeat the input (it may hold the password).
import { type PostgresConnection, SSL_MODES, type SslMode } from "#shared/stores/datastores.ts";

export class ConnectionStringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConnectionStringError";
  }
}

export interface ParsedConnection {
  readonly connection: PostgresConnection;
  readonly password: string;
}

/** Longer than any real connection string; bounds the work of parsing one. */
export const MAX_CONNECTION_STRING = 4096;
const DEFAULT_PORT = 5432;
/** A host name or an IPv4/IPv6 literal; nothing that could carry a second host, a path or options. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*|[0-9A-Fa-f:.]{2,45})$/;
/** PostgreSQL's identifiers are at most 63 bytes; a control character is never part of one. */
const NAME_MAX = 63;

function checkName(what: string, value: string): string {
  if (value === "") throw new ConnectionStringError(`the connection string has no ${what}`);
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused here.
  if (Buffer.byteLength(value) > NAME_MAX || /[\u0000-\u001f\u007f]/.test(value))
    throw new ConnectionStringError(`the ${what} is not a PostgreSQL name (at most 63 bytes, no control characters)`);
  return value;
}

function checkHost(value: string): string {
  if (value.length > 253 || !HOST.test(value))
    throw new ConnectionStringError("the host is not a host name or IP address");
  return value.toLowerCase();
}

function checkPort(value: string): number {
  const port = /^\d{1,5}$/.test(value) ? Number(value) : Number.NaN;
  if (!(port >= 1 && port <= 65535)) throw new ConnectionStringError("the port is not a number from 1 to 65535");
  return port;
}

function checkSslMode(value: string | undefined): SslMode {
  if (value === undefined) return "prefer";
  // libpq's allow and verify-ca are answered by the nearest mode node-postgres keeps.
  const v = value.toLowerCase();
  const mode = v === "allow" ? "prefer" : v === "verify-ca" ? "verify-full" : v;
  if (!(SSL_MODES as readonly string[]).includes(mode))
    throw new ConnectionStringError(`sslmode must be one of disable, allow, prefer, require, verify-ca, verify-full`);
  return mode as SslMode;
}

function decode(what: string, value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    throw new ConnectionStringError(`the ${what} holds a malformed %-escape`);
  }
}

/** `postgresql://[user[:password]@]host[:port]/database[?sslmode=…]` (one host; `postgres://` too). */
function parseUri(text: string): ParsedConnection {
  const scheme = /^postgres(?:ql)?:\/\//i.exec(text);
  if (!scheme) throw new ConnectionStringError("a URI must start with postgresql://");
  let rest = text.slice(scheme[0].length);
  const q = rest.indexOf("?");
  const query = q < 0 ? "" : rest.slice(q + 1);
  rest = q < 0 ? rest : rest.slice(0, q);
  const slash = rest.indexOf("/");
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const database = slash < 0 ? "" : decode("database", rest.slice(slash + 1));
  // The password may hold '@' when escaped only; the last '@' ends the user information.
  const at = authority.lastIndexOf("@");
  const userinfo = at < 0 ? "" : authority.slice(0, at);
  const hostport = at < 0 ? authority : authority.slice(at + 1);
  const colon = userinfo.indexOf(":");
  const user = decode("user", colon < 0 ? userinfo : userinfo.slice(0, colon));
  const password = colon < 0 ? "" : decode("password", userinfo.slice(colon + 1));
  if (hostport.includes(",")) throw new ConnectionStringError("give one host (a list of hosts is not supported)");
  let host = hostport;
  let port = String(DEFAULT_PORT);
  const bracket = /^\[([^\]]*)\](?::(.*))?$/.exec(hostport);
  if (bracket) {
    host = bracket[1] ?? "";
    if (bracket[2] !== undefined) port = bracket[2];
  } else {
    const c = hostport.lastIndexOf(":");
    if (c >= 0) {
      host = hostport.slice(0, c);
      port = hostport.slice(c + 1);
    }
  }
  let sslmode: string | undefined;
  for (const pair of query === "" ? [] : query.split("&")) {
    const eq = pair.indexOf("=");
    const key = decode("option", eq < 0 ? pair : pair.slice(0, eq));
    const value = decode("option", eq < 0 ? "" : pair.slice(eq + 1));
    if (key === "sslmode") sslmode = value;
    else if (key === "user" || key === "password" || key === "dbname" || key === "host" || key === "port")
      throw new ConnectionStringError(`give ${key} in the URI itself, not as an option`);
    else
      throw new ConnectionStringError(`the option ${JSON.stringify(key.slice(0, 40))} is not supported (only sslmode)`);
  }
  return {
    connection: {
      host: checkHost(decode("host", host)),
      port: checkPort(port),
      database: checkName("database", database),
      user: checkName("user", user),
      sslmode: checkSslMode(sslmode),
    },
    password,
  };
}

const ARCGIS_KEYS = new Set([
  "SERVER",
  "INSTANCE",
  "DBCLIENT",
  "DB_CONNECTION_PROPERTIES",
  "DATABASE",
  "USER",
  "PASSWORD",
  "ENCRYPTED_PASSWORD",
  "AUTHENTICATION_MODE",
  "VERSION",
  "BRANCH",
  "SSLMODE",
]);

/** `SERVER=…;INSTANCE=sde:postgresql:host[,port];DBCLIENT=postgresql;DATABASE=…;USER=…;PASSWORD=…;…` */
function parseArcGis(text: string): ParsedConnection {
  const values = new Map<string, string>();
  for (const part of text.split(";")) {
    if (part.trim() === "") continue;
    const eq = part.indexOf("=");
    if (eq < 0) throw new ConnectionStringError("each part of the connection string is KEY=value");
    const key = part.slice(0, eq).trim().toUpperCase();
    if (!ARCGIS_KEYS.has(key))
      throw new ConnectionStringError(
        `the key ${JSON.stringify(key.slice(0, 40))} is not one of ${[...ARCGIS_KEYS].join(", ")}`,
      );
    if (values.has(key)) throw new ConnectionStringError(`the key ${key} is given twice`);
    // The password is kept exactly; other values lose the spaces around them.
    values.set(key, key === "PASSWORD" ? part.slice(eq + 1) : part.slice(eq + 1).trim());
  }
  if (values.has("ENCRYPTED_PASSWORD"))
    throw new ConnectionStringError("an ENCRYPTED_PASSWORD can only be read by ArcGIS: give PASSWORD instead");
  const client = values.get("DBCLIENT");
  if (client !== undefined && client.toLowerCase() !== "postgresql")
    throw new ConnectionStringError("only DBCLIENT=postgresql is supported");
  const mode = values.get("AUTHENTICATION_MODE");
  if (mode !== undefined && mode.toUpperCase() !== "DBMS")
    throw new ConnectionStringError("only AUTHENTICATION_MODE=DBMS (a database user and password) is supported");
  // INSTANCE is `sde:postgresql:<host>[,<port>]` (or just `<host>[,<port>]`); SERVER alone names the host.
  const instance = values.get("INSTANCE") ?? values.get("DB_CONNECTION_PROPERTIES") ?? values.get("SERVER") ?? "";
  const target = instance.replace(/^sde:postgresql:/i, "");
  if (/^sde:/i.test(target)) throw new ConnectionStringError("the INSTANCE is not sde:postgresql:<host>[,<port>]");
  const comma = target.lastIndexOf(",");
  const host = comma < 0 ? target : target.slice(0, comma);
  const port = comma < 0 ? String(DEFAULT_PORT) : target.slice(comma + 1).trim();
  if (host === "") throw new ConnectionStringError("the connection string has no host (INSTANCE or SERVER)");
  return {
    connection: {
      host: checkHost(host.trim()),
      port: checkPort(port),
      database: checkName("database", values.get("DATABASE") ?? ""),
      user: checkName("user", values.get("USER") ?? ""),
      sslmode: checkSslMode(values.get("SSLMODE")),
    },
    password: values.get("PASSWORD") ?? "",
  };
}

/** A connection string in either form: its connection and its password (empty when it gives none). */
export function parseConnectionString(text: string): ParsedConnection {
  if (text.length > MAX_CONNECTION_STRING)
    throw new ConnectionStringError(`a connection string is at most ${MAX_CONNECTION_STRING} characters`);
  const trimmed = text.trim();
  return /^postgres(?:ql)?:/i.test(trimmed) ? parseUri(trimmed) : parseArcGis(trimmed);
}

/** How a connection is shown (registration answers, logs, item data): the password never, not even its length. */
export function redactedConnectionString(c: PostgresConnection): string {
  const host = c.host.includes(":") ? `[${c.host}]` : c.host;
  const user = encodeURIComponent(c.user);
  return `postgresql://${user}:********@${host}:${c.port}/${encodeURIComponent(c.database)}?sslmode=${c.sslmode}`;
}
