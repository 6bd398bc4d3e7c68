// What attachments' bytes count against: the service owner's and their organization's storage quotas, and the
// service item's size (its `attachmentBytes`). Charged before the bytes are kept, so a file past a quota is never
// written; given back as measured when they are removed. A crash between a charge and the removal of bytes no row
// names leaves them counted, never the other way round. Apart from the bytes themselves (attachment-files.ts) so
// that the functions that only read attachments reach no table.
import { config } from "#shared/config.ts";
import { ApiError } from "#shared/errors.ts";
import {
  deleteAttachmentBytes,
  deleteServiceAttachments,
  writeAttachmentBytes,
} from "#shared/hosted/attachment-files.ts";
import { logger } from "#shared/log.ts";
import { chargeAttachments, ItemBusyError, ItemGoneError, StorageQuotaError } from "#shared/stores/items.ts";
import { serviceQuotaExceeded } from "#shared/uploads.ts";

/** Counts bytes against the service's item and its owner's quotas (given back when negative); a refusal plainly. */
async function charge(serviceItemId: string, delta: number): Promise<void> {
  const quota = config().storageQuota;
  try {
    await chargeAttachments(serviceItemId, delta, quota);
  } catch (err) {
    if (err instanceof StorageQuotaError) throw serviceQuotaExceeded(err.whose, quota);
    if (err instanceof ItemGoneError) throw new ApiError(404, "Service not found.", ["The service was deleted."]);
    if (err instanceof ItemBusyError)
      throw new ApiError(409, "Unable to complete operation.", ["The service is busy: try again shortly."]);
    throw err;
  }
}

/** Gives back bytes removed (a failure logged: they stay counted, the safe side). */
async function release(serviceItemId: string, bytes: number): Promise<void> {
  await charge(serviceItemId, -bytes).catch((err: unknown) =>
    logger.warn("attachment bytes not given back", { itemId: serviceItemId, bytes, error: String(err) }),
  );
}

/** Keeps an attachment's bytes under a fresh key (attachment-files.ts), counted against the quotas first. */
export async function keepAttachmentBytes(serviceItemId: string, bytes: Buffer): Promise<string> {
  await charge(serviceItemId, bytes.length);
  try {
    return await writeAttachmentBytes(serviceItemId, bytes);
  } catch (err) {
    await release(serviceItemId, bytes.length);
    throw err;
  }
}

/** Removes bytes no row names any more, giving back what they counted. */
export async function removeAttachmentBytes(serviceItemId: string, keys: readonly string[]): Promise<void> {
  await release(serviceItemId, await deleteAttachmentBytes(serviceItemId, keys));
}

/** Removes every attachment's bytes of a service, giving back what they counted while its item lasts. */
export async function removeServiceAttachments(serviceItemId: string): Promise<void> {
  await release(serviceItemId, await deleteServiceAttachments(serviceItemId));
}
