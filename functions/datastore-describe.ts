// POST …/portals/<self | id>/datastores/describe: an asynchronous listing of a data store (or a folder in
// it): its datasets, folders and cached layers with their paths — how a user finds `pathInCachedStore`.
import { getDataStoreContents } from "#shared/stores/datastores.ts";
import { badRequest } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { jobOperation, startJob } from "#shared/jobs.ts";
import { DESCRIBE_PRIVILEGE, describePath, registeredServer, usableDataStore } from "#shared/publishing.ts";
import { StorageError } from "#shared/storage/storage.ts";
import { serverField, storeChoices, storeField } from "#shared/form-choices.ts";

const FAILED = "Unable to describe the data store.";

export const handler = restHandler(
  {
    ...jobOperation("Describe Data Store"),
    formFields: async (req) => {
      const choices = await storeChoices(req);
      return [
        storeField("datastoreId", choices),
        serverField(choices),
        {
          name: "path",
          label: "Path",
          hint: "Empty or /: the store's root; a folder's path as an earlier Describe lists it.",
        },
        { name: "type", label: "Type", hint: "Empty: datastore at the root, else as Describe listed the path." },
      ];
    },
    form: [
      { name: "datastoreId", label: "Data store id", required: true },
      { name: "serverId", label: "Server id", required: true },
      { name: "path", label: "Path (/ for the root)" },
      { name: "type", label: "Type (datastore for the root)" },
    ],
  },
  async (req) => {
    const { store, identity } = await usableDataStore(req, FAILED, { privilege: DESCRIBE_PRIVILEGE });
    const { user } = identity;
    const problems: string[] = [];
    const server = await registeredServer(store, req.params.get("serverId"));
    if (typeof server === "string") problems.push(server);
    const path = req.params.get("path") || "/";
    const type = req.params.get("type") || (path === "/" ? "datastore" : "");
    if (path === "/" ? type !== "datastore" : type === "datastore") {
      problems.push("'type' is 'datastore' exactly when 'path' is '/'.");
    } else {
      // Checked now so a typo is a 400, not a failed job; the job reads the path again when it runs. Describing
      // lists the registered datasets, so it reads them (publishing never does).
      const contents = { store, datasets: (await getDataStoreContents(store.datastoreId))?.datasets ?? [] };
      const found = await describePath(contents, path).catch((err: unknown) => {
        if (err instanceof StorageError) return err;
        throw err;
      });
      if (found instanceof StorageError) problems.push(`Path '${path.slice(0, 256)}' cannot be read: ${found.message}`);
      else if (!found) problems.push(`Path '${path.slice(0, 256)}' is not in data store '${store.datastoreId}'.`);
    }
    if (problems.length > 0) throw badRequest(FAILED, problems);
    const params = { datastoreId: store.datastoreId, serverId: req.params.get("serverId") ?? "", path, type };
    const { jobId, key } = await startJob(req, user.username, "describe", params);
    return { jobId, key, success: true };
  },
);
