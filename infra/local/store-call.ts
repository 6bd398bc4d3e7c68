// How the local engine calls its store: one DynamoDB request in, one answer out. The transaction layer, the item
// cache, the in-process path and the worker threads all speak it, so it stands below them all.

/** A DynamoDB answer: status, headers (lower-case names, no content-length) and the JSON body. */
export interface StoreAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * One DynamoDB request: its target (`DynamoDB_20120810.GetItem`), its headers (lower-case names; at least the
 * content type and an authorization header dynalite accepts) and its JSON body.
 */
export type StoreCall = (target: string, headers: Record<string, string>, body: Buffer) => Promise<StoreAnswer>;

/**
 * Bytes to post to another thread: a copy alone in a buffer of its own, with that buffer to transfer. A structured
 * clone copies a view's whole buffer, and a small Buffer is a slice of Node's 8 KiB pool: the store's answers and
 * requests, a few hundred bytes each, were posted as 8 KiB copies (a feature query's fixed cost). Always a copy:
 * the sender's buffer may still be someone's (a cache's), and a transferred one is gone from its thread.
 */
export function ownBytes(bytes: Uint8Array): { readonly bytes: Uint8Array; readonly transfer: ArrayBuffer[] } {
  const copy = new Uint8Array(bytes);
  return { bytes: copy, transfer: [copy.buffer] };
}
