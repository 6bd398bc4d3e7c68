// node-soap (npm `soap`) built from the served catalog WSDL, pointed at each service URL the catalog lists, as a
// client that follows a listing's `Url` does: prints what each answered (a fault's code and string) as JSON.
// Usage: node soap-service-url.ts <wsdl url> <service url>…   (NODE_EXTRA_CA_CERTS trusts the engine's certificate)
import soap from "soap";

const [wsdlUrl, ...urls] = process.argv.slice(2) as [string, ...string[]];
const client = await soap.createClientAsync(wsdlUrl);
const out: Record<string, unknown> = {};
for (const url of urls) {
  client.setEndpoint(url);
  try {
    await client.GetMessageVersionAsync({});
    out[url] = "answered";
  } catch (err) {
    const f = (err as { root?: { Envelope?: { Body?: { Fault?: { faultcode?: string; faultstring?: string } } } } })
      .root?.Envelope?.Body?.Fault;
    out[url] = f ? { faultcode: f.faultcode, faultstring: f.faultstring } : (err as Error).message;
  }
}
process.stdout.write(JSON.stringify(out));
