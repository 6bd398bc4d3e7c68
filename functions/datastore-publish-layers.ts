// POST …/portals/<self | id>/datastores/allDatasets/publishLayers: one layer per dataset of a data store, as
// a job; calling it again publishes only datasets that have no layer yet (nothing is duplicated).
import { badRequest } from "#shared/errors.ts";
import { restHandler } from "#shared/http/pipeline.ts";
import { jobOperation, startJob } from "#shared/jobs.ts";
import { BULK_PRIVILEGE, folderProblem, registeredServer, usableDataStore } from "#shared/publishing.ts";
import { serverField, storeChoices, storeField } from "#shared/form-choices.ts";

const FAILED = "Unable to publish layers.";

export const handler = restHandler(
  {
    ...jobOperation("Publish Layers"),
    formFields: async (req) => {
      const choices = await storeChoices(req);
      return [
        storeField("datastoreId", choices),
        serverField(choices),
        { name: "serverFolder", label: "Server folder", hint: "Empty: the root folder." },
        { name: "portalFolderId", label: "Portal folder id", hint: "Empty: the owner's root folder." },
        {
          name: "templateSvcConfig",
          label: "templateSvcConfig (JSON)",
          type: "textarea",
          hint: "Empty: each layer as a feature service with the defaults.",
        },
      ];
    },
    form: [
      { name: "datastoreId", label: "Data store id", required: true },
      { name: "serverId", label: "Server id", required: true },
      { name: "serverFolder", label: "Server folder" },
      { name: "portalFolderId", label: "Portal folder id" },
      { name: "templateSvcConfig", label: "templateSvcConfig (JSON)", type: "textarea" },
    ],
  },
  async (req) => {
    const { store, identity } = await usableDataStore(req, FAILED, { privilege: BULK_PRIVILEGE });
    const { user } = identity;
    const problems: string[] = [];
    const server = await registeredServer(store, req.params.get("serverId"));
    if (typeof server === "string") problems.push(server);
    const folder = (req.params.get("serverFolder") ?? "").trim();
    const badFolder = folderProblem(folder);
    if (badFolder) problems.push(badFolder);
    const template = req.params.get("templateSvcConfig");
    if (template) {
      try {
        const parsed: unknown = JSON.parse(template);
        if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new Error("not an object");
      } catch {
        problems.push("'templateSvcConfig' must be a JSON object.");
      }
    }
    if (problems.length > 0 || typeof server === "string") throw badRequest(FAILED, problems);
    const params = {
      datastoreId: store.datastoreId,
      serverId: server.serverId,
      serverFolder: folder,
      portalFolderId: req.params.get("portalFolderId") ?? "",
      templateSvcConfig: template ?? "",
    };
    const { jobId, key } = await startJob(req, user.username, "publishLayers", params);
    return { jobId, key, success: true };
  },
);
