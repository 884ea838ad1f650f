// OpenClaw's FTS-only ranking and selection on given keyword hits:
// MemoryIndexManager's own finalizeKeywordOnlyResults (decay at a pinned clock,
// importance, its order, minScore — and the floor that drops to 0 when nothing
// passes), called on a stand-in manager, then cut to maxResults as its search()
// does. argv[2]: JSON [{nowMs, minScore, maxResults, keyword: [...]}]; argv[3]:
// output file, JSON [[{path, startLine, endLine, score}], ...].
import { readFileSync, writeFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const runtime = pathToFileURL(
  path.join(process.env.OPENCLAW_PKG, "dist", "extensions", "memory-core", "manager-runtime.js"),
).href;
const { MemoryIndexManager } = await import(runtime);
const manager = Object.assign(Object.create(MemoryIndexManager.prototype), {
  workspaceDir: "/nonexistent-memdeck-workspace",
  loadSessionSourceMtimes: () => undefined,
  loadRemoteMemorySourceMtimes: () => undefined,
});
const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const realNow = Date.now;
const out = [];
for (const c of cases) {
  Date.now = () => c.nowMs;
  const ranked = await MemoryIndexManager.prototype.finalizeKeywordOnlyResults.call(manager, {
    results: c.keyword,
    temporalDecay: { enabled: true, halfLifeDays: 30 },
    maxResults: 200, // search() asks for its candidate universe, then cuts
    minScore: c.minScore,
  });
  out.push(
    ranked
      .slice(0, c.maxResults)
      .map((e) => ({ path: e.path, startLine: e.startLine, endLine: e.endLine, score: e.score })),
  );
}
Date.now = realNow;
writeFileSync(process.argv[3], JSON.stringify(out));
process.exit(0);
