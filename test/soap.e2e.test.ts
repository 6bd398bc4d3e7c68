// The SOAP Catalog through the real local engine over HTTPS, with four independent SOAP clients built
// from the served WSDL, token-required mode, every fault case and hostile XML.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stableItemId } from "#shared/publishing.ts";
import { demoOrganization } from "./helpers/admin.ts";
import { PASSWORDS, ROOT, type RunningEngine, startEngine } from "./helpers/engine.ts";
import { call, form } from "./helpers/http.ts";
import { runJson } from "./helpers/run.ts";
import { bumpCatalog, runningStore } from "./helpers/store.ts";
import { forge } from "./helpers/tokens.ts";

let engine: RunningEngine;
let portalId: string;
const NS = "http://www.esri.com/schemas/ArcGIS/10.8";
const endpoint = () => `${engine.ready.https}/arcgis/services`;

function admin(...args: string[]): string {
  return execFileSync(process.execPath, [join(ROOT, "infra/admin/cli.ts"), ...args, "--data-dir", engine.dataDir], {
    cwd: ROOT,
    encoding: "utf8",
  });
}

async function token(username: string, password: string, serverURL?: string): Promise<string> {
  const res = await call(`${engine.ready.https}/portal/sharing/rest/generateToken`, {
    ca: engine.ca,
    body: form({ f: "json", username, password, ...(serverURL ? { serverURL } : {}) }),
  });
  return res.json<{ token: string }>().token;
}

const envelope = (inner: string, ns = "http://schemas.xmlsoap.org/soap/envelope/") =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${ns}"><soap:Body>${inner}</soap:Body></soap:Envelope>`;
const post = (body: string | Buffer, query = "") =>
  call(`${endpoint()}${query}`, {
    ca: engine.ca,
    body,
    headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' },
  });

const row = (name: string, type: string, capabilities: string, description: string, parentType = "") => ({
  name,
  type,
  url: `${endpoint()}/${name}/${type}`,
  parentType,
  capabilities,
  description,
});

beforeAll(async () => {
  engine = await startEngine();
  portalId = (await call(`${engine.ready.https}/portal/sharing/rest/portals/self?f=json`, { ca: engine.ca })).json<{
    id: string;
  }>().id;
});
afterAll(async () => {
  await engine?.stop();
});

