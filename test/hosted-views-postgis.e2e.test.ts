// A public read-only view over an editable hosted layer kept in PostgreSQL + PostGIS (MAPGATE_HOSTED_DATABASE),
// reached through a stand-in for RDS Proxy (test/helpers/pg-proxy.ts): the shared view suite
// (test/helpers/hosted-view-cases.ts) unchanged, its reads through the PostgreSQL emitter.
import { hostedViewSuite } from "./helpers/hosted-view-cases.ts";
import { hostThroughProxy, type PgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

let db: Postgres;
let proxy: PgProxy;

hostedViewSuite({
  start: async () => {
    db = await startPostgres();
    const hosted = await hostThroughProxy(db, 500);
    proxy = hosted.proxy;
    return hosted.env;
  },
  stop: async () => {
    await proxy?.close();
    await db?.stop();
  },
});
