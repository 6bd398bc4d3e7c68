// The Catalog service's contract (WSDL) and its messages, written directly as strings: the answers are
// flat lists, and a direct serializer is simpler and far faster than a generic object-to-XML pass.
import { SOAP11 } from "#shared/soap/envelope.ts";

export const MESSAGE_FORMATS = [
  "vendorServiceCatalogMessageFormatBin",
  "vendorServiceCatalogMessageFormatSoap",
  "vendorServiceCatalogMessageFormatSoapOrBin",
] as const;

export const GIS_VERSIONS = [
  "vendorGisVersion83",
  "vendorGisVersion90",
  "vendorGisVersion92",
  "vendorGisVersion93",
  "vendorGisVersion10",
  "vendorGisVersion101",
  "vendorGisVersion103",
  "vendorGisVersion104",
  "vendorGisVersion105",
  "vendorGisVersion106",
  "vendorGisVersion107",
  "vendorGisVersion108",
] as const;

export const OPERATIONS = [
  "GetMessageVersion",
  "GetMessageFormats",
  "GetTokenServiceURL",
  "GetFolders",
  "GetServiceDescriptions",
  "GetServiceDescriptionsEx",
  "RequiresTokens",
] as const;
export type OperationName = (typeof OPERATIONS)[number];

export function escapeXml(text: string): string {
  return text.replace(/[&<>"]/g, (c) => (c === "&" ? "&amp;" : c === "<" ? "&lt;" : c === ">" ? "&gt;" : "&quot;"));
}

export function wsdl(namespace: string, address: string): string {
  const ns = escapeXml(namespace);
  const enumeration = (name: string, values: readonly string[]) =>
    `<xs:simpleType name="${name}"><xs:restriction base="xs:string">${values
      .map((v) => `<xs:enumeration value="${v}"/>`)
      .join("")}</xs:restriction></xs:simpleType>`;
  const wrapper = (name: string, children: string) =>
    `<xs:element name="${name}"><xs:complexType><xs:sequence>${children}</xs:sequence></xs:complexType></xs:element>`;
  const child = (name: string, type: string) => `<xs:element name="${name}" type="${type}"/>`;
  const responses: Record<OperationName, string> = {
    GetMessageVersion: child("MessageVersion", "tns:vendorGisVersion"),
    GetMessageFormats: child("MessageFormats", "tns:vendorServiceCatalogMessageFormat"),
    GetTokenServiceURL: child("TokenServiceURL", "xs:string"),
    GetFolders: child("FolderNames", "tns:ArrayOfString"),
    GetServiceDescriptions: child("ServiceDescriptions", "tns:ArrayOfServiceDescription"),
    GetServiceDescriptionsEx: child("ServiceDescriptions", "tns:ArrayOfServiceDescription"),
    RequiresTokens: child("Result", "xs:boolean"),
  };
  const requests: Record<OperationName, string> = {
    GetMessageVersion: "",
    GetMessageFormats: "",
    GetTokenServiceURL: "",
    GetFolders: "",
    GetServiceDescriptions: "",
    GetServiceDescriptionsEx: child("FolderName", "xs:string"),
    RequiresTokens: "",
  };
  const elements = OPERATIONS.map((op) => wrapper(op, requests[op]) + wrapper(`${op}Response`, responses[op])).join(
    "\n",
  );
  const messages = OPERATIONS.map(
    (op) =>
      `<wsdl:message name="${op}In"><wsdl:part name="parameters" element="tns:${op}"/></wsdl:message>` +
      `<wsdl:message name="${op}Out"><wsdl:part name="parameters" element="tns:${op}Response"/></wsdl:message>`,
  ).join("\n");
  const portOps = OPERATIONS.map(
    (op) =>
      `<wsdl:operation name="${op}"><wsdl:input message="tns:${op}In"/><wsdl:output message="tns:${op}Out"/></wsdl:operation>`,
  ).join("\n");
  const bindingOps = OPERATIONS.map(
    (op) =>
      `<wsdl:operation name="${op}"><soap:operation soapAction="" style="document"/>` +
      `<wsdl:input><soap:body use="literal"/></wsdl:input><wsdl:output><soap:body use="literal"/></wsdl:output></wsdl:operation>`,
  ).join("\n");
  return `<?xml version="1.0" encoding="UTF-8"?>
<wsdl:definitions xmlns:wsdl="http://schemas.xmlsoap.org/wsdl/" xmlns:soap="http://schemas.xmlsoap.org/wsdl/soap/" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:tns="${ns}" targetNamespace="${ns}">
<wsdl:types>
<xs:schema targetNamespace="${ns}" xmlns:tns="${ns}">
${enumeration("vendorServiceCatalogMessageFormat", MESSAGE_FORMATS)}
${enumeration("vendorGisVersion", GIS_VERSIONS)}
<xs:complexType name="ServiceDescription"><xs:sequence>${[
    "Name",
    "Type",
    "Url",
    "ParentType",
    "Capabilities",
    "Description",
  ]
    .map((n) => child(n, "xs:string"))
    .join("")}</xs:sequence></xs:complexType>
<xs:complexType name="ArrayOfServiceDescription"><xs:sequence><xs:element name="ServiceDescription" type="tns:ServiceDescription" minOccurs="0" maxOccurs="unbounded"/></xs:sequence></xs:complexType>
<xs:complexType name="ArrayOfString"><xs:sequence><xs:element name="String" type="xs:string" minOccurs="0" maxOccurs="unbounded"/></xs:sequence></xs:complexType>
${elements}
</xs:schema>
</wsdl:types>
${messages}
<wsdl:portType name="ServiceCatalogPort">
${portOps}
</wsdl:portType>
<wsdl:binding name="ServiceCatalogBinding" type="tns:ServiceCatalogPort">
<soap:binding style="document" transport="http://schemas.xmlsoap.org/soap/http"/>
${bindingOps}
</wsdl:binding>
<wsdl:service name="Catalog">
<wsdl:port name="ServiceCatalogPort" binding="tns:ServiceCatalogBinding"><soap:address location="${escapeXml(address)}"/></wsdl:port>
</wsdl:service>
</wsdl:definitions>
`;
}

/** The answer envelope: the wrapper is in the target namespace, its children unqualified (no elementFormDefault). */
export function response(namespace: string, op: OperationName, content: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="${SOAP11}" xmlns:tns="${escapeXml(namespace)}"><soap:Body><tns:${op}Response>${content}</tns:${op}Response></soap:Body></soap:Envelope>`;
}

export function fault(code: "soap:Client" | "soap:Server", message: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><soap:Envelope xmlns:soap="${SOAP11}"><soap:Body><soap:Fault><faultcode>${code}</faultcode><faultstring>${escapeXml(message)}</faultstring></soap:Fault></soap:Body></soap:Envelope>`;
}

export interface Description {
  readonly name: string;
  readonly type: string;
  readonly url: string;
  readonly parentType: string;
  readonly capabilities: string;
  readonly description: string;
}

export function descriptions(list: readonly Description[]): string {
  let out = "<ServiceDescriptions>";
  for (const d of list) {
    out += `<ServiceDescription><Name>${escapeXml(d.name)}</Name><Type>${escapeXml(d.type)}</Type><Url>${escapeXml(
      d.url,
    )}</Url><ParentType>${escapeXml(d.parentType)}</ParentType><Capabilities>${escapeXml(
      d.capabilities,
    )}</Capabilities><Description>${escapeXml(d.description)}</Description></ServiceDescription>`;
  }
  return `${out}</ServiceDescriptions>`;
}

export function strings(element: string, values: readonly string[]): string {
  return `<${element}>${values.map((v) => `<String>${escapeXml(v)}</String>`).join("")}</${element}>`;
}
