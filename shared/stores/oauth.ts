// OAuth 2.0 state in the tokens table: authorization codes (single use, short-lived), refresh-token
// families (one current refresh token each, rotated on use) and revocations. Codes and refresh tokens are
// stored as digests only (see shared/digests.ts); a code's digest is its key.
import { randomBytes } from "node:crypto";
import { GetCommand, PutCommand, UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { matchesDigest, sha256Hex as sha256 } from "#shared/digests.ts";
import { tableName } from "#shared/config.ts";
import { ddb, isConditionFailure } from "#shared/stores/dynamo.ts";
import { RecordReader } from "#shared/stores/records.ts";
import { revocationKey } from "#shared/stores/signin.ts";
import { MAX_TOKEN_MINUTES } from "#shared/stores/portals.ts";

const seconds = (ms: number) => Math.ceil(ms / 1000);
const random = () => randomBytes(32).toString("base64url");

/** Long enough after a family ends that every access token it issued has expired too. */
const familyRevocationTtl = (familyExpires: number) =>
  seconds(Math.max(familyExpires, Date.now()) + MAX_TOKEN_MINUTES * 60_000) + 3600;

export interface CodeGrant {
  readonly clientId: string;
  readonly username: string;
  readonly portalId: string;
  readonly redirectUri: string;
  /** PKCE S256 challenge, when the authorization request carried one. */
  readonly challenge: string | undefined;
  /** The refresh family the code's tokens will belong to, fixed at issue so a replayed code can revoke it. */
  readonly family: string;
  readonly expires: number;
  /** The user's token generation when the code was issued: a password reset since then refuses the code. */
  readonly generation: number;
}

const codeKey = (code: string) => ({ pk: `code#${sha256(code)}`, sk: "-" });

export async function createCode(grant: Omit<CodeGrant, "family" | "expires">, lifetimeMs: number): Promise<string> {
  const code = random();
  const expires = Date.now() + lifetimeMs;
  await ddb.send(
    new PutCommand({
      TableName: tableName("tokens"),
      Item: {
        ...codeKey(code),
        ...grant,
        family: randomBytes(16).toString("base64url"),
        expires,
        expiresAt: seconds(expires) + 3600,
      },
      ConditionExpression: "attribute_not_exists(pk)",
    }),
  );
  return code;
}

function toGrant(item: Record<string, unknown>): CodeGrant {
  const r = new RecordReader("authorization code", item);
  return {
    clientId: r.string("clientId"),
    username: r.string("username"),
    portalId: r.string("portalId"),
    redirectUri: r.string("redirectUri"),
    challenge: r.optionalString("challenge"),
    family: r.string("family"),
    expires: r.number("expires"),
    generation: r.optionalNumber("generation") ?? 0,
  };
}

/**
 * Marks a code used and answers its grant. A code presented again answers `replayed` with the grant, so the
 * caller can revoke whatever the first use produced (RFC 6749 §4.1.2); an unknown code answers undefined.
 */
export async function consumeCode(code: string): Promise<{ grant: CodeGrant; replayed: boolean } | undefined> {
  if (code.length > 256) return undefined;
  try {
    const { Attributes } = await ddb.send(
      new UpdateCommand({
        TableName: tableName("tokens"),
        Key: codeKey(code),
        UpdateExpression: "SET #u = :now",
        ConditionExpression: "attribute_exists(pk) AND attribute_not_exists(#u)",
        ExpressionAttributeNames: { "#u": "used" },
        ExpressionAttributeValues: { ":now": Date.now() },
        ReturnValues: "ALL_NEW",
      }),
    );
    return { grant: toGrant(Attributes ?? {}), replayed: false };
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
  }
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("tokens"), Key: codeKey(code), ConsistentRead: true }),
  );
  return Item ? { grant: toGrant(Item), replayed: true } : undefined;
}

export interface Family {
  readonly id: string;
  readonly clientId: string;
  readonly username: string;
  readonly portalId: string;
  /** When the family's refresh tokens stop working, whatever rotation happened (rotation never extends it). */
  readonly expires: number;
  /** The user's token generation when the family started: a password reset since then refuses its tokens. */
  readonly generation: number;
}

const familyKey = (id: string) => ({ pk: `family#${id}`, sk: "-" });

