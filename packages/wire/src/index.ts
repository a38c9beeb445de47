export * from './association.js';
export * from './codec.js';
export * from './config.js';
export * from './handshake.js';
export * from './inbound.js';
export * from './protocol.js';
export * from './transport.js';
export * from './validation.js';
