export * from './algorithms.js';
export * from './elected-coordinator.js';
export * from './election.js';
export * from './election-service.js';
export * from './etcd-leader-store.js';
export * from './peers.js';
export * from './sim-leader-store.js';
export * from './vote-store.js';
