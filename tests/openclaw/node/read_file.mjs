// OpenClaw's memory_get (readAgentMemoryFile) on given reads.
// argv[2]: JSON {workspace, reads: [{relPath, from?, lines?}]}; argv[3]: output
// file, JSON [result or {error}] in order.
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const sdk = (name) =>
  pathToFileURL(path.join(process.env.OPENCLAW_PKG, "dist", "plugin-sdk", name)).href;
const { readAgentMemoryFile } = await import(sdk("memory-core-host-runtime-files.js"));
const { workspace, reads } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const cfg = {
  agents: { defaults: { workspace } },
  memory: { search: { provider: "none" } },
};
const out = [];
for (const read of reads) {
  try {
    out.push(await readAgentMemoryFile({ cfg, agentId: "main", ...read }));
  } catch (error) {
    out.push({ error: String((error && error.message) || error) });
  }
}
writeFileSync(process.argv[3], JSON.stringify(out));
process.exit(0);
