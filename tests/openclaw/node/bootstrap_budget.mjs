// Bootstrap injection with the installed OpenClaw package's own functions: what of
// each workspace bootstrap file reaches the prompt, and the budget analysis.
// argv[2]: JSON {cases, configs, workspaces, stateDir}
//   cases:      [{files: [{name, path, content|null}], maxChars, totalMaxChars}]
//               -> {context: [{path, content}], files: [{name, path, missing, rawChars,
//                   injectedChars, truncated, effectiveFileLimit, causes}]}
//   configs:    [{config, agentId}] -> {maxChars, totalMaxChars, contextInjection}
//   workspaces: [{workspaceDir, config, agentId}] -> the same as cases, from the files
//               on disk (resolveBootstrapContextForDiagnostics: no hook runs)
// stdout: JSON {cases, configs, workspaces}. Only calls OpenClaw's functions.
import { readFileSync, readdirSync } from "node:fs";
import { pathToFileURL } from "node:url";
import path from "node:path";

const input = JSON.parse(readFileSync(process.argv[2], "utf8"));
if (input.stateDir) process.env.OPENCLAW_STATE_DIR = input.stateDir;
const dist = path.join(process.env.OPENCLAW_PKG, "dist");
// several bundles share a prefix: take the one whose source defines the function
const defining = (prefix, needle) => {
  const file = readdirSync(dist).find(
    (f) =>
      f.startsWith(prefix) &&
      f.endsWith(".mjs") &&
      readFileSync(path.join(dist, f), "utf8").includes(needle),
  );
  if (!file) throw new Error(`no ${prefix}*.mjs defining ${needle} in ${dist}`);
  return pathToFileURL(path.join(dist, file)).href;
};
const boot = await import(defining("bootstrap-", "function buildBootstrapContextFiles("));
const buildBootstrapContextFiles = boot.n;
const resolveBootstrapMaxChars = boot.r;
const resolveBootstrapTotalMaxChars = boot.i;
const budget = await import(defining("bootstrap-budget-", "export { analyzeBootstrapBudget,"));
const { analyzeBootstrapBudget, buildBootstrapInjectionStats } = budget;
const files = await import(defining("bootstrap-files-", "function resolveContextInjectionMode("));
const resolveContextInjectionMode = files.l;
const diagnostics = await import(
  defining("bootstrap-files-diagnostics-", "export { resolveBootstrapContextForDiagnostics }")
);

const analyse = (bootstrapFiles, contextFiles, maxChars, totalMaxChars) => {
  const stats = buildBootstrapInjectionStats({ bootstrapFiles, injectedFiles: contextFiles });
  const analysis = analyzeBootstrapBudget({
    files: stats,
    bootstrapMaxChars: maxChars,
    bootstrapTotalMaxChars: totalMaxChars,
  });
  return {
    context: contextFiles.map(({ path, content }) => ({ path, content })),
    files: analysis.files.map((f) => ({
      name: f.name,
      path: f.path,
      missing: Boolean(f.missing),
      rawChars: f.rawChars,
      injectedChars: f.injectedChars,
      truncated: f.truncated,
      effectiveFileLimit: f.effectiveFileLimit,
      causes: f.causes,
    })),
  };
};

const cases = (input.cases ?? []).map(({ files: list, maxChars, totalMaxChars }) => {
  const bootstrapFiles = list.map(({ name, path: p, content }) =>
    content === null ? { name, path: p, missing: true } : { name, path: p, content, missing: false },
  );
  const contextFiles = buildBootstrapContextFiles(bootstrapFiles, { maxChars, totalMaxChars });
  return analyse(bootstrapFiles, contextFiles, maxChars, totalMaxChars);
});

const configs = (input.configs ?? []).map(({ config, agentId }) => ({
  maxChars: resolveBootstrapMaxChars(config, agentId),
  totalMaxChars: resolveBootstrapTotalMaxChars(config, agentId),
  contextInjection: resolveContextInjectionMode(config, agentId),
}));

const workspaces = [];
for (const params of input.workspaces ?? []) {
  const { bootstrapFiles, contextFiles } =
    await diagnostics.resolveBootstrapContextForDiagnostics(params);
  workspaces.push(
    analyse(
      bootstrapFiles,
      contextFiles,
      resolveBootstrapMaxChars(params.config, params.agentId),
      resolveBootstrapTotalMaxChars(params.config, params.agentId),
    ),
  );
}
process.stdout.write(JSON.stringify({ cases, configs, workspaces }));
