// The operation's own step: its compute function, or, before it, what the pipeline answers for any operation
// (a sealed form result shown again, a confirmation still to give, a browser's form). It runs as the innermost
// `after` step rather than as middy's handler, because middy hands a handler only the event and the Lambda
// context, and the operation needs the request the earlier steps resolved.
import { CSRF_FIELD } from "#shared/auth/csrf.ts";
import { beforeTimeout } from "#shared/deadlines.ts";
import { ApiError, badRequest } from "#shared/errors.ts";
import { FORM_RESULT, formCookie, openFormResult } from "#shared/http/form-results.ts";
import { CONFIRM, confirmationPage, FormStart, ShownPage, whoSent } from "#shared/http/pipeline/forms.ts";
import type { Compute, Operation, RestRequest } from "#shared/http/pipeline/request.ts";
import { ran, type RestMiddleware } from "#shared/http/pipeline/state.ts";

export const compute = (op: Operation, fn: Compute): RestMiddleware => {
  async function run(req: RestRequest, showForm: boolean): Promise<object> {
    const sealed = req.method === "GET" && req.format === "html" ? req.params.get(FORM_RESULT) : undefined;
    if (sealed !== undefined) {
      // The page a form's POST produced (post/redirect/get): shown again, never run again.
      const html = await openFormResult(sealed, formCookie(req.event), req.path, whoSent(req));
      if (html === undefined) {
        throw badRequest("This result is no longer shown.", [
          "A form's result is shown for 10 minutes, in the browser that sent the form. Nothing was sent again.",
        ]);
      }
      return new ShownPage(html);
    }
    if (
      op.confirm &&
      req.method === "POST" &&
      req.params.get(CSRF_FIELD) !== undefined &&
      req.params.get(CONFIRM) !== "true"
    ) {
      return confirmationPage(op, req);
    }
    if (showForm) {
      // A form is shown to anyone (it runs nothing); whoever may not read the starting values gets it empty.
      const initial = op.formValues
        ? await op.formValues(req).catch((err: unknown) => {
            if (err instanceof ApiError) return {};
            throw err;
          })
        : {};
      const fields = op.formFields
        ? await op.formFields(req).catch((err: unknown) => {
            if (err instanceof ApiError) return undefined;
            throw err;
          })
        : undefined;
      return new FormStart(initial, fields);
    }
    return fn(req);
  }
  return {
    after: async (request) => {
      const s = request.internal;
      // The early timeout is beforeTimeout's (one interval for all requests), not middy's timer per request.
      s.answer = await beforeTimeout(run(ran(s.request, "caller"), s.showForm === true), request.context);
    },
  };
};
