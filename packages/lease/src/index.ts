export * from './etcd-client.js';
export * from './etcd-lease.js';
export * from './etcd-leased-key.js';
export * from './key-lease.js';
export * from './lease.js';
export * from './leased-key.js';
export * from './memory-leased-key.js';
