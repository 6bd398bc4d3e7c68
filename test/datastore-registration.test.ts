// The rules of registration that hold against hostile input, as the stack sets them on AWS (local hosts refused,
// TLS required, folders refused, the granted buckets only): checked here on the shared module itself, without a
// database or a network (a name is resolved through the machine's hosts file).
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const SECRET = "Hostile-Secret-42";
type Module = typeof import("#shared/datastore-registration.ts");
let rules: Module;
let address: typeof import("#shared/features/database-address.ts");
let secrets: typeof import("#shared/stores/datastore-secrets.ts");
/** The stores' passwords, as the local engine keeps them (a folder of this file's own). */
const secretsDir = mkdtempSync(join(tmpdir(), "mapgate-secrets-test-"));

beforeAll(async () => {
  // As the stack's functions have it (configuration is read once, at first use).
  Object.assign(process.env, {
    DATASTORE_FOLDERS: "refuse",
    DATASTORE_LOCAL_HOSTS: "refuse",
    DATASTORE_TLS: "require",
    CLOUD_STORE_BUCKETS: "city-caches",
    DATASTORE_SECRETS_DIR: secretsDir,
  });
  rules = await import("#shared/datastore-registration.ts");
  address = await import("#shared/features/database-address.ts");
  secrets = await import("#shared/stores/datastore-secrets.ts");
});

afterAll(() => rmSync(secretsDir, { recursive: true, force: true }));

const egdb = (connectionString: string, name = "parcels") =>
  JSON.stringify({
    type: "egdb",
    path: `/enterpriseDatabases/${name}`,
    info: { isManaged: false, dataStoreConnectionType: "shared", connectionString },
  });

/** The refusal of a data store's JSON, checked never to repeat the password. */
async function refusal(text: string): Promise<string> {
  const err = await rules.readDataStoreJson(text).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err, text).toBeInstanceOf(rules.DataStoreInputError);
  const message = (err as Error).message;
  expect(message).not.toContain(SECRET);
  return message;
}

describe("where a database connection may go", () => {
  it("refuses the functions' own loopback, link-local and unspecified addresses, however written", async () => {
    for (const host of [
      "127.0.0.1",
      "127.1.2.3",
      "169.254.169.254",
      "169.254.170.2",
      "0.0.0.0",
      "[::1]",
      "[::]",
      "[fe80::1]",
      "[::ffff:127.0.0.1]",
      "[::ffff:a9fe:a9fe]",
      "[fd00:ec2::254]",
      "localhost",
      "db.localhost",
      // Forms the resolver reads as IPv4 (inet_aton): caught by resolving them, as the driver would.
      "127.1",
      "2130706433",
      "0x7f000001",
    ]) {
      expect(await refusal(egdb(`postgresql://u:${SECRET}@${host}:5432/gis`)), host).toMatch(/loopback or link-local/);
    }
  });

  it("resolves a name and refuses it when it leads to one of those addresses (here: the hosts file)", async (ctx) => {
    // A name the resolver leads to loopback, taken from the hosts file (localhost itself is refused by name alone,
    // so it proves nothing here). Where the hosts file has none, the check cannot run: it is reported skipped, with
    // why, never passed.
    const loopbackName = readFileSync("/etc/hosts", "utf8")
      .split("\n")
      .map((l) => l.trim().split(/\s+/))
      .find(([ip, name]) => ip?.startsWith("127.") && name && name !== "localhost" && !name.includes("localhost"))?.[1];
    if (!loopbackName)
      return ctx.skip("/etc/hosts names no loopback host besides localhost, so no name resolves to one");
    expect(await refusal(egdb(`postgresql://u:${SECRET}@${loopbackName}:5432/gis`))).toMatch(/loopback or link-local/);
    await expect(address.databaseAddress(loopbackName, false)).rejects.toThrow(/loopback or link-local/);
  });

  it("accepts other addresses, private ones included (a database in the VPC), and connects to the address checked", async () => {
    for (const host of ["10.0.3.7", "172.16.0.9", "192.168.1.20", "192.0.2.10", "[2001:db8::5]"]) {
      const spec = await rules.readDataStoreJson(egdb(`postgresql://u:${SECRET}@${host}:5432/gis`));
      expect(spec.database?.connection.host, host).toBe(host.replace(/^\[|\]$/g, ""));
    }
    expect(await address.databaseAddress("10.0.3.7", false)).toBe("10.0.3.7");
    // Where local hosts are allowed (the local engine), the host is handed to the driver as given.
    expect(await address.databaseAddress("localhost", true)).toBe("localhost");
    expect(address.isLocalAddress("10.0.0.1")).toBe(false);
    expect(address.isLocalAddress("::ffff:169.254.169.254")).toBe(true);
  });
});

