// doyen as the benches see it. bench/ has no workspace dependency on the packages (adding one would touch
// the shared lockfile), so this is the one place that reaches into their sources; with `@doyen/core` and
// `@doyen/wire` in bench/package.json these become package imports. Both resolve to the same module files
// the wire package itself imports, so there is a single ActorSystem class at run time.
export * from '../../packages/core/src/index.js';
export * from '../../packages/wire/src/index.js';
