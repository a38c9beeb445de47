export * from './errors.js';
export * from './for-each-seed.js';
export * from './log-capture.js';
export * from './manual-scheduler.js';
export * from './seeded-random.js';
export * from './sim-network.js';
export * from './simulation.js';
export * from './virtual-clock.js';