describe("how it connects", () => {
  it("requires TLS: sslmode=disable refused, prefer and allow (which fall back to plain text) made require", async () => {
    expect(await refusal(egdb(`postgresql://u:${SECRET}@10.0.0.5:5432/gis?sslmode=disable`))).toMatch(/TLS only/);
    for (const mode of ["", "?sslmode=prefer", "?sslmode=allow"]) {
      const spec = await rules.readDataStoreJson(egdb(`postgresql://u:${SECRET}@10.0.0.5:5432/gis${mode}`));
      expect(spec.database?.connection.sslmode, mode).toBe("require");
    }
    const arcgis = await rules.readDataStoreJson(
      egdb(
        `SERVER=db;INSTANCE=sde:postgresql:10.0.0.5,5433;DBCLIENT=postgresql;DATABASE=gis;USER=u;PASSWORD=${SECRET}`,
      ),
    );
    expect(arcgis.database).toEqual({
      connection: { host: "10.0.0.5", port: 5433, database: "gis", user: "u", sslmode: "require" },
      password: SECRET,
    });
    const full = await rules.readDataStoreJson(egdb(`postgresql://u:${SECRET}@10.0.0.5/gis?sslmode=verify-full`));
    expect(full.database?.connection.sslmode).toBe("verify-full");
  });

  it("refuses every libpq option that changes where or how it connects, naming the part, never the password", async () => {
    for (const [text, why] of [
      [`postgresql://u:${SECRET}@10.0.0.5/gis?host=/var/run/postgresql`, /give host in the URI itself/],
      [`postgresql://u:${SECRET}@10.0.0.5/gis?hostaddr=127.0.0.1`, /not supported/],
      [`postgresql://u:${SECRET}@10.0.0.5/gis?options=-c%20search_path%3Dx`, /not supported/],
      [`postgresql://u:${SECRET}@10.0.0.5/gis?sslrootcert=/etc/passwd`, /not supported/],
      [`postgresql://u:${SECRET}@10.0.0.5/gis?service=x`, /not supported/],
      [`postgresql://u:${SECRET}@%2Fvar%2Frun%2Fpostgresql/gis`, /not a host name/],
      [`postgresql://u:${SECRET}@a.example.com,b.example.com/gis`, /one host/],
      [`postgresql://u:${SECRET}@10.0.0.5:0/gis`, /port/],
      [`SERVER=x;INSTANCE=sde:oracle:db;DATABASE=gis;USER=u;PASSWORD=${SECRET}`, /INSTANCE/],
      [`SERVER=x;INSTANCE=sde:postgresql:db;DATABASE=gis;USER=u;ENCRYPTED_PASSWORD=${SECRET}`, /ENCRYPTED_PASSWORD/],
      [`SERVER=x;INSTANCE=sde:postgresql:db;DATABASE=gis;USER=u;PASSWORD=${SECRET};HOSTADDR=1`, /HOSTADDR/],
      [`SERVER=x;INSTANCE=sde:postgresql:db;DATABASE=gis;USER=u;PASSWORD=${SECRET};AUTHENTICATION_MODE=OSA`, /DBMS/],
    ] as const) {
      expect(await refusal(egdb(text)), text).toMatch(why);
    }
  });
});

