// Connection strings as people write them: libpq URIs and ArcGIS's enterprise geodatabase form, each part
// checked, the password apart, and no error that repeats what it was given.
import { describe, expect, it } from "vitest";
import {
  ConnectionStringError,
  MAX_CONNECTION_STRING,
  parseConnectionString,
  redactedConnectionString,
} from "#shared/stores/connection-string.ts";

const refused = (text: string) => {
  try {
    parseConnectionString(text);
  } catch (err) {
    expect(err).toBeInstanceOf(ConnectionStringError);
    return (err as Error).message;
  }
  throw new Error(`accepted: ${text}`);
};

describe("libpq URIs", () => {
  it("reads user, password, host, port, database and sslmode, %-escapes decoded", () => {
    expect(
      parseConnectionString("postgresql://gis%40team:p%40ss%3Aw%2Fo%3Brd@db.example.com:6543/maps?sslmode=require"),
    ).toEqual({
      connection: { host: "db.example.com", port: 6543, database: "maps", user: "gis@team", sslmode: "require" },
      password: "p@ss:w/o;rd",
    });
    expect(parseConnectionString("postgres://u@[::1]/d")).toEqual({
      connection: { host: "::1", port: 5432, database: "d", user: "u", sslmode: "prefer" },
      password: "",
    });
    expect(parseConnectionString("postgresql://u:p@127.0.0.1/d?sslmode=verify-ca").connection.sslmode).toBe(
      "verify-full",
    );
  });

  it("refuses what it cannot honour, naming the part, never repeating the password", () => {
    expect(refused("postgresql://u:secret@h1,h2/d")).toContain("one host");
    expect(refused("postgresql://u:secret@h:99999/d")).toContain("port");
    expect(refused("postgresql://u:secret@h/")).toContain("database");
    expect(refused("postgresql://:secret@h/d")).toContain("user");
    expect(refused("postgresql://u:secret@h/d?sslmode=sometimes")).toContain("sslmode");
    expect(refused("postgresql://u:secret@h/d?options=-c%20x")).toContain("not supported");
    expect(refused("postgresql://u:secret@h/d?password=x")).toContain("in the URI itself");
    expect(refused("postgresql://u:secret@bad host/d")).toContain("host");
    expect(refused("postgresql://u:%zz@h/d")).toContain("password");
    expect(refused(`postgresql://u:secret@h/${"x".repeat(64)}`)).toContain("63 bytes");
    for (const text of ["postgresql://u:secret@h1,h2/d", "postgresql://u:secret@h:0/d"])
      expect(refused(text)).not.toContain("secret");
  });
});

describe("ArcGIS connection strings", () => {
  it("reads INSTANCE's host and port, the database and the login; keys in any case; the password kept exactly", () => {
    const text =
      "SERVER=gis-db;INSTANCE=sde:postgresql:gis-db.internal,5433;DBCLIENT=postgresql;DATABASE=parcels;USER=viewer;PASSWORD= a b=c ;AUTHENTICATION_MODE=DBMS;VERSION=sde.DEFAULT";
    expect(parseConnectionString(text)).toEqual({
      connection: { host: "gis-db.internal", port: 5433, database: "parcels", user: "viewer", sslmode: "prefer" },
      password: " a b=c ",
    });
    expect(parseConnectionString("server=h;database=d;user=u;password=p").connection).toMatchObject({
      host: "h",
      port: 5432,
    });
  });

  it("refuses encrypted passwords, other clients, OS authentication, unknown and repeated keys", () => {
    expect(refused("INSTANCE=sde:postgresql:h;DATABASE=d;USER=u;ENCRYPTED_PASSWORD=00022e68")).toContain(
      "ENCRYPTED_PASSWORD",
    );
    expect(refused("INSTANCE=sde:oracle:h;DBCLIENT=oracle;DATABASE=d;USER=u")).toContain("DBCLIENT");
    expect(refused("INSTANCE=h;DATABASE=d;AUTHENTICATION_MODE=OSA")).toContain("DBMS");
    expect(refused("INSTANCE=h;DATABASE=d;USER=u;COLOR=blue")).toContain("COLOR");
    expect(refused("INSTANCE=h;DATABASE=d;USER=u;USER=v")).toContain("twice");
    expect(refused("DATABASE=d;USER=u")).toContain("host");
    expect(refused("INSTANCE=h;DATABASE=d;USER=u;PASSWORD=secret;junk")).not.toContain("secret");
  });
});

describe("limits and display", () => {
  it("refuses a string past the limit at once, and parses the longest in linear time", () => {
    expect(refused("x".repeat(MAX_CONNECTION_STRING + 1))).toContain(String(MAX_CONNECTION_STRING));
    const started = performance.now();
    for (const text of [
      `postgresql://u:p@${"a".repeat(4000)}/d`,
      `postgresql://u:p@${"a-".repeat(2000)}/d`,
      `INSTANCE=${"a.".repeat(2000)};DATABASE=d;USER=u`,
      `${";".repeat(4000)}`,
    ])
      expect(() => parseConnectionString(text)).toThrow(ConnectionStringError);
    expect(performance.now() - started).toBeLessThan(250);
  });

  it("shows a connection without its password", () => {
    const { connection } = parseConnectionString("postgresql://u:hunter2@[::1]:5/d?sslmode=disable");
    expect(redactedConnectionString(connection)).toBe("postgresql://u:********@[::1]:5/d?sslmode=disable");
  });
});
