// A small HTTP(S) client over node:http(s) that trusts the engine's self-signed certificate.
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";

export interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: Buffer;
  json<T = Record<string, unknown>>(): T;
}

export interface CallOptions {
  method?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  ca?: Buffer;
}

export function call(url: string, options: CallOptions = {}, retried = false): Promise<Answer> {
  const u = new URL(url);
  const send = u.protocol === "https:" ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(
      u,
      {
        method: options.method ?? (options.body === undefined ? "GET" : "POST"),
        headers: {
          ...(options.body !== undefined ? { "content-type": "application/x-www-form-urlencoded" } : {}),
          ...options.headers,
        },
        ...(options.ca ? { ca: options.ca } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const body = Buffer.concat(chunks);
          const text = body.toString("utf8");
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body, json: () => JSON.parse(text) });
        });
        res.on("error", reject);
      },
    );
    req.on("error", (err: NodeJS.ErrnoException) => {
      // A kept-alive socket the server closed as this request went out (its idle timeout and the agent's are
      // both 5 s): sent again once on a fresh socket, as Node's documentation advises.
      if (req.reusedSocket && err.code === "ECONNRESET" && !retried) call(url, options, true).then(resolve, reject);
      else reject(err);
    });
    req.end(options.body);
  });
}

export const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** The Set-Cookie values of an answer (node gives one string or a list). */
export function setCookies(res: Answer): string[] {
  const raw = res.headers["set-cookie"];
  return raw === undefined ? [] : Array.isArray(raw) ? raw : [raw];
}

const CSRF_COOKIE = "__Host-mapgate_csrf=";

/**
 * A browser's visit to a page with a form: the page, the CSRF cookie the browser holds afterwards (the one it
 * was given, or the one it sent) and the form's CSRF field.
 */
export async function formOf(
  url: string,
  ca: Buffer,
  cookie?: string,
): Promise<{ page: Answer; cookie: string; csrf: string }> {
  const page = await call(url, { ca, ...(cookie ? { headers: { cookie } } : {}) });
  const csrf = /name="csrf" value="([^"]+)"/.exec(page.text)?.[1];
  const given = setCookies(page).find((c) => c.startsWith(CSRF_COOKIE));
  const jar = given ? given.split(";")[0] : cookie?.split("; ").find((c) => c.startsWith(CSRF_COOKIE));
  if (!csrf || !jar) throw new Error(`no form on ${url}: ${page.status} ${page.text.slice(0, 400)}`);
  return { page, cookie: jar, csrf };
}

export interface JsonCalls {
  /**
   * A GET answered as JSON: `f=json` is added unless the URL already names a format, and the token (if any)
   * after it, as ArcGIS clients send them.
   */
  getJson(url: string, token?: string): Promise<Record<string, unknown>>;
  /** A form POST with `f=json`, the token and `fields`, answered as JSON. */
  postJson(url: string, token: string, fields?: Record<string, string>): Promise<Record<string, unknown>>;
}

/**
 * The JSON calls of a test, trusting the certificate `ca` answers when it is called (the engine's, which is
 * known only once the engine has started).
 */
export function jsonCalls(ca: () => Buffer | undefined = () => undefined): JsonCalls {
  const trusted = (): CallOptions => {
    const cert = ca();
    return cert ? { ca: cert } : {};
  };
  return {
    async getJson(url, token) {
      const u = new URL(url);
      const added = [
        ...(u.searchParams.has("f") ? [] : ["f=json"]),
        ...(token ? [`token=${encodeURIComponent(token)}`] : []),
      ].join("&");
      const sep = added === "" ? "" : url.includes("?") ? "&" : "?";
      return (await call(`${url}${sep}${added}`, trusted())).json();
    },
    async postJson(url, token, fields = {}) {
      return (await call(url, { ...trusted(), body: form({ f: "json", token, ...fields }) })).json();
    },
  };
}

/** A token for `username` from the portal's generateToken at `portal` (…/sharing/rest), trusting `ca`. */
export async function signIn(portal: string, ca: Buffer, username: string, password: string): Promise<string> {
  const res = await call(`${portal}/generateToken`, { ca, body: form({ f: "json", username, password }) });
  return res.json<{ token: string }>().token;
}

/** A multipart/form-data body (and its content type, with the boundary) as a browser or Node's fetch encodes it. */
export async function multipartBody(
  fields: Readonly<Record<string, string>>,
  files: Readonly<Record<string, { name: string; bytes: Buffer | string }>>,
): Promise<{ body: Buffer; type: string }> {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  for (const [k, f] of Object.entries(files)) data.append(k, new Blob([f.bytes]), f.name);
  const request = new Request("https://mapgate.invalid/", { method: "POST", body: data });
  return { body: Buffer.from(await request.arrayBuffer()), type: request.headers.get("content-type") ?? "" };
}
