export * from './cluster-singletons.js';
export * from './manager-machine.js';
export * from './messages.js';
export * from './oldest.js';
export * from './placement.js';
export * from './proxy-machine.js';