describe("four SOAP clients built from the served WSDL", () => {
  const expected = () => {
    const basemap = row("World_Basemap", "MapServer", "Map,TilesOnly", "Demo basemap");
    const ortho = row("Imagery/Ortho_2024", "ImageServer", "Image,TilesOnly", "2024 orthophotos");
    const water = row("Utilities/Water_Network", "MapServer", "Map,Query", "");
    // The demo GeoPackage's layers, public: named after each table and its dataset path in the World Data store.
    const { worldStore } = demoOrganization(engine.dataDir);
    const world = ["attribution", "countries", "places"].map((t) =>
      row(
        `World/${t}_${stableItemId(worldStore, `/world.gpkg/${t}`).slice(0, 6)}`,
        "FeatureServer",
        "Query",
        `Layer of ${t}`,
      ),
    );
    return {
      version: "vendorGisVersion108",
      formats: "vendorServiceCatalogMessageFormatSoap",
      tokenUrl: `${engine.ready.https}/portal/sharing/rest/generateToken`,
      requiresTokens: false,
      folders: ["Imagery", "Staging", "Utilities", "World"],
      // Anonymous callers see public services only, the root first, then each folder.
      all: [basemap, ortho, water, ...world],
      root: [basemap],
      utilities: [water],
      imagery: [ortho],
      empty: [],
      unknownFolder: "soap:Client",
    };
  };
  const wsdl = () => `${endpoint()}?wsdl`;

  it("the Urls it lists answer a SOAP fault naming the catalog and the service's REST URL (node-soap, curl)", async () => {
    const base = `${engine.ready.https}/arcgis`;
    const urls = [`${endpoint()}/World_Basemap/MapServer`, `${endpoint()}/Utilities/Hydrant_Inspections/FeatureServer`];
    const catalog = `This server answers SOAP at its Catalog only: ${base}/services (WSDL at ${base}/services?wsdl; operations GetMessageVersion, GetMessageFormats, GetTokenServiceURL, GetFolders, GetServiceDescriptions, GetServiceDescriptionsEx, RequiresTokens).`;
    const faults = {
      [urls[0] as string]: {
        faultcode: "soap:Client",
        faultstring: `${catalog} This MapServer is served over REST: ${base}/rest/services/World_Basemap/MapServer`,
      },
      // Private: the same answer whether or not the caller may see it, or it exists.
      [urls[1] as string]: {
        faultcode: "soap:Client",
        faultstring: `${catalog} This FeatureServer is served over REST: ${base}/rest/services/Utilities/Hydrant_Inspections/FeatureServer`,
      },
    };
    expect(
      await runJson(process.execPath, [join(ROOT, "test/clients/soap-service-url.ts"), wsdl(), ...urls], {
        NODE_EXTRA_CA_CERTS: engine.ready.cert,
      }),
    ).toEqual(faults);
    // A browser or curl on the URL (or its ?wsdl) gets the same fault, as XML, not a bare 404.
    for (const url of [urls[0] as string, `${urls[0]}?wsdl`]) {
      const res = await call(url, { ca: engine.ca });
      expect(res.status).toBe(500);
      expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
      expect(res.text).toBe(
        `<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/"><soap:Body><soap:Fault><faultcode>soap:Client</faultcode><faultstring>${faults[urls[0] as string]?.faultstring}</faultstring></soap:Fault></soap:Body></soap:Envelope>`,
      );
    }
    const folder = await call(`${endpoint()}/Utilities`, { ca: engine.ca });
    expect(folder.text).toContain(`${catalog} Services are served over REST: ${base}/rest/services</faultstring>`);
    const noServer = await call(`${engine.ready.https}/nowhere/services/X/MapServer`, { ca: engine.ca });
    expect(noServer.status).toBe(404);
    expect(noServer.text).toContain("<faultstring>No server is hosted here.</faultstring>");
  });

  it("node-soap", async () => {
    expect(
      await runJson(process.execPath, [join(ROOT, "test/clients/soap-node.ts"), wsdl()], {
        NODE_EXTRA_CA_CERTS: engine.ready.cert,
      }),
    ).toEqual(expected());
  });
  it("zeep", async () => {
    expect(
      await runJson("/usr/bin/python3", ["test/clients/soap_zeep.py", wsdl()], {
        REQUESTS_CA_BUNDLE: engine.ready.cert,
      }),
    ).toEqual(expected());
  });
  it("suds", async () => {
    expect(
      await runJson("/usr/bin/python3", ["test/clients/soap_suds.py", wsdl()], { SSL_CERT_FILE: engine.ready.cert }),
    ).toEqual(expected());
  });
  it("PHP SoapClient", async () => {
    expect(await runJson("php", ["test/clients/soap_php.php", wsdl(), engine.ready.cert])).toEqual(expected());
  });

  it("shows members their organization's services, extensions included, and owners their private ones", async () => {
    const publisher = await token("publisher", PASSWORDS.publisher);
    const seen = await runJson(
      process.execPath,
      [join(ROOT, "test/clients/soap-node.ts"), `${endpoint()}?token=${publisher}&wsdl`],
      {
        NODE_EXTRA_CA_CERTS: engine.ready.cert,
      },
    );
    expect(seen.root).toEqual([
      row("Parcels", "MapServer", "Map,Query,Data", "Parcels & owners"),
      row("Parcels", "FeatureServer", "Query,Editing", "Parcels & owners", "MapServer"),
      row("World_Basemap", "MapServer", "Map,TilesOnly", "Demo basemap"),
    ]);
    expect(seen.utilities).toEqual([
      row("Utilities/Hydrant_Inspections", "FeatureServer", "Query,Create,Update", "Field edits"),
      row("Utilities/Water_Network", "MapServer", "Map,Query", ""),
    ]);
    const user = await token("user", PASSWORDS.user);
    const plain = await runJson(
      process.execPath,
      [join(ROOT, "test/clients/soap-node.ts"), `${endpoint()}?token=${user}&wsdl`],
      {
        NODE_EXTRA_CA_CERTS: engine.ready.cert,
      },
    );
    expect((plain.utilities as { name: string }[]).map((r) => r.name)).toEqual(["Utilities/Water_Network"]);
  });
});

