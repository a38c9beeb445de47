/**
 * The smallest node config that passes validation (any free port, a seed nobody listens on), for
 * tests that add one setting to it and check what validation or `startNode` makes of that setting.
 */
export const NODE_CONFIG_BASE = {
  cluster: 'c',
  host: '127.0.0.1',
  port: 0,
  seeds: [{ host: '127.0.0.1', port: 1 }],
  secret: 's',
} as const;
