// The baseline every HTTP figure is set against: a bare node:http server answering, from memory, exactly the bytes
// (status 200, headers, body) a sample request to mapgate got.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Answer } from "../test/helpers/http.ts";

export async function bareTwin(sample: Answer): Promise<{ url: string; close(): void }> {
  const headers = Object.fromEntries(
    Object.entries(sample.headers).filter(([k]) => !["date", "connection", "keep-alive"].includes(k)),
  ) as Record<string, string>;
  const server = createServer((_req, res) => {
    res.writeHead(200, headers);
    res.end(sample.text);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, close: () => server.close() };
}
