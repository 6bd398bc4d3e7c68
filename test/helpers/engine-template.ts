// Global setup (vitest `globalSetup`): a folder for the run's demo data template (see demoTemplate in engine.ts),
// made empty here and filled by the first engine a test starts; removed when the run ends.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    engineTemplate: string;
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), "mapgate-demo-template-"));
  project.provide("engineTemplate", dir);
  return () => rmSync(dir, { recursive: true, force: true });
}
