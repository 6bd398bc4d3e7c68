// POST …/portals/<self | id>/datastores/publish: publishes a scene service or a map, image or vector tile
// layer by reference to a cached layer of a data store, as a job. Everything that can be checked now is
// checked now (400 with every problem listed); the service name is reserved before the job starts.
import { badRequest } from "#shared/errors.ts";
import { requireUser, restHandler } from "#shared/http/pipeline.ts";
import { itemId } from "#shared/ids.ts";
import { jobOperation, startJob } from "#shared/jobs.ts";
import {
  cacheFor,
  folderProblem,
  PUBLISH_TYPES,
  readServiceConfiguration,
  registeredServer,
  reserveName,
  usableDataStore,
} from "#shared/publishing.ts";
import { releaseServiceName, ServiceExistsError } from "#shared/stores/services.ts";
import { publishFormFields, publishFormValues } from "#shared/form-choices.ts";

const FAILED = "Unable to publish the service.";

export const handler = restHandler(
  {
    ...jobOperation("Publish From Data Store"),
    formFields: publishFormFields,
    formValues: publishFormValues,
    form: [
      { name: "serviceConfiguration", label: "serviceConfiguration (JSON)", type: "textarea", required: true },
      { name: "serverId", label: "Server id", required: true },
      { name: "serverFolder", label: "Server folder (empty: root)" },
      { name: "tags", label: "Tags (comma-separated)" },
      { name: "description", label: "Description", type: "textarea" },
    ],
  },
  async (req) => {
    requireUser(req);
    const problems: string[] = [];
    const config = readServiceConfiguration(req.params.get("serviceConfiguration"), problems);
    if (!config) throw badRequest(FAILED, problems);
    const privilege = PUBLISH_TYPES[config.type]?.privilege ?? "";
    const { store, identity } = await usableDataStore(req, FAILED, { privilege, id: config.cacheStoreId });
    const { user } = identity;
    const server = await registeredServer(store, req.params.get("serverId"));
    if (typeof server === "string") problems.push(server);
    const cache = await cacheFor(store, config);
    if ("problem" in cache) problems.push(cache.problem);
    const folder = (req.params.get("serverFolder") ?? "").trim();
    const badFolder = folderProblem(folder);
    if (badFolder) problems.push(badFolder);
    const description = req.params.get("description") ?? "";
    if (description.length > 4096) problems.push("'description' may have at most 4096 characters.");
    if (problems.length > 0 || typeof server === "string") throw badRequest(FAILED, problems);

    const jobId = itemId();
    try {
      await reserveName(server.serverId, folder, config.serviceName, jobId);
    } catch (err) {
      if (err instanceof ServiceExistsError) throw badRequest(FAILED, [err.message]);
      throw err;
    }
    const params = {
      serviceConfiguration: req.params.get("serviceConfiguration") ?? "",
      serverId: server.serverId,
      serverFolder: folder,
      tags: req.params.get("tags") ?? "",
      description,
    };
    try {
      const { key } = await startJob(req, user.username, "publish", params, jobId);
      return { jobId, key, success: true };
    } catch (err) {
      await releaseServiceName(server.serverId, folder, config.serviceName, jobId);
      throw err;
    }
  },
);
