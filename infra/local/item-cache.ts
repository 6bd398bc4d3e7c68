// The transaction layer's item cache: GetItem and BatchGetItem answered from memory for the items it has read
// before. It can be, because every write to the store passes through the layer (dynalite is reached no other
// way, and LevelDB lets one process alone open a store): each write first drops the cached copies of the items
// it names (all of them when it names none that can be told: a table created or deleted, a request that does
// not parse), whatever its outcome, before it reaches dynalite. A read fills the cache only when no write was
// in flight at any moment between its start and its answer (none running when it began, none begun since), so
// a read that raced a write can never put back what the write replaced: a read that began while a write ran may
// have been answered before that write committed, and the write's own drop is long past when it answers. A cached item is therefore what dynalite would answer at that moment: no read after
// a committed write is stale. The layer models no TTL expiry (dynalite deletes nothing by itself).
// Only the plain requests the SDK makes are answered here (string keys, no projection, no consumed capacity),
// with dynalite's own bytes for the item; anything else, and every miss, goes to dynalite.
import { randomBytes } from "node:crypto";
import { crc32 } from "node:zlib";
import type { StoreAnswer } from "./store-call.ts";

type Json = Record<string, unknown>;

/** Where a write lands: one item of a table, given by its key or by the whole item. */
export interface WriteTarget {
  readonly table: string;
  readonly key?: Json;
  readonly item?: Json;
}

export interface ItemCacheLimits {
  /** Cached items (absent items count too); the oldest go first. */
  readonly entries: number;
  /** Bytes of cached item JSON. */
  readonly bytes: number;
}

const DEFAULT_LIMITS: ItemCacheLimits = { entries: 50_000, bytes: 64 * 1024 * 1024 };

/** BatchGetItem answers at most ~1 MB: a batch whose cached items come near that goes to dynalite. */
const BATCH_BYTES = 1024 * 1024;

