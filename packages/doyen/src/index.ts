export * from './management-http.js';
export * from './node-config.js';
export * from './start-node.js';
