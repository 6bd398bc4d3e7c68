// Who may edit a hosted layer kept as a GeoPackage (the embedded default), and which of its features: the
// who-may-edit matrix and the ownership rules (test/helpers/hosted-access-cases.ts).
import { accessSuite } from "./helpers/hosted-access-cases.ts";

accessSuite({ start: async () => ({}), stop: async () => undefined }, { matrix: true });
