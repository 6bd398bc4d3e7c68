// The Storage of a data store's location, one per location per warm function. The S3 client is imported
// only by functions that meet a cloud store, so folder-only paths never pay for loading it.
import type { Storage, StoreLocation } from "#shared/storage/storage.ts";

const opened = new Map<string, Promise<Storage>>();

const keyOf = (l: StoreLocation) =>
  "folder" in l ? `folder\u0000${l.folder}` : `s3\u0000${l.bucket}\u0000${l.prefix}`;

export function storageAt(location: StoreLocation): Promise<Storage> {
  const key = keyOf(location);
  let storage = opened.get(key);
  if (!storage) {
    storage =
      "folder" in location
        ? import("#shared/storage/folder.ts").then((m) => new m.FolderStorage(location.folder))
        : import("#shared/storage/s3.ts").then((m) => new m.S3Storage(location.bucket, location.prefix));
    if (opened.size >= 64) opened.delete(opened.keys().next().value as string);
    opened.set(key, storage);
    // A location that cannot be opened (a bad prefix, a relative folder) is not remembered as broken.
    storage.catch(() => opened.delete(key));
  }
  return storage;
}

/** How a location is shown to people (never credentials: a location holds none). */
export const describeLocation = (l: StoreLocation) =>
  "folder" in l ? `folder ${l.folder}` : `s3://${l.bucket}/${l.prefix}`;
