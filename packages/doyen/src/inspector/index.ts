export * from './definition.js';
export * from './local-inspector.js';
export * from './machines.js';
export { renderInspectorPage } from './page.js';
export * from './relay-server.js';
export * from './safe-json.js';
export * from './server-cli.js';
export * from './stately.js';
