// Resolve memory-search settings with the installed OpenClaw package itself.
// argv[2]: a JSON file holding an array of {config, agentId}; stdout: JSON array of
// {resolved, valid, issues} (resolved is null when memory search is disabled).
// Only calls OpenClaw's exported functions; no OpenClaw code lives here.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const pkg = process.env.OPENCLAW_PKG;
const sdk = (name) => pathToFileURL(path.join(pkg, "dist", "plugin-sdk", name)).href;
const { resolveMemorySearchConfig } = await import(sdk("memory-core-host-engine-foundation.js"));

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const { config, agentId } of cases) {
  try {
    out.push({ resolved: resolveMemorySearchConfig(structuredClone(config), agentId) });
  } catch (error) {
    out.push({ error: String(error && error.message || error) });
  }
}
process.stdout.write(JSON.stringify(out));
