// OpenClaw's hybrid merge (fusion 0.7/0.3, temporal decay, importance, MMR and
// its ordering) on given candidate lists: MemoryIndexManager's own
// mergeHybridResults, called with a stand-in manager that only answers the
// settings it reads. argv[2]: JSON [{nowMs, query, vector: [...], keyword: [...]}];
// argv[3]: output file, JSON [[{id, path, startLine, endLine, score}], ...].
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const runtime = pathToFileURL(
  path.join(process.env.OPENCLAW_PKG, "dist", "extensions", "memory-core", "manager-runtime.js"),
).href;
const { MemoryIndexManager } = await import(runtime);
const manager = {
  settings: { multimodal: { enabled: false, modalities: [], maxFileBytes: 0 } },
  workspaceDir: "/nonexistent-memdeck-workspace",
  loadSessionSourceMtimes: () => undefined,
  loadRemoteMemorySourceMtimes: () => undefined,
};
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const realNow = Date.now;
const out = [];
for (const c of cases) {
  Date.now = () => c.nowMs;
  const merged = await MemoryIndexManager.prototype.mergeHybridResults.call(manager, {
    query: c.query,
    vector: c.vector,
    keyword: c.keyword,
    vectorWeight: 0.7,
    textWeight: 0.3,
    mmr: { enabled: true, lambda: 0.7 },
    temporalDecay: { enabled: true, halfLifeDays: 30 },
  });
  out.push(merged.map((e) => ({ path: e.path, startLine: e.startLine, endLine: e.endLine, score: e.score })));
}
Date.now = realNow;
writeFileSync(process.argv[3], JSON.stringify(out));
process.exit(0);
