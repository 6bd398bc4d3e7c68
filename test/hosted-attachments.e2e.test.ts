// Attachments of hosted feature layers kept as one GeoPackage per service in the data folder (the embedded default):
// the shared attachment suite (test/helpers/hosted-attachment-cases.ts).
import { hostedAttachmentSuite } from "./helpers/hosted-attachment-cases.ts";

hostedAttachmentSuite({ start: async () => ({}), stop: async () => undefined });
