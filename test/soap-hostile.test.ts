// SOAP bodies built to make the reader work hard, through the Catalog's real middy chain in this process.
// Every hostile body is timed against a benign twin of the same size in the same run (a ratio, not a
// number of milliseconds, so a slow or busy machine does not decide the outcome), and must be answered: a
// result or a soap:Client fault, never a soap:Server one.
import type { APIGatewayProxyStructuredResultV2 } from "aws-lambda";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiEvent, inProcessStore, lambdaContext } from "./helpers/in-process.ts";

const store = await inProcessStore();
const ops = await import("#infra/admin/operations.ts");
const { LIMITS } = await import("#shared/soap/envelope.ts");
const catalog = (await import("#functions/soap-catalog.ts")).handler;

const SOAP = "http://schemas.xmlsoap.org/soap/envelope/";
const NS = "http://www.esri.com/schemas/ArcGIS/10.8";
/** Near the size limit, where an attacker would sit, with room for the envelope around the payload. */
const SIZE = 220 * 1024;
/** How much slower than its benign twin a hostile body may be: linear work stays well inside it. */
const MAX_RATIO = 10;
const RUNS = 3;

beforeAll(async () => {
  const { portal } = await ops.bootstrapOrganization({
    name: "Soap",
    admin: { username: "soap-admin", password: "soap-admin-pass-1" },
  });
  await ops.registerServer(portal.portalId, { name: "soap", role: "HOSTING_SERVER" });
});

afterAll(async () => {
  await store.close();
});

const post = async (body: string) =>
  (await catalog(
    apiEvent("/soap/services", {
      method: "POST",
      body,
      headers: { "content-type": "text/xml; charset=utf-8", soapaction: '""' },
      pathParameters: { server: "soap" },
    }),
    lambdaContext(),
  )) as APIGatewayProxyStructuredResultV2;

const faultCode = (res: APIGatewayProxyStructuredResultV2) =>
  /<faultcode>([^<]*)<\/faultcode>/.exec(String(res.body))?.[1];

/** Answered with a result, or refused as the client's fault: an internal fault means the reader broke. */
async function answered(body: string): Promise<APIGatewayProxyStructuredResultV2> {
  const res = await post(body);
  if (res.statusCode !== 200) {
    expect(res.statusCode).toBe(500);
    expect(faultCode(res)).toBe("soap:Client");
  }
  return res;
}

/** The fastest of a few runs: the least disturbed by whatever else the machine is doing. */
async function fastest(body: string): Promise<number> {
  let best = Infinity;
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    await answered(body);
    best = Math.min(best, performance.now() - started);
  }
  return best;
}

const envelope = (payload: string, envelopeAttributes = "", operationAttributes = "") =>
  `<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="${SOAP}"${envelopeAttributes}><soap:Body>` +
  `<GetFolders xmlns="${NS}"${operationAttributes}>${payload}</GetFolders></soap:Body></soap:Envelope>`;

/** `make(i)` repeated until the pieces reach `length` characters. */
function repeat(length: number, make: (i: number) => string): string {
  const parts: string[] = [];
  for (let i = 0, total = 0; total < length; i++) {
    const part = make(i);
    parts.push(part);
    total += part.length;
  }
  return parts.join("");
}

interface Case {
  readonly hostile: string;
  readonly benign: string;
}

// Each body is written once with namespace declarations (`xmlns:`) and once with plain attributes of the
// same length (`plain_`), so the twins differ only in what the reader must resolve.
const twins = (build: (attr: "xmlns:" | "plain_") => string): Case => ({
  hostile: build("xmlns:"),
  benign: build("plain_"),
});

