// Reading a SOAP 1.1 request safely. Before any parser sees the body: a size limit, no DTD or entity
// declarations at all (XXE and entity expansion are impossible, not merely disabled), and one linear scan
// that bounds nesting depth and element count. Then fast-xml-parser, with entity processing off, and
// namespace resolution by URI: elements are matched by namespace and local name, never by prefix.
import { XMLParser, XMLValidator } from "fast-xml-parser";

export const SOAP11 = "http://schemas.xmlsoap.org/soap/envelope/";
export const SOAP12 = "http://www.w3.org/2003/05/soap-envelope";

export const LIMITS = { maxBytes: 256 * 1024, maxDepth: 32, maxElements: 10_000 };

/** A request the client got wrong: answered as a soap:Client fault. */
export class ClientFault extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ClientFault";
  }
}

export interface Operation {
  readonly namespace: string;
  readonly name: string;
  /** Child elements by local name (unqualified, as the schema declares them) with their text. */
  readonly fields: ReadonlyMap<string, string>;
}

/** The `>` that ends a tag, skipping quoted attribute values (which may hold `>` or `/>`). */
function tagEnd(xml: string, from: number): number {
  let quote = "";
  for (let j = from; j < xml.length; j++) {
    const c = xml[j];
    if (quote) {
      if (c === quote) quote = "";
    } else if (c === '"' || c === "'") quote = c;
    else if (c === ">") return j;
  }
  return -1;
}

/** One pass over the text: nesting depth and element count, ignoring comments, CDATA and PIs. */
function scan(xml: string): void {
  let depth = 0;
  let elements = 0;
  let i = xml.indexOf("<");
  while (i >= 0 && i < xml.length) {
    const next = xml[i + 1];
    if (xml.startsWith("<!--", i)) {
      const end = xml.indexOf("-->", i + 4);
      if (end < 0) throw new ClientFault("The request is not well-formed XML.");
      i = xml.indexOf("<", end + 3);
      continue;
    }
    if (xml.startsWith("<![CDATA[", i)) {
      const end = xml.indexOf("]]>", i + 9);
      if (end < 0) throw new ClientFault("The request is not well-formed XML.");
      i = xml.indexOf("<", end + 3);
      continue;
    }
    if (next === "?") {
      // A processing instruction (or the declaration) ends at "?>", whatever it holds: no depth change.
      const end = xml.indexOf("?>", i + 2);
      if (end < 0) throw new ClientFault("The request is not well-formed XML.");
      i = xml.indexOf("<", end + 2);
      continue;
    }
    const close = tagEnd(xml, i + 1);
    if (close < 0) throw new ClientFault("The request is not well-formed XML.");
    if (next === "!") {
      throw new ClientFault("Document type declarations are not accepted.");
    } else if (next === "/") {
      depth--;
      if (depth < 0) throw new ClientFault("The request is not well-formed XML.");
    } else if (xml[close - 1] !== "/") {
      depth++;
      elements++;
      if (depth > LIMITS.maxDepth) throw new ClientFault(`The request nests elements deeper than ${LIMITS.maxDepth}.`);
    } else elements++;
    if (elements > LIMITS.maxElements)
      throw new ClientFault(`The request has more than ${LIMITS.maxElements} elements.`);
    i = xml.indexOf("<", close + 1);
  }
}

const parser = new XMLParser({
  preserveOrder: true,
  ignoreAttributes: false,
  attributeNamePrefix: "",
  processEntities: false,
  htmlEntities: false,
  parseTagValue: false,
  parseAttributeValue: false,
  trimValues: false,
  ignoreDeclaration: true,
  ignorePiTags: true,
  // No path strings for callbacks (we use none): the parser would otherwise join the whole ancestor path
  // for every element, and a few long-named ancestors over thousands of children make that quadratic.
  jPath: false,
  // A second bound behind the scan's own (the scan is what answers; this only guards the parser).
  maxNestedTags: LIMITS.maxDepth + 4,
});

type Node = Record<string, unknown>;

const PREDEFINED: Record<string, string> = { lt: "<", gt: ">", amp: "&", quot: '"', apos: "'" };

/** The five predefined entities and character references; anything else is an undeclared entity. */
function decodeText(text: string): string {
  return text.replace(/&(#x[0-9A-Fa-f]{1,6}|#[0-9]{1,7}|[A-Za-z][\w.-]*);/g, (_m, ref: string) => {
    if (ref.startsWith("#x") || ref.startsWith("#")) {
      const code = ref.startsWith("#x") ? Number.parseInt(ref.slice(2), 16) : Number.parseInt(ref.slice(1), 10);
      if (code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff) || code === 0) {
        throw new ClientFault("The request has an invalid character reference.");
      }
      return String.fromCodePoint(code);
    }
    const known = PREDEFINED[ref];
    if (known === undefined) throw new ClientFault(`The request refers to an undeclared entity '${ref.slice(0, 32)}'.`);
    return known;
  });
}

