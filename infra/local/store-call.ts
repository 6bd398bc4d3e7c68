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
