// Free ports on 127.0.0.1 for the benches: the testkit's.
export { freePorts } from '../../packages/testkit/src/free-ports.js';
