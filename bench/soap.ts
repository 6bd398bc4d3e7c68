// GetServiceDescriptions with 1,000 and 10,000 services: mapgate's catalog on the local engine next to a
// node-soap server (soap.listen) serving the same WSDL and data, and a bare node:http server answering the
// same bytes (the ceiling on this machine); one load generator, the same run.
import { execFileSync } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import autocannon from "autocannon";
import soap from "soap";
import { ROOT, type RunningEngine } from "../test/helpers/engine.ts";
import { call } from "../test/helpers/http.ts";
import { putServices, runningStore } from "../test/helpers/store.ts";

const NS = "http://www.esri.com/schemas/ArcGIS/10.8";
export const BODY = `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><t:GetServiceDescriptions xmlns:t="${NS}"/></soap:Body></soap:Envelope>`;

interface Load {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function load(url: string, seconds: number): Promise<Load> {
  const r = await autocannon({
    url,
    method: "POST",
    body: BODY,
    headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' },
    connections: 10,
    duration: seconds,
  });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors + r.non2xx };
}

export async function seed(engine: RunningEngine, name: string, count: number): Promise<void> {
  const out = execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), "list", "--data-dir", engine.dataDir], {
    encoding: "utf8",
  });
  const portalId = (JSON.parse(out) as { portalId: string }[])[0]?.portalId as string;
  const server = JSON.parse(
    execFileSync(
      process.execPath,
      [
        join(ROOT, "infra/admin/cli.ts"),
        "register-server",
        "--portal",
        portalId,
        "--name",
        name,
        "--data-dir",
        engine.dataDir,
      ],
      {
        encoding: "utf8",
      },
    ),
  ) as { serverId: string };
  const ddb = runningStore(engine.dataDir);
  const items = Array.from({ length: count }, (_, i) => {
    const folder = i % 4 === 0 ? "" : `Folder${i % 4}`;
    const svc = `Service_${String(i).padStart(5, "0")}`;
    return {
      serverId: server.serverId,
      entry: `svc#${folder.toLowerCase()}#${svc.toLowerCase()}`,
      portalId,
      folder,
      name: svc,
      type: i % 3 === 0 ? "FeatureServer" : "MapServer",
      capabilities: "Map,Query,Data",
      description: `Benchmark service ${i} <&>`,
      tags: [],
      itemId: `item${i}`,
      owner: "admin",
      access: "public",
      extensions: i % 5 === 0 ? [{ type: "FeatureServer", capabilities: "Query" }] : [],
      created: 0,
    };
  });
  for (const folder of ["Folder1", "Folder2", "Folder3"])
    items.push({ serverId: server.serverId, entry: `folder#${folder.toLowerCase()}`, folder } as never);
  await putServices(ddb, server.serverId, items);
  ddb.destroy();
}

type Row = Record<string, string>;

/** The same data as mapgate answered it, read back from mapgate's own answer. */
function rowsOf(xml: string): Row[] {
  const rows: Row[] = [];
  const unescape = (s: string) =>
    s
      .replace(/&lt;/g, "<")
      .replace(/&gt;/g, ">")
      .replace(/&quot;/g, '"')
      .replace(/&amp;/g, "&");
  for (const m of xml.matchAll(/<ServiceDescription>([\s\S]*?)<\/ServiceDescription>/g)) {
    const row: Row = {};
    for (const f of (m[1] ?? "").matchAll(/<(\w+)>([\s\S]*?)<\/\1>/g)) row[f[1] as string] = unescape(f[2] ?? "");
    rows.push(row);
  }
  return rows;
}

const fmt = (n: number, d = 1) => n.toFixed(d).padStart(9);

export async function soapBench(engine: RunningEngine, seconds: number): Promise<void> {
  console.log(`\nSOAP GetServiceDescriptions over loopback HTTP, autocannon 10 connections × ${seconds} s`);
  console.log(
    `${"".padEnd(34)}${"req/s".padStart(9)}${"p50 ms".padStart(9)}${"p99 ms".padStart(9)}${"errors".padStart(9)}`,
  );
  for (const count of [1_000, 10_000]) {
    const name = `bench${count}`;
    await seed(engine, name, count);
    const mine = `${engine.ready.http.replace("localhost", "127.0.0.1")}/${name}/services`;
    const wsdlText = (await call(`${mine}?wsdl`)).text;
    const answer = await call(mine, { body: BODY, headers: { "content-type": "text/xml; charset=utf-8" } });
    const rows = rowsOf(answer.text);
    if (rows.length < count) throw new Error(`expected ${count}+ rows, got ${rows.length}`);

    const peer = createServer();
    await new Promise<void>((r) => peer.listen(0, "127.0.0.1", r));
    const peerUrl = `http://127.0.0.1:${(peer.address() as AddressInfo).port}/services`;
    soap.listen(
      peer,
      "/services",
      {
        Catalog: {
          ServiceCatalogPort: {
            GetServiceDescriptions: () => ({ ServiceDescriptions: { ServiceDescription: rows } }),
          },
        },
      },
      wsdlText.replace(/location="[^"]*"/, `location="${peerUrl}"`),
    );
    const bare = createServer((_req, res) => {
      _req.resume();
      _req.on("end", () => {
        res.writeHead(200, { "content-type": "text/xml; charset=utf-8" });
        res.end(answer.text);
      });
    });
    await new Promise<void>((r) => bare.listen(0, "127.0.0.1", r));
    const bareUrl = `http://127.0.0.1:${(bare.address() as AddressInfo).port}/services`;

    await load(mine, 1);
    const a = await load(mine, seconds);
    const b = await load(peerUrl, seconds);
    const c = await load(bareUrl, seconds);
    peer.close();
    bare.close();
    const kb = Buffer.byteLength(answer.text) / 1024;
    console.log(`${count.toLocaleString("en")} services (${rows.length} descriptions, ${kb.toFixed(0)} KiB answer)`);
    console.log(`${"  mapgate local engine".padEnd(34)}${fmt(a.rps)}${fmt(a.p50)}${fmt(a.p99)}${fmt(a.errors, 0)}`);
    console.log(`${"  node-soap (soap.listen)".padEnd(34)}${fmt(b.rps)}${fmt(b.p50)}${fmt(b.p99)}${fmt(b.errors, 0)}`);
    console.log(
      `${"  bare node:http, same bytes".padEnd(34)}${fmt(c.rps)}${fmt(c.p50)}${fmt(c.p99)}${fmt(c.errors, 0)}`,
    );
    console.log(
      `  ratios: mapgate / node-soap ${(a.rps / b.rps).toFixed(2)}×, mapgate / bare ${(a.rps / c.rps).toFixed(2)}`,
    );
  }
}
