// OpenClaw's own keyword expansion and stop-word test, for memdeck's list.
// argv[2]: JSON {queries: [...], words: [...]}; stdout: JSON
// {keywords: [[...] per query], stop: [bool per word]}.
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const sdk = (name) =>
  pathToFileURL(path.join(process.env.OPENCLAW_PKG, "dist", "plugin-sdk", name)).href;
const { extractKeywords, isQueryStopWordToken } = await import(
  sdk("memory-core-host-engine-sessions.js")
);
const { queries, words } = JSON.parse(readFileSync(process.argv[2], "utf8"));
process.stdout.write(
  JSON.stringify({
    keywords: queries.map((q) => extractKeywords(q, { ftsTokenizer: "unicode61" })),
    stop: words.map((w) => isQueryStopWordToken(w)),
  }),
);
