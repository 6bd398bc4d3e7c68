// Editing hosted feature layers kept in PostgreSQL + PostGIS (MAPGATE_HOSTED_DATABASE) reached through a stand-in
// for RDS Proxy (test/helpers/pg-proxy.ts): the shared editing suite (test/helpers/hosted-edit-cases.ts) unchanged,
// GDAL reading each service's schema from the database.
import { hostedEditSuite } from "./helpers/hosted-edit-cases.ts";
import { type PgProxy, startPgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

const HOST = { user: "mapgate_host", password: `host'pw;@:/${Math.random().toString(36).slice(2)}` };

let db: Postgres;
let proxy: PgProxy;

hostedEditSuite({
  start: async () => {
    db = await startPostgres();
    // The login mapgate owns its data with: it makes a schema per service in the database, nothing more.
    await db.admin.query(`CREATE ROLE ${HOST.user} LOGIN PASSWORD '${HOST.password.replaceAll("'", "''")}'`);
    await db.admin.query(`GRANT CREATE ON DATABASE ${db.database} TO ${HOST.user}`);
    proxy = await startPgProxy(db.port, 500);
    const uri = `postgresql://${encodeURIComponent(HOST.user)}:${encodeURIComponent(HOST.password)}@127.0.0.1:${proxy.port}/${db.database}?sslmode=disable`;
    return { MAPGATE_HOSTED_DATABASE: uri };
  },
  stop: async () => {
    await proxy?.close();
    await db?.stop();
  },
  gdalSource: (_dataDir, serviceItemId) => [
    `PG:host=127.0.0.1 port=${db.port} dbname=${db.database} user=${HOST.user} password='${HOST.password.replaceAll("'", "\\'")}' schemas=h_${serviceItemId}`,
  ],
});