describe("what a registration may name", () => {
  it("refuses folders on AWS, buckets it does not grant, access keys, managed stores and bad names", async () => {
    const folder = JSON.stringify({ type: "folder", path: "/fileShares/x", info: { path: "/srv" } });
    expect(await refusal(folder)).toMatch(/cannot be registered on this deployment/);
    const cloud = (objectStore: string, connectionString?: string) =>
      JSON.stringify({
        type: "cloudStore",
        path: "/cloudStores/caches",
        info: { isManaged: false, objectStore, ...(connectionString ? { connectionString } : {}) },
      });
    expect(await rules.readDataStoreJson(cloud("city-caches/gis/2024"))).toMatchObject({
      kind: "cloudStore",
      name: "caches",
      location: { bucket: "city-caches", prefix: "gis/2024" },
    });
    expect(await refusal(cloud("other-bucket/gis"))).toMatch(/not one this deployment may read/);
    expect(await refusal(cloud("city-caches/../x"))).toMatch(/not a valid prefix/);
    expect(
      await refusal(cloud("city-caches", JSON.stringify({ accessKeyId: "AKIA", secretAccessKey: SECRET }))),
    ).toMatch(/give no access keys/);
    expect(
      await refusal(JSON.stringify({ type: "egdb", path: "/enterpriseDatabases/x", info: { isManaged: true } })),
    ).toMatch(/managed/);
    for (const path of [
      "/enterpriseDatabases/",
      "/enterpriseDatabases/a/b",
      "/fileShares/x",
      "/enterpriseDatabases/x y",
    ]) {
      expect(await refusal(JSON.stringify({ type: "egdb", path, info: {} })), path).toMatch(/'path' must be/);
    }
    expect(await refusal("{")).toMatch(/not JSON/);
    expect(await refusal(`{"type":"egdb","x":${"[".repeat(2000)}${"]".repeat(2000)}}`)).toMatch(/at most 8 levels/);
    expect(await refusal(JSON.stringify({ type: "sqlServer", path: "/x/y" }))).toMatch(/'type' must be one of/);
    expect(await refusal("x".repeat(rules.MAX_DATA_STORE_JSON + 1))).toMatch(/at most/);
  });

  it("shows a registration's connection without its password, whatever form it was given in", () => {
    const json = rules.dataStoreJson({
      datastoreId: "0".repeat(32),
      portalId: "p",
      title: "Parcels",
      name: "parcels",
      owner: "ana",
      kind: "database",
      serverIds: [],
      connection: {
        host: "db.example.com",
        port: 5432,
        database: "gis",
        user: "reader",
        sslmode: "require",
        revision: 3,
      },
      created: 1,
      modified: 1,
    });
    expect(json).toEqual({
      type: "egdb",
      path: "/enterpriseDatabases/parcels",
      info: {
        isManaged: false,
        dataStoreConnectionType: "shared",
        connectionString: "postgresql://reader:********@db.example.com:5432/gis?sslmode=require",
      },
    });
  });
});

describe("where a kept password may go", () => {
  it("a store's secret is handed only to a connection to the host, port, database and user it was entered for", async () => {
    const id = "ab".repeat(16);
    const entered = { host: "10.0.0.5", port: 5432, database: "gis", user: "reader" };
    // A store's connection (its sslmode and revision are not where the password goes).
    const registered = { ...entered, sslmode: "require", revision: 1 } as const;
    const later = { ...entered, sslmode: "verify-full", revision: 4 } as const;
    await secrets.writeDataStorePassword(id, SECRET, registered);
    expect(await secrets.readDataStorePassword(id, later)).toBe(SECRET);
    for (const other of [{ host: "10.0.0.6" }, { port: 5433 }, { database: "other" }, { user: "admin" }]) {
      const err = await secrets.readDataStorePassword(id, { ...entered, ...other }).catch((e: unknown) => e);
      expect(err, JSON.stringify(other)).toBeInstanceOf(secrets.SecretDestinationError);
      expect(String(err)).not.toContain(SECRET);
    }
    // A secret written before destinations were recorded names none: it was entered for the store's connection.
    writeFileSync(join(secretsDir, `${id}.json`), JSON.stringify({ password: SECRET }));
    expect(await secrets.readDataStorePassword(id, entered)).toBe(SECRET);
  });
});