describe("the WSDL", () => {
  it("is served for ?wsdl, ?WSDL and with a token, addressed to the endpoint it was fetched from", async () => {
    for (const [url, address] of [
      [`${endpoint()}?wsdl`, endpoint()],
      [`${endpoint()}?WSDL`, endpoint()],
      [`${endpoint()}?token=abc&wsdl`, `${endpoint()}?token=abc`],
      [`${engine.ready.http}/arcgis/services?wsdl`, `${engine.ready.http}/arcgis/services`],
    ] as const) {
      const res = await call(url, { ca: engine.ca });
      expect(res.status, url).toBe(200);
      expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
      expect(res.text).toContain(`<soap:address location="${address}"/>`);
      expect(res.text).toContain('<wsdl:service name="Catalog">');
      expect(res.text).toContain('<wsdl:port name="ServiceCatalogPort" binding="tns:ServiceCatalogBinding">');
      expect(res.text).toContain('<wsdl:portType name="ServiceCatalogPort">');
      expect(res.text).toContain(`targetNamespace="${NS}"`);
      expect(res.text.match(/soapAction=""/g)).toHaveLength(7);
    }
  });

  it("is well-formed and its schema compiles and validates a real answer (xmllint)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "mapgate-wsdl-"));
    const text = (await call(`${endpoint()}?wsdl`, { ca: engine.ca })).text;
    writeFileSync(join(dir, "catalog.wsdl"), text);
    execFileSync("xmllint", ["--noout", join(dir, "catalog.wsdl")]);
    const schema = text.match(/<xs:schema[\s\S]*<\/xs:schema>/)?.[0] ?? "";
    writeFileSync(
      join(dir, "catalog.xsd"),
      schema.replace("<xs:schema ", '<xs:schema xmlns:xs="http://www.w3.org/2001/XMLSchema" '),
    );
    const answer = (await post(envelope(`<GetServiceDescriptions xmlns="${NS}"/>`))).text;
    const wrapper =
      answer.match(/<tns:GetServiceDescriptionsResponse>[\s\S]*<\/tns:GetServiceDescriptionsResponse>/)?.[0] ?? "";
    writeFileSync(
      join(dir, "answer.xml"),
      wrapper.replace("<tns:GetServiceDescriptionsResponse>", `<tns:GetServiceDescriptionsResponse xmlns:tns="${NS}">`),
    );
    const out = execFileSync("xmllint", ["--noout", "--schema", join(dir, "catalog.xsd"), join(dir, "answer.xml")], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
    });
    expect(out).toBe("");
    // The enumerations, in order.
    expect(schema).toContain(
      '<xs:enumeration value="vendorGisVersion101"/><xs:enumeration value="vendorGisVersion103"/>',
    );
    expect(schema).not.toContain("vendorGisVersion102");
  });
});

describe("tokens", () => {
  it("when the organization requires tokens: none → fault, a valid one → data, expired or tampered → fault", async () => {
    admin("update-portal", "--portal", portalId, "--require-tokens", "true");
    try {
      const op = envelope(`<t:GetFolders xmlns:t="${NS}"/>`);
      const none = await post(op);
      expect(none.status).toBe(500);
      expect(none.text).toContain("<faultcode>soap:Client</faultcode><faultstring>Token Required</faultstring>");
      expect(none.text).not.toContain("Imagery");
      const valid = await token("user", PASSWORDS.user, `${engine.ready.https}/arcgis`);
      const ok = await post(op, `?token=${valid}`);
      expect(ok.status).toBe(200);
      expect(ok.text).toContain(
        "<FolderNames><String>Imagery</String><String>Staging</String><String>Utilities</String><String>World</String></FolderNames>",
      );
      const requires = await post(envelope(`<t:RequiresTokens xmlns:t="${NS}"/>`), `?token=${valid}`);
      expect(requires.text).toContain("<Result>true</Result>");
      const expired = await forge(engine.dataDir, {
        username: "user",
        portalId,
        exp: Math.floor(Date.now() / 1000) - 1,
      });
      for (const bad of [expired, `${valid.slice(0, -4)}AAAA`]) {
        const res = await post(op, `?token=${bad}`);
        expect(res.status).toBe(500);
        expect(res.text).toContain("<faultstring>Invalid token.</faultstring>");
        expect(res.text).not.toContain("Imagery");
      }
    } finally {
      admin("update-portal", "--portal", portalId, "--require-tokens", "false");
    }
  });
});

