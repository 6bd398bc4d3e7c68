// Workflow task: one turn of the publishLayers loop (shared/publish-layers.ts says what a turn does).
import { publishLayersPage } from "#shared/publish-layers.ts";
import { taskHandler } from "#shared/tasks.ts";

export const handler = taskHandler("publish-layers", publishLayersPage);
