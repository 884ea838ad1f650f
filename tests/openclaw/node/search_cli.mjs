// Run many `openclaw memory search --json` commands in one Node process: the
// CLI's own command function (runMemorySearch), called once per query, so the
// suite does not pay OpenClaw's start-up for each of them. The environment
// (OPENCLAW_HOME, OPENCLAW_STATE_DIR, OPENCLAW_CONFIG_PATH) is the caller's.
// argv[2]: JSON {queries: [query or {query, agent, maxResults?, minScore?, nowMs?}], maxResults?,
// minScore?, nowMs?} (a query's own options win); argv[3]: where
// to write the JSON array of the --json documents, one per query. The index must exist (run
// `openclaw memory index` first); nowMs pins the clock (Date.now) so temporal
// decay is computed at the same instant as memdeck's.
import { readFileSync, readdirSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const dist = path.join(process.env.OPENCLAW_PKG, "dist");
const named = (prefix) => {
  const file = readdirSync(dist).find((f) => f.startsWith(prefix) && f.endsWith(".mjs"));
  if (!file) throw new Error(`no ${prefix}*.mjs in ${dist}`);
  return pathToFileURL(path.join(dist, file)).href;
};
const request = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (request.nowMs) {
  const fixed = request.nowMs;
  Date.now = () => fixed;
}
const { runMemorySearch } = await import(named("cli.runtime-"));
const write = process.stdout.write.bind(process.stdout);
const documents = [];
for (const item of request.queries) {
  const { query, agent, ...own } = typeof item === "string" ? { query: item } : item;
  const nowMs = own.nowMs ?? request.nowMs;
  if (nowMs) {
    Date.now = () => nowMs;
  }
  let captured = "";
  process.stdout.write = (chunk, ...rest) => {
    captured += typeof chunk === "string" ? chunk : Buffer.from(chunk).toString("utf8");
    const callback = rest.find((x) => typeof x === "function");
    if (callback) callback();
    return true;
  };
  try {
    await runMemorySearch(query, {
      json: true,
      agent,
      maxResults: own.maxResults ?? request.maxResults,
      minScore: own.minScore ?? request.minScore,
    });
  } finally {
    process.stdout.write = write;
  }
  documents.push(JSON.parse(captured));
}
writeFileSync(process.argv[3], JSON.stringify(documents));
process.exit(0);
