// The token key, loaded once per warm function: from Secrets Manager on AWS, from the data folder's key
// file on the local engine. The secret is JSON `{kid, k, previous?: [{kid, k}]}`; keys named in
// `previous` still open tokens issued before a rotation, and only `kid`/`k` issues new ones.
import { hkdfSync } from "node:crypto";
import { readFile } from "node:fs/promises";
import { GetSecretValueCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { config } from "#shared/config.ts";

export interface TokenKeys {
  readonly current: { readonly kid: string; readonly key: Uint8Array };
  readonly byKid: ReadonlyMap<string, Uint8Array>;
}

interface RawKey {
  kid: string;
  k: string;
}

function derive(k: string): Uint8Array {
  // The stored secret is text of any length; the A256GCM key is 32 bytes derived from it.
  return new Uint8Array(hkdfSync("sha256", Buffer.from(k, "utf8"), "mapgate-token", "A256GCM", 32));
}

function parse(text: string): TokenKeys {
  let raw: Partial<RawKey> & { previous?: Partial<RawKey>[] };
  try {
    raw = JSON.parse(text) as typeof raw;
  } catch {
    // JSON.parse quotes the text it failed on: never let that reach a log.
    throw new Error("the token key is not JSON");
  }
  const valid = (r: Partial<RawKey> | undefined): r is RawKey & { previous?: Partial<RawKey>[] } =>
    typeof r?.kid === "string" && r.kid !== "" && typeof r.k === "string" && r.k.length >= 32;
  if (!valid(raw)) throw new Error("the token key must be JSON {kid, k} with k of at least 32 characters");
  const byKid = new Map<string, Uint8Array>();
  for (const r of [raw, ...(raw.previous ?? [])]) {
    if (!valid(r)) throw new Error("every previous token key needs kid and k");
    byKid.set(r.kid, derive(r.k));
  }
  return { current: { kid: raw.kid, key: byKid.get(raw.kid) as Uint8Array }, byKid };
}

let loading: Promise<TokenKeys> | undefined;
let loadedAt = 0;
const RELOAD_AFTER_MS = 5_000;

/**
 * The key set, plus a reload when a token names a key id this function has never seen: after a rotation,
 * warm functions learn the new key from the first token that uses it (reloading at most every 5 s).
 */
export async function keyFor(kid: string): Promise<Uint8Array | undefined> {
  const keys = await tokenKeys();
  const key = keys.byKid.get(kid);
  if (key || Date.now() - loadedAt < RELOAD_AFTER_MS) return key;
  loading = undefined;
  return (await tokenKeys()).byKid.get(kid);
}

export function tokenKeys(): Promise<TokenKeys> {
  loading ??= (async () => {
    loadedAt = Date.now();
    const source = config().tokenKey;
    if (!source) throw new Error("no token key configured (TOKEN_KEY_SECRET_ID or TOKEN_KEY_FILE)");
    if ("file" in source) return parse(await readFile(source.file, "utf8"));
    const out = await new SecretsManagerClient({}).send(new GetSecretValueCommand({ SecretId: source.secretId }));
    if (!out.SecretString) throw new Error("the token key secret is empty");
    return parse(out.SecretString);
  })();
  // A failed load is not cached: the next request tries again.
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}
