export * from './messages.js';
export * from './receptionist.js';
export type {
  NodeRegistrations,
  ReceptionistContext,
  ReceptionistEffect,
  ReceptionistEvent,
  ReceptionistPolicy,
} from './receptionist-decisions.js';
export * from './service-key.js';