const cases: Record<string, () => Case> = {
  "thousands of prefixes on the operation, one more on each of thousands of children": () =>
    twins((attr) =>
      envelope(
        repeat(SIZE / 2, () => `<a ${attr}q="urn:q"/>`),
        "",
        repeat(SIZE / 2, (i) => ` ${attr}p${i}="urn:p"`),
      ),
    ),
  "thousands of prefixes on the envelope, one more on each of thousands of children": () =>
    twins((attr) =>
      envelope(
        repeat(SIZE / 2, () => `<a ${attr}q="urn:q"/>`),
        repeat(SIZE / 2, (i) => ` ${attr}p${i}="urn:p"`),
      ),
    ),
  "nested elements each redeclaring prefixes, over thousands of leaves each declaring one": () =>
    twins((attr) => {
      let open = "";
      let close = "";
      for (let depth = 0, n = 0; depth < 28; depth++) {
        open += `<a${repeat(SIZE / 2 / 28, () => ` ${attr}p${n++}="urn:p"`)}>`;
        close = `</a>${close}`;
      }
      return envelope(open + repeat(SIZE / 2, () => `<b ${attr}z="urn:z"/>`) + close);
    }),
  "chains of nested elements, each declaring its own prefix and named with it": () => {
    let n = 0;
    const chain = () => {
      let open = "";
      let close = "";
      for (let depth = 0; depth < 28; depth++, n++) {
        open += `<p${n}:a xmlns:p${n}="urn:p${n}">`;
        close = `</p${n}:a>${close}`;
      }
      return open + close;
    };
    const hostile = envelope(repeat(SIZE, chain));
    // The same elements and attributes without prefixes: nothing to resolve but the default namespace.
    const benign = hostile.replace(/(<\/?)p\d+:a/g, (_m, lt: string) => `${lt}a`).replace(/xmlns:p/g, "plain_p");
    return { hostile, benign: benign + " ".repeat(hostile.length - benign.length) };
  },
  "all the prefixes on one element": () =>
    twins((attr) =>
      envelope(
        "",
        "",
        repeat(SIZE, (i) => ` ${attr}p${i}="urn:p"`),
      ),
    ),
  "one very long namespace name": () =>
    twins((attr) => envelope("", "", ` ${attr}p="urn:${"v&amp;".repeat(SIZE / 6)}"`)),
  "long-named ancestors over thousands of children": () => {
    const children = "<k>t</k>".repeat(9_000);
    const nest = (name: (depth: number) => string) => {
      let open = "";
      let close = "";
      for (let depth = 0; depth < 28; depth++) {
        open += `<${name(depth)}>`;
        close = `</${name(depth)}>${close}`;
      }
      return { open, close };
    };
    const long = nest((depth) => `n${depth}${"x".repeat((SIZE - children.length) / 2 / 28)}`);
    const hostile = envelope(long.open + children + long.close);
    // Short names, and the characters saved as text in the innermost element.
    const short = nest((depth) => `n${depth}`);
    const benign = envelope(short.open + children + short.close);
    return { hostile, benign: benign.replace("<k>t</k>", `<k>${"t".repeat(hostile.length - benign.length + 1)}</k>`) };
  },
};

describe("hostile SOAP bodies cost time linear in their size", () => {
  for (const [name, make] of Object.entries(cases)) {
    it(name, async () => {
      const { hostile, benign } = make();
      expect(Buffer.byteLength(hostile)).toBeLessThanOrEqual(LIMITS.maxBytes);
      expect(Buffer.byteLength(benign)).toBe(Buffer.byteLength(hostile));
      const res = await answered(hostile);
      expect([res.statusCode, faultCode(res)]).toEqual([200, undefined]);
      expect(res.body).toContain("GetFoldersResponse");
      await fastest(benign); // warm: the same code paths compiled before either is timed
      const benignMs = await fastest(benign);
      const hostileMs = await fastest(hostile);
      const ratio = hostileMs / benignMs;
      expect(
        ratio,
        `${hostileMs.toFixed(0)} ms against ${benignMs.toFixed(0)} ms for a benign body of ${hostile.length} bytes`,
      ).toBeLessThan(MAX_RATIO);
    });
  }
});

describe("namespace scopes", () => {
  it("restore a prefix an element shadowed once it closes", async () => {
    const res = await answered(
      `<s:Envelope xmlns:s="${SOAP}" xmlns:t="${NS}" xmlns="${NS}"><s:Header><t:h xmlns:t="urn:other" xmlns=""><t:i/><j/></t:h></s:Header>` +
        `<s:Body><t:GetFolders/></s:Body></s:Envelope>`,
    );
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain("GetFoldersResponse");
    const unprefixed = await answered(
      `<s:Envelope xmlns:s="${SOAP}" xmlns="${NS}"><s:Header><h xmlns="urn:other"/></s:Header><s:Body><GetFolders/></s:Body></s:Envelope>`,
    );
    expect(unprefixed.statusCode).toBe(200);
  });

  it("end with the element that declared them: a sibling's prefix is not in scope", async () => {
    const res = await answered(
      `<s:Envelope xmlns:s="${SOAP}"><s:Header><h xmlns:q="${NS}"/></s:Header><s:Body><q:GetFolders/></s:Body></s:Envelope>`,
    );
    expect([res.statusCode, faultCode(res)]).toEqual([500, "soap:Client"]);
    expect(res.body).toContain("The namespace prefix 'q' is not declared.");
  });
});
