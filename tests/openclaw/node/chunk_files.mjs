// Chunk files with OpenClaw's own index preparation (the step `openclaw memory
// index` runs per file: annotation carriers stripped, MEMORY.md/USER.md per
// entry, blank chunks dropped). argv[2]: JSON [{path, content, source?}];
// stdout: JSON [[[startLine, endLine, hash], ...], ...] in the same order.
import { readFileSync, readdirSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const dist = path.join(process.env.OPENCLAW_PKG, "dist");
const named = (prefix) => {
  const file = readdirSync(dist).find((f) => f.startsWith(prefix) && f.endsWith(".mjs"));
  if (!file) throw new Error(`no ${prefix}*.mjs in ${dist}`);
  return pathToFileURL(path.join(dist, file)).href;
};
const { t: prepareMemoryIndexChunks } = await import(named("manager-index-preparation-"));

const files = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = files.map(({ path: rel, content, source }) => {
  const { chunks } = prepareMemoryIndexChunks({
    entry: { path: rel, mtimeMs: 0 },
    source: source ?? "memory",
    content,
    pathClassification: { originClass: "agent", curatedRoot: rel === "MEMORY.md" },
    chunking: { tokens: 400, overlap: 80 },
  });
  return chunks.map((c) => [c.startLine, c.endLine, c.hash]);
});
process.stdout.write(JSON.stringify(out));