interface Element {
  readonly uri: string;
  readonly local: string;
  readonly children: Element[];
  readonly text: string;
}

/**
 * The prefixes in scope, as one map changed in place: an element's declarations are set on entry and undone
 * on close. Copying the map per declaring element instead costs (declarations in scope) × (elements), which a
 * body that declares thousands of prefixes on one element and one more on each of thousands of children
 * turns into seconds of CPU before the token check; this way each declaration costs one set and one undo.
 */
class Scope {
  // A prefix going out of scope keeps its entry, set to undefined: deleting and re-adding the same key in a
  // map of thousands made V8 rehash the whole table again and again (seconds again, as measured).
  readonly #uris = new Map<string, string | undefined>();

  get(prefix: string): string | undefined {
    return this.#uris.get(prefix);
  }

  /** Declares a prefix, noting in `undo` what it replaced. */
  declare(prefix: string, uri: string, undo: [string, string | undefined][]): void {
    undo.push([prefix, this.#uris.get(prefix)]);
    this.#uris.set(prefix, uri);
  }

  /** Undoes an element's declarations, last first, so each prefix returns to what its parent saw. */
  restore(undo: readonly [string, string | undefined][]): void {
    for (let i = undo.length - 1; i >= 0; i--) {
      const [prefix, previous] = undo[i] as [string, string | undefined];
      this.#uris.set(prefix, previous);
    }
  }
}

function resolve(node: Node, scope: Scope): Element | undefined {
  const tag = Object.keys(node).find((k) => k !== ":@");
  if (!tag || tag === "#text") return undefined;
  const attrs = (node[":@"] ?? {}) as Record<string, string>;
  const undo: [string, string | undefined][] = [];
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "xmlns" || name.startsWith("xmlns:")) {
      scope.declare(name === "xmlns" ? "" : name.slice(6), decodeText(value), undo);
    }
  }
  const colon = tag.indexOf(":");
  const prefix = colon < 0 ? "" : tag.slice(0, colon);
  const local = colon < 0 ? tag : tag.slice(colon + 1);
  const uri = scope.get(prefix);
  if (uri === undefined && prefix !== "")
    throw new ClientFault(`The namespace prefix '${prefix.slice(0, 32)}' is not declared.`);
  const children: Element[] = [];
  let text = "";
  for (const child of (node[tag] ?? []) as Node[]) {
    if ("#text" in child) text += decodeText(String(child["#text"]));
    else {
      const el = resolve(child, scope);
      if (el) children.push(el);
    }
  }
  // Not in a finally: a fault ends the whole read, and the scope with it.
  scope.restore(undo);
  return { uri: uri ?? "", local, children, text };
}

export function readOperation(body: Buffer): Operation {
  if (body.length > LIMITS.maxBytes) throw new ClientFault(`The request is larger than ${LIMITS.maxBytes} bytes.`);
  const xml = body.toString("utf8");
  if (xml.trim() === "") throw new ClientFault("The request has no body: send a SOAP 1.1 envelope.");
  if (/<!DOCTYPE|<!ENTITY/i.test(xml)) throw new ClientFault("Document type declarations are not accepted.");
  scan(xml);
  if (XMLValidator.validate(xml) !== true) throw new ClientFault("The request is not well-formed XML.");
  let parsed: Node[];
  try {
    parsed = parser.parse(xml) as Node[];
  } catch {
    // Whatever the parser refuses that the validator let through is still the request's fault.
    throw new ClientFault("The request is not well-formed XML.");
  }
  const scope = new Scope();
  const roots = parsed.map((n) => resolve(n, scope)).filter((e): e is Element => !!e);
  const envelope = roots[0];
  if (roots.length !== 1 || !envelope || envelope.local !== "Envelope") {
    throw new ClientFault("The request is not a SOAP envelope.");
  }
  if (envelope.uri === SOAP12) throw new ClientFault("SOAP 1.2 is not supported: send a SOAP 1.1 envelope.");
  if (envelope.uri !== SOAP11) throw new ClientFault("The request is not a SOAP 1.1 envelope.");
  const soapBody = envelope.children.find((c) => c.uri === SOAP11 && c.local === "Body");
  if (!soapBody) throw new ClientFault("The SOAP envelope has no Body.");
  const op = soapBody.children[0];
  if (!op || soapBody.children.length !== 1) throw new ClientFault("The SOAP Body must hold exactly one operation.");
  const fields = new Map<string, string>();
  for (const child of op.children) fields.set(child.local, child.text);
  return { namespace: op.uri, name: op.local, fields };
}
