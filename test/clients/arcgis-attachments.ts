// A hosted layer's attachments through the real @esri/arcgis-rest-feature-service client, signed in at the portal:
// addAttachment, getAttachments, updateAttachment and deleteAttachments, each file given as base64 in the input and
// sent as the File a browser app sends (run with the `browser` export condition: see test/helpers/arcgis.ts).
// Prints each answer (or error) as JSON. Input on stdin: {portal, username, password, calls}.
import { addAttachment, deleteAttachments, getAttachments, updateAttachment } from "@esri/arcgis-rest-feature-service";
import { runCalls, signedIn, type Call } from "./signed-in.ts";

const { input, session: authentication } = await signedIn<{ calls: Call[] }>();

/** A file of the input: `{name, type, base64}`. */
const fileOf = (o: Record<string, unknown>) => {
  const f = o.file as { name: string; type: string; base64: string };
  return new File([Buffer.from(f.base64, "base64")], f.name, { type: f.type });
};

const CALLS: Record<string, (o: Record<string, unknown>) => Promise<unknown>> = {
  addAttachment: (o) =>
    addAttachment({
      url: String(o.url),
      featureId: Number(o.featureId),
      attachment: fileOf(o),
      ...(o.params ? { params: o.params as never } : {}),
      authentication,
    }),
  getAttachments: (o) => getAttachments({ url: String(o.url), featureId: Number(o.featureId), authentication }),
  updateAttachment: (o) =>
    updateAttachment({
      url: String(o.url),
      featureId: Number(o.featureId),
      attachmentId: Number(o.attachmentId),
      attachment: fileOf(o),
      authentication,
    }),
  deleteAttachments: (o) =>
    deleteAttachments({
      url: String(o.url),
      featureId: Number(o.featureId),
      attachmentIds: o.attachmentIds as number[],
      authentication,
    }),
};

process.stdout.write(`${JSON.stringify(await runCalls(input.calls, CALLS))}\n`);
