// OpenClaw's own transcript flattening and session chunking: buildSessionEntry
// (what `openclaw memory index` reads a transcript file with) and the index
// preparation step for source "sessions" (chunks, lines mapped back to JSONL).
// argv[2]: JSON [absolute transcript path]; stdout: JSON [{path, content,
// lineMap, chunks: [[startLine, endLine, hash]]} or null] in the same order.
import { readFileSync, readdirSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const dist = path.join(process.env.OPENCLAW_PKG, "dist");
const named = (prefix) => {
  const file = readdirSync(dist).find((f) => f.startsWith(prefix) && f.endsWith(".mjs"));
  if (!file) throw new Error(`no ${prefix}*.mjs in ${dist}`);
  return pathToFileURL(path.join(dist, file)).href;
};
const { buildSessionEntry } = await import(
  pathToFileURL(path.join(dist, "plugin-sdk", "memory-core-host-engine-sessions.js")).href
);
const { t: prepareMemoryIndexChunks } = await import(named("manager-index-preparation-"));

const files = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const file of files) {
  const entry = await buildSessionEntry(file);
  if (!entry) {
    out.push(null);
    continue;
  }
  const { chunks } = prepareMemoryIndexChunks({
    entry,
    source: "sessions",
    content: entry.content,
    pathClassification: { originClass: "agent", curatedRoot: false },
    chunking: { tokens: 400, overlap: 80 },
  });
  out.push({
    path: entry.path,
    content: entry.content,
    lineMap: entry.lineMap,
    chunks: chunks.map((c) => [c.startLine, c.endLine, c.hash]),
  });
}
// exit once stdout is flushed (a pipe takes 64 KiB at a time); OpenClaw keeps handles open
process.stdout.write(JSON.stringify(out), () => process.exit(0));
