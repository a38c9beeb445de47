// The simulated lease and leader-election stores have their own entry point: they pull in
// @doyen/election and @doyen/lease (with etcd3's gRPC client), which would make every simulation
// that imports the testkit's index load ~2 s slower.
export * from './in-memory-lease.js';
export * from './sim-leader-store.js';
