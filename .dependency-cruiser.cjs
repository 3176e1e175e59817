// The layer rule, checked by `npm run lint` (depcruise). Imports run one way:
//
//   src/index.ts, src/app.ts            entry: the Worker's handlers, the whole API in one chain
//   src/routes/                         one module per resource, mounted only by app.ts; beside each, its
//                                       routes' docs (<name>.docs.ts), which the Worker never imports
//   src/http/                           what routes share: auth, errors, params, validation, limits; may use src/admission/
//   src/{sales,admission,orders,settlement,checkout,lab}/   domain, in that order: a module may use the ones before it
//   src/{redis,isolate,analytics}/      infrastructure: the Upstash client and scripts, isolate memory, the funnel's data points
//   src/shared/                         leaf: limits, id patterns, key names, message and body shapes
//   src/locks/                          a library on its own: nothing of the application
//
// Tooling likewise: load/bench -> load/runner -> dev/stack, dev/gateway -> dev/lib; tests use
// load/runner and dev/ but never load/bench (it only prints what the runner measures);
// and all of it may read src/shared/ (the API's shapes) and the routes' docs, and use
// src/locks/ (a stand-alone library, like any package), never the Worker's insides.
// docs/architecture.md explains the layers.
const DOMAIN_ORDER = ["sales", "admission", "orders", "settlement", "checkout", "lab"];

const domainRules = DOMAIN_ORDER.slice(0, -1).map((folder, i) => ({
  name: `domain-order-${folder}`,
  comment: `src/${folder}/ comes before ${DOMAIN_ORDER.slice(i + 1).join(", ")} and must not import them`,
  severity: "error",
  from: { path: `^src/${folder}/` },
  to: { path: `^src/(${DOMAIN_ORDER.slice(i + 1).join("|")})/` },
}));

module.exports = {
  forbidden: [
    {
      name: "no-circular",
      severity: "error",
      from: { path: "^(src|dev|load|test)/" },
      to: { circular: true },
    },
    {
      name: "shared-is-a-leaf",
      comment: "src/shared/ imports nothing of the project but itself",
      severity: "error",
      from: { path: "^src/shared/" },
      to: { path: "^(src/(?!shared/)|dev/|load/|test/|lua/)" },
    },
    {
      name: "locks-stand-alone",
      comment: "src/locks/ is a library: its own files and its Lua scripts only",
      severity: "error",
      from: { path: "^src/locks/" },
      to: { path: "^(src/(?!locks/)|dev/|load/|test/)" },
    },
    {
      name: "infrastructure-below-domain",
      comment: "src/redis/, src/isolate/ and src/analytics/ may use src/shared/ only",
      severity: "error",
      from: { path: "^src/(redis|isolate|analytics)/" },
      to: { path: "^src/(?!shared/|redis/|isolate/|analytics/)" },
    },
    {
      name: "http-below-routes",
      comment:
        "src/http/ is what routes share: it may use src/admission/ (who may come in: its global limits are counted there), never the other domain modules, the routes or the entry",
      severity: "error",
      from: { path: "^src/http/" },
      to: { path: "^src/(routes|sales|orders|checkout|settlement|lab)/|^src/(app|index)\\.ts$" },
    },
    {
      name: "domain-below-routes",
      comment: "domain modules never import routes, HTTP concerns or the entry",
      severity: "error",
      from: { path: "^src/(sales|admission|orders|checkout|settlement|lab)/" },
      to: { path: "^src/(routes|http)/|^src/(app|index)\\.ts$" },
    },
    ...domainRules,
    {
      name: "routes-not-sideways",
      comment: "app.ts mounts every route module; they never import each other",
      severity: "error",
      from: { path: "^src/routes/", pathNot: "\\.docs\\.ts$" },
      to: { path: "^src/routes/|^src/(app|index)\\.ts$" },
    },
    {
      name: "docs-read-shapes-only",
      comment: "a route module's docs (src/routes/*.docs.ts) use src/shared/ and other docs only",
      severity: "error",
      from: { path: "^src/routes/[^/]+\\.docs\\.ts$" },
      to: { path: "^src/", pathNot: "^src/shared/|^src/routes/[^/]+\\.docs\\.ts$" },
    },
    {
      name: "worker-never-imports-docs",
      comment: "the routes' docs are for the API document only: the Worker's bundle never carries them",
      severity: "error",
      from: { path: "^src/", pathNot: "\\.docs\\.ts$" },
      to: { path: "\\.docs\\.ts$" },
    },
    {
      name: "worker-never-imports-tooling",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(dev|load|test)/" },
    },
    {
      name: "tooling-reads-shapes-only",
      comment:
        "dev/ and load/ use the API's shapes (src/shared/), the routes' docs (src/routes/*.docs.ts) and the lock library (src/locks/), never the Worker's insides",
      severity: "error",
      from: { path: "^(dev|load)/" },
      to: { path: "^src/(?!shared/|locks/|routes/[^/]+\\.docs\\.ts$)" },
    },
    {
      name: "dev-never-imports-load",
      severity: "error",
      from: { path: "^dev/" },
      to: { path: "^load/" },
    },
    {
      name: "runner-never-imports-bench",
      severity: "error",
      from: { path: "^load/runner/" },
      to: { path: "^load/bench/" },
    },
    {
      name: "tests-never-import-bench",
      comment: "what a test asserts lives in load/runner/ or dev/; load/bench/ only prints it",
      severity: "error",
      from: { path: "^test/" },
      to: { path: "^load/bench/" },
    },
    {
      name: "dev-lib-is-a-leaf",
      comment: "dev/lib/ is what every tool shares: it imports no other tool",
      severity: "error",
      from: { path: "^dev/lib/" },
      to: { path: "^(dev/(?!lib/)|load/|test/)" },
    },
    {
      name: "gateway-stands-alone",
      comment: "the gateway is a server of its own: dev/lib/ and nothing else of the project",
      severity: "error",
      from: { path: "^dev/gateway/" },
      to: { path: "^(src/|load/|test/|dev/(?!gateway/|lib/))" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist|\\.wrangler|\\.state)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.node.json" },
    enhancedResolveOptions: {
      extensions: [".ts", ".js", ".d.ts"],
      exportsFields: ["exports"],
      conditionNames: ["import", "default"],
    },
  },
};
