// Every request no declared route matches ($default on API Gateway): the error envelope, not a bare 404.
import { noSuchResource } from "#shared/http/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";

export const handler = restHandler({ name: "Not Found" }, async (req) => {
  throw noSuchResource([`Nothing is served at ${req.method} ${req.event.rawPath.slice(0, 200)}.`]);
});
