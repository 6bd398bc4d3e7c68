// Ownership-based access control on a hosted layer kept in PostgreSQL + PostGIS (MAPGATE_HOSTED_DATABASE) reached
// through a stand-in for RDS Proxy: the ownership rules of test/helpers/hosted-access-cases.ts, each query's creator
// condition and each edit's checked by PostgreSQL's statements.
import { accessSuite } from "./helpers/hosted-access-cases.ts";
import { type PgProxy, startPgProxy } from "./helpers/pg-proxy.ts";
import { type Postgres, startPostgres } from "./helpers/postgres.ts";

const HOST = { user: "mapgate_host", password: `host-${Math.random().toString(36).slice(2)}` };

let db: Postgres;
let proxy: PgProxy;

accessSuite(
  {
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
  },
  { matrix: false },
);