/** A key whose attributes are all strings, as `[name, value]` pairs in name order; undefined otherwise. */
function stringKey(key: unknown): [string, string][] | undefined {
  if (typeof key !== "object" || key === null || Array.isArray(key)) return undefined;
  const pairs: [string, string][] = [];
  for (const [name, value] of Object.entries(key as Json)) {
    if (typeof value !== "object" || value === null) return undefined;
    const entries = Object.entries(value as Json);
    if (entries.length !== 1 || entries[0]?.[0] !== "S" || typeof entries[0][1] !== "string") return undefined;
    pairs.push([name, entries[0][1]]);
  }
  if (pairs.length === 0) return undefined;
  return pairs.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const slot = (table: string, pairs: [string, string][]) => `${table}\u0000${JSON.stringify(pairs)}`;

const onlyFields = (o: Json, allowed: readonly string[]) => Object.keys(o).every((k) => allowed.includes(k));

/** A request id shaped as dynalite's (52 characters of [0-9A-Z]): a random prefix and a counter, unique here. */
const ID_PREFIX = randomBytes(30).toString("base64").toUpperCase().replace(/[+/=]/g, "0").slice(0, 40);
let served = 0;
const requestId = () => ID_PREFIX + (served++).toString(36).toUpperCase().padStart(12, "0");

function answer(body: string): StoreAnswer {
  const bytes = Buffer.from(body, "utf8");
  return {
    status: 200,
    headers: {
      "x-amzn-requestid": requestId(),
      "x-amz-crc32": String(crc32(bytes)),
      "content-type": "application/x-amz-json-1.0",
    },
    body: bytes,
  };
}

export class ItemCache {
  /** Item JSON as dynalite serialises it, or null for an item known absent; by table and key. */
  readonly #items = new Map<string, string | null>();
  #bytes = 0;
  #writesStarted = 0;
  #writesFinished = 0;
  readonly #limits: ItemCacheLimits;
  readonly #keyNames: (table: string) => Promise<string[]>;

  /** `keyNames` gives a table's key attributes (to find the key of an item a write puts whole). */
  constructor(keyNames: (table: string) => Promise<string[]>, limits: ItemCacheLimits = DEFAULT_LIMITS) {
    this.#keyNames = keyNames;
    this.#limits = limits;
  }

  /** Items cached now (for tests). */
  get size(): number {
    return this.#items.size;
  }

  /**
   * Runs a write: drops what it may change first, and keeps any read that overlaps it from filling the cache.
   * `targets` undefined: the write may change anything.
   */
  async write<T>(targets: readonly WriteTarget[] | undefined, run: () => Promise<T>): Promise<T> {
    this.#writesStarted++;
    try {
      await this.#drop(targets);
      return await run();
    } finally {
      this.#writesFinished++;
    }
  }

  async #drop(targets: readonly WriteTarget[] | undefined): Promise<void> {
    if (!targets) return this.clear();
    for (const t of targets) {
      let key = t.key;
      if (!key && t.item) {
        const names = await this.#keyNames(t.table).catch(() => undefined);
        if (!names) return this.clear();
        key = Object.fromEntries(names.map((n) => [n, t.item?.[n]]));
      }
      const pairs = stringKey(key);
      // A key the cache cannot name may still be one it holds under another form: drop everything.
      if (!pairs) return this.clear();
      this.#remove(slot(t.table, pairs));
    }
  }

  clear(): void {
    this.#items.clear();
    this.#bytes = 0;
  }

  #remove(at: string): void {
    const old = this.#items.get(at);
    if (old === undefined) return;
    this.#bytes -= old?.length ?? 0;
    this.#items.delete(at);
  }

  /**
   * The epoch a read starting now may fill the cache from: the writes begun so far, or -1 when one is still
   * running (the read may see the store before that write commits, and nothing would drop what it puts back).
   */
  #epoch(): number {
    return this.#writesStarted === this.#writesFinished ? this.#writesStarted : -1;
  }

  /** A read that started at `epoch` may fill the cache only if no write ran at any moment since. */
  #quiet(epoch: number): boolean {
    return epoch >= 0 && epoch === this.#writesStarted && this.#writesStarted === this.#writesFinished;
  }

  #put(at: string, json: string | null): void {
    this.#remove(at);
    const size = json?.length ?? 0;
    if (size > this.#limits.bytes / 16) return;
    this.#items.set(at, json);
    this.#bytes += size;
    while (this.#items.size > this.#limits.entries || this.#bytes > this.#limits.bytes) {
      const oldest = this.#items.keys().next();
      if (oldest.done) break;
      this.#remove(oldest.value);
    }
  }

  /** GetItem: from the cache when it holds the item, else from `forward` (whose answer may fill it). */
  async getItem(input: Json, forward: () => Promise<StoreAnswer>): Promise<StoreAnswer> {
    const table = input.TableName;
    const pairs = stringKey(input.Key);
    if (
      typeof table !== "string" ||
      !pairs ||
      !onlyFields(input, ["TableName", "Key", "ConsistentRead"]) ||
      (input.ConsistentRead !== undefined && typeof input.ConsistentRead !== "boolean")
    )
      return forward();
    const at = slot(table, pairs);
    const held = this.#items.get(at);
    if (held !== undefined) return answer(held === null ? "{}" : `{"Item":${held}}`);
    const epoch = this.#epoch();
    const out = await forward();
    if (out.status === 200 && this.#quiet(epoch)) {
      const item = (JSON.parse(out.body.toString("utf8")) as Json).Item;
      this.#put(at, item === undefined ? null : JSON.stringify(item));
    }
    return out;
  }

  /** BatchGetItem: from the cache when it holds every item asked for, else from `forward` (which may fill it). */
  async batchGetItem(input: Json, forward: () => Promise<StoreAnswer>): Promise<StoreAnswer> {
    const plan = this.#plan(input);
    if (!plan) return forward();
    let size = 0;
    const found: [string, string[]][] = [];
    let complete = true;
    for (const [table, slots] of plan) {
      const items: string[] = [];
      for (const at of slots) {
        const held = this.#items.get(at);
        if (held === undefined) complete = false;
        else if (held !== null) {
          items.push(held);
          size += held.length;
        }
      }
      found.push([table, items]);
    }
    if (complete && size <= BATCH_BYTES) {
      const responses = found.map(([t, items]) => `${JSON.stringify(t)}:[${items.join(",")}]`).join(",");
      return answer(`{"Responses":{${responses}},"UnprocessedKeys":{}}`);
    }
    const epoch = this.#epoch();
    const out = await forward();
    if (out.status !== 200 || !this.#quiet(epoch)) return out;
    const parsed = JSON.parse(out.body.toString("utf8")) as {
      Responses?: Record<string, Json[]>;
      UnprocessedKeys?: Record<string, unknown>;
    };
    const requested = input.RequestItems as Record<string, { Keys: Json[] }>;
    for (const [table, spec] of Object.entries(requested)) {
      // Keys left unprocessed were not read: nothing is known of them (nor, simply, of their table's others).
      if (parsed.UnprocessedKeys?.[table]) continue;
      const names = (stringKey(spec.Keys[0]) ?? []).map(([n]) => n);
      const byKey = new Map<string, Json>();
      for (const item of parsed.Responses?.[table] ?? []) {
        const pairs = stringKey(Object.fromEntries(names.map((n) => [n, item[n]])));
        if (pairs) byKey.set(slot(table, pairs), item);
      }
      for (const key of spec.Keys) {
        const at = slot(table, stringKey(key) ?? []);
        const item = byKey.get(at);
        this.#put(at, item === undefined ? null : JSON.stringify(item));
      }
    }
    return out;
  }

  /**
   * The slots of a BatchGetItem the cache may answer, by table in request order: only the plain shape the SDK
   * sends, with no request dynalite would refuse (at most 100 keys, no duplicates, string keys).
   */
  #plan(input: Json): [string, string[]][] | undefined {
    const requested = input.RequestItems;
    if (!onlyFields(input, ["RequestItems"]) || typeof requested !== "object" || requested === null) return undefined;
    const tables = Object.entries(requested as Json);
    if (tables.length === 0) return undefined;
    const plan: [string, string[]][] = [];
    let count = 0;
    for (const [table, spec] of tables) {
      if (typeof spec !== "object" || spec === null || !onlyFields(spec as Json, ["Keys", "ConsistentRead"]))
        return undefined;
      const { Keys: keys, ConsistentRead: consistent } = spec as Json;
      if (consistent !== undefined && typeof consistent !== "boolean") return undefined;
      if (!Array.isArray(keys) || keys.length === 0 || keys.length > 100) return undefined;
      const slots: string[] = [];
      // dynalite calls two keys duplicates when their values, in attribute-name order, are the same.
      const seen = new Set<string>();
      for (const key of keys) {
        const pairs = stringKey(key);
        if (!pairs) return undefined;
        const values = JSON.stringify(pairs.map(([, v]) => v));
        if (seen.has(values)) return undefined;
        seen.add(values);
        slots.push(slot(table, pairs));
      }
      count += keys.length;
      if (count > 100) return undefined;
      plan.push([table, slots]);
    }
    return plan;
  }
}
