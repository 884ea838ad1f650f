// OpenClaw's own memory_get tool (createMemoryGetTool, as an agent calls it) on
// given calls: what the agent sees for each, `details` of the tool result, or
// {thrown, message} when the tool refuses the call with an exception (a tool error
// for the agent, e.g. ToolInputError "lines must be a positive integer").
// argv[2]: JSON {workspace, calls: [{path, from?, lines?}]}; stdout: JSON [answer].
import { readFileSync, readdirSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const dist = path.join(process.env.OPENCLAW_PKG, "dist");
const chunk = readdirSync(dist).find(
  (f) =>
    f.startsWith("tools-") &&
    f.endsWith(".mjs") &&
    readFileSync(path.join(dist, f), "utf8").includes("function createMemoryGetTool("),
);
if (!chunk) throw new Error(`no tools-*.mjs with createMemoryGetTool in ${dist}`);
const { createMemoryGetTool } = await import(pathToFileURL(path.join(dist, chunk)).href);
const { workspace, calls } = JSON.parse(readFileSync(process.argv[2], "utf8"));
const config = {
  agents: { defaults: { workspace } },
  memory: { search: { provider: "none" } },
};
const tool = createMemoryGetTool({ config, agentId: "main" });
const answers = [];
for (const call of calls) {
  try {
    const result = await tool.execute("memdeck-diff", call);
    answers.push(result.details ?? JSON.parse(result.content[0].text));
  } catch (error) {
    answers.push({ thrown: error?.name ?? "Error", message: String(error?.message ?? error) });
  }
}
// exit once stdout is flushed (a pipe takes 64 KiB at a time); OpenClaw keeps handles open
process.stdout.write(JSON.stringify(answers), () => process.exit(0));
