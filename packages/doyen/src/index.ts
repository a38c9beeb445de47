export * from './fault-injection.js';
export * from './inspector/index.js';
export * from './management-http.js';
export * from './node-config.js';
export * from './start-node.js';