/** A refresh token is `<family id>.<secret>`; only the family's current secret is accepted. */
function splitRefreshToken(token: string): { family: string; secret: string } | undefined {
  const m = /^([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{32,128})$/.exec(token);
  return m?.[1] && m[2] ? { family: m[1], secret: m[2] } : undefined;
}

/** Starts a refresh family; answers its first refresh token. */
export async function createFamily(family: Family): Promise<string> {
  const secret = random();
  await ddb.send(
    new PutCommand({
      TableName: tableName("tokens"),
      Item: {
        ...familyKey(family.id),
        clientId: family.clientId,
        username: family.username,
        portalId: family.portalId,
        expires: family.expires,
        generation: family.generation,
        current: sha256(secret),
        expiresAt: seconds(family.expires) + 3600,
      },
      // A replayed code may race its first use: the family it names can be started only once.
      ConditionExpression: "attribute_not_exists(pk)",
    }),
  );
  return `${family.id}.${secret}`;
}

function toFamily(id: string, item: Record<string, unknown>): (Family & { current: string }) | "revoked" {
  if (item.revoked !== undefined) return "revoked";
  const r = new RecordReader("refresh family", item);
  return {
    id,
    clientId: r.string("clientId"),
    username: r.string("username"),
    portalId: r.string("portalId"),
    expires: r.number("expires"),
    generation: r.optionalNumber("generation") ?? 0,
    current: r.string("current"),
  };
}

/** The family a refresh token names (read consistently) and the token's secret; undefined if there is none. */
async function familyOf(token: string): Promise<{ family: ReturnType<typeof toFamily>; secret: string } | undefined> {
  const parts = splitRefreshToken(token);
  if (!parts) return undefined;
  const { Item } = await ddb.send(
    new GetCommand({ TableName: tableName("tokens"), Key: familyKey(parts.family), ConsistentRead: true }),
  );
  return Item ? { family: toFamily(parts.family, Item), secret: parts.secret } : undefined;
}

export type Rotation =
  | { readonly ok: true; readonly family: Family; readonly refreshToken: string }
  | { readonly ok: false; readonly reason: "unknown" | "expired" | "reused" };

/**
 * Spends a refresh token and answers its successor. A token of a known family that is not the family's
 * current one has been used before (or stolen and used first): the whole family is revoked, including
 * the access tokens it issued, so neither the thief nor the victim keeps a working token.
 */
export async function rotateRefreshToken(token: string, clientId: string): Promise<Rotation> {
  const found = await familyOf(token);
  if (!found) return { ok: false, reason: "unknown" };
  const { family, secret: presentedSecret } = found;
  if (family === "revoked") return { ok: false, reason: "reused" };
  if (family.clientId !== clientId) return { ok: false, reason: "unknown" };
  if (family.expires <= Date.now()) return { ok: false, reason: "expired" };
  if (!matchesDigest(presentedSecret, family.current)) {
    await revokeFamily(family.id, family.expires);
    return { ok: false, reason: "reused" };
  }
  const secret = random();
  try {
    await ddb.send(
      new UpdateCommand({
        TableName: tableName("tokens"),
        Key: familyKey(family.id),
        UpdateExpression: "SET #c = :next",
        ConditionExpression: "#c = :presented AND attribute_not_exists(revoked)",
        ExpressionAttributeNames: { "#c": "current" },
        ExpressionAttributeValues: { ":next": sha256(secret), ":presented": family.current },
      }),
    );
  } catch (err) {
    if (!isConditionFailure(err)) throw err;
    // Two requests spent the same token at once: one of them is a replay.
    await revokeFamily(family.id, family.expires);
    return { ok: false, reason: "reused" };
  }
  return { ok: true, family, refreshToken: `${family.id}.${secret}` };
}

/**
 * Revokes a family: its refresh token stops working and so does every access token it issued. The family
 * record becomes a tombstone, written whether or not the family exists yet: a family revoked by a replayed
 * code before its first use finished can then never be started (createFamily requires no record).
 */
export async function revokeFamily(id: string, familyExpires: number): Promise<void> {
  const expiresAt = familyRevocationTtl(familyExpires);
  const revoked = Date.now();
  await ddb.send(
    new PutCommand({ TableName: tableName("tokens"), Item: { ...revocationKey(id), revoked, expiresAt } }),
  );
  await ddb.send(new PutCommand({ TableName: tableName("tokens"), Item: { ...familyKey(id), revoked, expiresAt } }));
}

/** Revokes the family a refresh token belongs to, if the token is its current one (RFC 7009: unknown is fine). */
export async function revokeRefreshToken(token: string, clientId: string | undefined): Promise<void> {
  const found = await familyOf(token);
  if (!found || found.family === "revoked") return;
  const { family, secret } = found;
  if (clientId !== undefined && family.clientId !== clientId) return;
  if (matchesDigest(secret, family.current)) await revokeFamily(family.id, family.expires);
}

/** Revokes one access token until it would have expired anyway. */
export async function revokeAccessToken(id: string, expires: number): Promise<void> {
  await ddb.send(
    new PutCommand({
      TableName: tableName("tokens"),
      Item: { ...revocationKey(id), revoked: Date.now(), expiresAt: seconds(expires) + 3600 },
    }),
  );
}
