// Attachments of hosted feature layers kept in PostgreSQL + PostGIS (MAPGATE_HOSTED_DATABASE) reached through a
// stand-in for RDS Proxy (test/helpers/pg-proxy.ts): the shared attachment suite (test/helpers/hosted-attachment-cases.ts)
// unchanged, the bytes in the data folder as on the GeoPackage backing.
import { hostedAttachmentSuite } from "./helpers/hosted-attachment-cases.ts";
import { type PgProxy, startPgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

const HOST = { user: "mapgate_host", password: `host-pw-${Math.random().toString(36).slice(2)}` };

let db: Postgres;
let proxy: PgProxy;

hostedAttachmentSuite({
  start: async () => {
    db = await startPostgres();
    await db.admin.query(`CREATE ROLE ${HOST.user} LOGIN PASSWORD '${HOST.password}'`);
    await db.admin.query(`GRANT CREATE ON DATABASE ${db.database} TO ${HOST.user}`);
    proxy = await startPgProxy(db.port, 500);
    return {
      MAPGATE_HOSTED_DATABASE: `postgresql://${HOST.user}:${HOST.password}@127.0.0.1:${proxy.port}/${db.database}?sslmode=disable`,
    };
  },
  stop: async () => {
    await proxy?.close();
    await db?.stop();
  },
});
