// `npm run admin -- events [--follow]`: the local bus's event log, one JSON event per line (with the rules
// each one matched), then, with --follow, each new event as it is appended.
import { existsSync } from "node:fs";
import { open, stat } from "node:fs/promises";
import { eventFiles } from "../local/events.ts";

export async function followEvents(dataDir: string, follow: boolean, print: (line: string) => void): Promise<void> {
  const { log } = eventFiles(dataDir);
  let offset = 0;
  let partial = "";
  const readNew = async () => {
    if (!existsSync(log)) return;
    const size = (await stat(log)).size;
    if (size <= offset) return;
    const file = await open(log, "r");
    try {
      const buffer = Buffer.alloc(size - offset);
      await file.read(buffer, 0, buffer.length, offset);
      offset = size;
      const lines = (partial + buffer.toString("utf8")).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) if (line) print(line);
    } finally {
      await file.close();
    }
  };
  await readNew();
  if (!follow) return;
  await new Promise<never>(() => {
    setInterval(() => void readNew(), 250);
  });
}
