export * from './algorithms.js';
export * from './election.js';
export * from './election-service.js';
export * from './peers.js';
