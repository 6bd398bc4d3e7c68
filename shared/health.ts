// `/health`: whether this deployment answers and its store does — one small read of the store (the caller's
// organization's record, its key only). Nothing else is told: no versions, names, endpoints or timings.
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { escapeHtml, page } from "#shared/http/html.ts";
import { ApiError } from "#shared/errors.ts";
import type { RestRequest } from "#shared/http/pipeline.ts";
import { logger } from "#shared/log.ts";
import { tableName } from "#shared/config.ts";
import { ddb } from "#shared/stores/dynamo.ts";

export interface Health {
  readonly status: "ok";
  readonly engine: "answering";
  readonly store: "answering";
  readonly time: string;
}

export async function health(req: RestRequest): Promise<Health> {
  try {
    await ddb.send(
      new GetCommand({
        TableName: tableName("portals"),
        Key: { portalId: req.portal.portalId },
        ProjectionExpression: "portalId",
      }),
    );
  } catch (err) {
    logger.error("health: the store did not answer", { error: err instanceof Error ? err : new Error(String(err)) });
    throw new ApiError(503, "The store does not answer.", ["mapgate answers, but its tables cannot be read now."]);
  }
  return { status: "ok", engine: "answering", store: "answering", time: new Date().toISOString() };
}

export function healthPage(data: object): string {
  const h = data as Health;
  return page(
    "Health",
    `<h1>Health: ${escapeHtml(h.status)}</h1><table><tr><th>Engine</th><td>${escapeHtml(h.engine)}</td></tr>` +
      `<tr><th>Store</th><td>${escapeHtml(h.store)}</td></tr><tr><th>Checked</th><td>${escapeHtml(h.time)}</td></tr></table>` +
      '<p><a href="/health?f=json">JSON</a> · <a href="/">Home</a></p>',
  );
}
