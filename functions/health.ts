// GET|POST /health (f=json for monitors): `{"status":"ok",…}` when mapgate and its store answer; an error
// envelope (503 in its body) when the store does not. Anyone may ask; the answer tells nothing internal.
import { restHandler } from "#shared/http/pipeline.ts";
import { health, healthPage } from "#shared/health.ts";

export const handler = restHandler({ name: "Health", html: healthPage }, health);
