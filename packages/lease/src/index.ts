export * from './etcd-lease.js';
export * from './lease.js';
export * from './memory-lease.js';
