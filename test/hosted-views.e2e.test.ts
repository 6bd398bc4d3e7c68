// A public read-only view over an editable hosted layer kept as a GeoPackage in the data folder (the embedded
// default): the shared view suite (test/helpers/hosted-view-cases.ts).
import { hostedViewSuite } from "./helpers/hosted-view-cases.ts";

hostedViewSuite({ start: async () => ({}), stop: async () => undefined });
