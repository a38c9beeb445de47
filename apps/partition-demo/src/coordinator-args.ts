/** Who coordinates the demo's nodes: `doyen node` arguments for `--coordinator` (and `--etcd`). */
export type DemoCoordinator = 'emergent' | 'quorum' | 'etcd';

/** The `doyen node` arguments for a coordinator mode; a string is what is wrong with the request. */
export function coordinatorNodeArgs(mode: string | undefined, etcd: string | undefined): string[] | string {
  if (mode === undefined || mode === 'emergent') {
    return etcd === undefined ? [] : '--etcd only goes with --coordinator etcd';
  }
  if (mode === 'quorum')
    return etcd === undefined ? ['--coordinator', 'quorum'] : '--etcd only goes with --coordinator etcd';
  if (mode === 'etcd') {
    if (!etcd) return '--coordinator etcd needs --etcd http://host:port[,…]';
    return ['--coordinator', 'etcd', '--etcd', etcd];
  }
  return `--coordinator must be emergent, quorum or etcd, got ${JSON.stringify(mode)}`;
}