describe("faults", () => {
  const clientFault = async (body: string | Buffer, reason: RegExp, contentType = "text/xml; charset=utf-8") => {
    const started = performance.now();
    const res = await call(endpoint(), { ca: engine.ca, body, headers: { "content-type": contentType } });
    const ms = performance.now() - started;
    expect(res.status).toBe(500);
    expect(res.headers["content-type"]).toBe("text/xml; charset=utf-8");
    expect(res.text).toMatch(
      /^<\?xml version="1.0" encoding="UTF-8"\?><soap:Envelope xmlns:soap="http:\/\/schemas.xmlsoap.org\/soap\/envelope\/"><soap:Body><soap:Fault><faultcode>soap:Client<\/faultcode><faultstring>/,
    );
    expect(res.text).toMatch(reason);
    return ms;
  };

  it("answers each bad request with a soap:Client fault (HTTP 500)", async () => {
    await clientFault("<soap:Envelope xmlns:soap=", /not well-formed/);
    await clientFault("f=json&token=x", /not well-formed|not a SOAP envelope/, "application/x-www-form-urlencoded");
    await clientFault("<html><body>hi</body></html>", /not a SOAP envelope/);
    await clientFault("", /has no body/);
    await clientFault(
      envelope(`<t:GetFolders xmlns:t="${NS}"/>`, "http://www.w3.org/2003/05/soap-envelope"),
      /SOAP 1.2 is not supported/,
      "application/soap+xml",
    );
    await clientFault(envelope(`<t:LaunchMissiles xmlns:t="${NS}"/>`), /Unknown operation 'LaunchMissiles'/);
    await clientFault(envelope(`<t:GetFolders xmlns:t="http://example.com/other"/>`), /Unknown namespace/);
    await clientFault(envelope("<GetFolders/>"), /Unknown namespace ''/);
    await clientFault(envelope(`<t:GetServiceDescriptionsEx xmlns:t="${NS}"/>`), /requires FolderName/);
    await clientFault(
      envelope(
        `<t:GetServiceDescriptionsEx xmlns:t="${NS}"><FolderName>Nope</FolderName></t:GetServiceDescriptionsEx>`,
      ),
      /Folder 'Nope' does not exist/,
    );
    await clientFault(envelope(`<x:GetFolders xmlns:t="${NS}"/>`), /prefix 'x' is not declared/);
  });

  it("matches namespaces, never prefixes, and writes text escaped and booleans lower-case", async () => {
    // Two prefixes for the envelope namespace in one request, as suds sends.
    const body = `<?xml version="1.0"?><a:Envelope xmlns:a="http://schemas.xmlsoap.org/soap/envelope/" xmlns:b="http://schemas.xmlsoap.org/soap/envelope/"><b:Body><q:GetServiceDescriptionsEx xmlns:q="${NS}"><FolderName>  &#85;tilities </FolderName></q:GetServiceDescriptionsEx></b:Body></a:Envelope>`;
    const res = await post(body);
    expect(res.status).toBe(200);
    expect(res.text).toContain("<Name>Utilities/Water_Network</Name>");
    const basemap = await post(
      envelope(`<GetServiceDescriptionsEx xmlns="${NS}"><FolderName xmlns=""></FolderName></GetServiceDescriptionsEx>`),
    );
    expect(basemap.text).toContain("<Name>World_Basemap</Name>");
    const tokens = await post(envelope(`<t:RequiresTokens xmlns:t="${NS}"/>`));
    expect(tokens.text).toContain("<Result>false</Result>");
  });

  it("refuses hostile XML quickly, with bounded memory, and keeps serving", async () => {
    const rss = () =>
      Number(readFileSync(`/proc/${engine.ready.pid}/status`, "utf8").match(/VmRSS:\s+(\d+)/)?.[1] ?? 0) * 1024;
    const before = rss();
    const xxe = `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>${envelope(`<t:GetServiceDescriptionsEx xmlns:t="${NS}"><FolderName>&x;</FolderName></t:GetServiceDescriptionsEx>`)}`;
    const laughs = `<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">${Array.from({ length: 9 }, (_, i) => `<!ENTITY ${String.fromCharCode(98 + i)} "${`&${String.fromCharCode(97 + i)};`.repeat(10)}">`).join("")}]>${envelope(`<t:GetFolders xmlns:t="${NS}">&j;</t:GetFolders>`)}`;
    const undeclared = envelope(
      `<t:GetServiceDescriptionsEx xmlns:t="${NS}"><FolderName>&x;</FolderName></t:GetServiceDescriptionsEx>`,
    );
    const deep = envelope(`${"<a>".repeat(100_000)}${"</a>".repeat(100_000)}`);
    // Within the size limit, so the depth bound itself answers (also when attribute values hold "/>").
    const deepSmall = envelope(`${"<a>".repeat(5_000)}${"</a>".repeat(5_000)}`);
    const tricky = envelope(`${'<a x="/>">'.repeat(5_000)}${"</a>".repeat(5_000)}`);
    // Over the SOAP limit, under Lambda's 6 MB event (bigger bodies never reach the function: 413, as on AWS).
    const big = Buffer.alloc(5 * 1024 * 1024, " ");
    // Close tags hidden in a processing instruction must not lower the depth count.
    const hidden = `<?x ${"</z>".repeat(50)} ?>${envelope(`${"<a>".repeat(40)}${"</a>".repeat(40)}`)}`;
    const times = [
      await clientFault(xxe, /Document type declarations are not accepted/),
      await clientFault(laughs, /Document type declarations are not accepted/),
      await clientFault(undeclared, /undeclared entity 'x'/),
      await clientFault(deep, /larger than 262144 bytes|nests elements deeper than 32/),
      await clientFault(deepSmall, /nests elements deeper than 32/),
      await clientFault(tricky, /nests elements deeper than 32/),
      await clientFault(big, /larger than 262144 bytes/),
      await post(Buffer.alloc(10 * 1024 * 1024 - 1024, " ")).then((r) => {
        expect([r.status, r.json()]).toEqual([413, { message: "Request Entity Too Large" }]);
        return 0;
      }),
      await clientFault(hidden, /nests elements deeper than 32/),
      await clientFault(`<?x '?>${envelope(`<t:GetFolders xmlns:t="${NS}"/>`)}`, /not well-formed|not a SOAP envelope/),
    ];
    for (const ms of times) expect(ms).toBeLessThan(2000);
    expect(rss() - before).toBeLessThan(256 * 1024 * 1024);
    expect((await post(envelope(`<t:GetMessageVersion xmlns:t="${NS}"/>`))).text).toContain(
      "<MessageVersion>vendorGisVersion108</MessageVersion>",
    );
  });

  it("answers a fault of its own as soap:Server without detail", async () => {
    // A service record that breaks its invariant (only the server can cause this).
    const { PutCommand, DeleteCommand } = await import("@aws-sdk/lib-dynamodb");
    const ddb = runningStore(engine.dataDir);
    const servers = JSON.parse(admin("list")) as { servers: { serverId: string; name: string }[] }[];
    const serverId = servers[0]?.servers.find((s) => s.name === "arcgis")?.serverId as string;
    const bump = () => bumpCatalog(ddb, serverId);
    await ddb.send(
      new PutCommand({
        TableName: "mapgate-services",
        Item: { serverId, entry: "svc#zz#broken", name: "Broken", type: "Nonsense" },
      }),
    );
    await bump();
    try {
      const res = await post(envelope(`<t:GetServiceDescriptions xmlns:t="${NS}"/>`));
      expect(res.status).toBe(500);
      expect(res.text).toContain(
        "<faultcode>soap:Server</faultcode><faultstring>The server could not answer the request. The fault has been logged.</faultstring>",
      );
      expect(res.text).not.toMatch(/corrupt|Nonsense|\.ts/);
    } finally {
      await ddb.send(new DeleteCommand({ TableName: "mapgate-services", Key: { serverId, entry: "svc#zz#broken" } }));
      await bump();
      ddb.destroy();
    }
    expect((await post(envelope(`<t:GetServiceDescriptions xmlns:t="${NS}"/>`))).status).toBe(200);
  });
});
