// node-soap (npm `soap`) built from the served WSDL, calling all seven operations; prints JSON.
// Usage: node soap-node.ts <wsdl url>   (NODE_EXTRA_CA_CERTS trusts the engine's certificate)
import soap from "soap";

const [wsdlUrl] = process.argv.slice(2) as [string];
const client = await soap.createClientAsync(wsdlUrl);

type Row = {
  Name?: string;
  Type?: string;
  Url?: string;
  ParentType?: string;
  Capabilities?: string;
  Description?: string;
};
// node-soap: an empty list is null, one element a one-element array; absent text comes back undefined.
const rows = (result: { ServiceDescriptions?: { ServiceDescription?: Row[] | Row } | null }) => {
  const list = result.ServiceDescriptions?.ServiceDescription ?? [];
  return (Array.isArray(list) ? list : [list]).map((r) => ({
    name: r.Name ?? "",
    type: r.Type ?? "",
    url: r.Url ?? "",
    parentType: r.ParentType ?? "",
    capabilities: r.Capabilities ?? "",
    description: r.Description ?? "",
  }));
};
const ex = async (folder: string) => rows((await client.GetServiceDescriptionsExAsync({ FolderName: folder }))[0]);

const out: Record<string, unknown> = {};
out.version = (await client.GetMessageVersionAsync({}))[0].MessageVersion;
out.formats = (await client.GetMessageFormatsAsync({}))[0].MessageFormats;
out.tokenUrl = (await client.GetTokenServiceURLAsync({}))[0].TokenServiceURL ?? "";
out.requiresTokens = (await client.RequiresTokensAsync({}))[0].Result;
const folders = (await client.GetFoldersAsync({}))[0].FolderNames?.String ?? [];
out.folders = Array.isArray(folders) ? folders : [folders];
out.all = rows((await client.GetServiceDescriptionsAsync({}))[0]);
out.root = await ex("");
out.utilities = await ex("Utilities");
out.imagery = await ex("Imagery");
out.empty = await ex("Staging");
try {
  await ex("NoSuchFolder");
  out.unknownFolder = "answered";
} catch (err) {
  out.unknownFolder = String(
    (err as { root?: { Envelope?: { Body?: { Fault?: { faultcode?: string } } } } }).root?.Envelope?.Body?.Fault
      ?.faultcode ?? (err as Error).message,
  );
}
process.stdout.write(`${JSON.stringify(out)}\n`);
