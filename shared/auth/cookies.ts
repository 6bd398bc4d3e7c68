// The request's cookies, as API Gateway's payload 2.0 delivers them (one `name=value` string each).

/** Every value the request carries for `name` (a browser can send two cookies of one name, from two paths). */
export function cookieValues(event: { readonly cookies?: readonly string[] }, name: string): string[] {
  const values: string[] = [];
  for (const cookie of event.cookies ?? []) {
    const eq = cookie.indexOf("=");
    if (eq > 0 && cookie.slice(0, eq).trim() === name) values.push(cookie.slice(eq + 1).trim());
  }
  return values;
}
