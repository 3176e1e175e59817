// Lua scripts imported as text in Node (dev/lib/lua-modules.mjs, the vitest config), as
// worker-configuration.d.ts declares them for the Worker.
declare module "*.lua" {
  const source: string;
  export default source;
}
