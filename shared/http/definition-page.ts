// The admin wire's answer to a service's definition change as a page (f=html): the item page's editing form is told
// what was saved and given the way back to the item. Its own module, so the service function, whose cold start every
// map request waits on, carries the page without the item pages' rendering.
import { page, renderValue, resultPage } from "#shared/http/html.ts";
import { itemPageHref } from "#shared/urls.ts";

export function serviceDefinitionPage(data: unknown): string {
  const id = (data as { serviceItemId?: unknown }).serviceItemId;
  return typeof id === "string"
    ? resultPage("Editing settings saved", "The service's editing settings were saved.", [
        [itemPageHref(id), "Back to the item"],
      ])
    : page("Service Definition", `<h1>Service Definition</h1>${renderValue(data)}`);
}
