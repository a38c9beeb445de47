import { fileURLToPath } from 'node:url';

/** The CLI's TypeScript source: nodes started from it need no build. */
export const CLI_SOURCE = fileURLToPath(new URL('../../packages/doyen/src/cli.ts', import.meta.url));

/** Node's arguments for the CLI from source: tsx, the source condition, cli.ts, then `cliArgs`. */
export function sourceCliArgs(cliArgs: readonly string[]): string[] {
  return ['--conditions=@doyen/source', '--import', import.meta.resolve('tsx'), CLI_SOURCE, ...cliArgs];
}

/**
 * The node arguments of `doyen node` run from source under tsx on 127.0.0.1 (its cluster and
 * management ports, seeds and app module); the caller appends its own flags.
 */
export function sourceNodeArgs(o: {
  readonly cluster: string;
  readonly port: number;
  readonly httpPort: number;
  readonly seeds: string;
  readonly app: string;
}): string[] {
  return sourceCliArgs([
    'node',
    ...['--cluster', o.cluster, '--host', '127.0.0.1', '--port', String(o.port)],
    ...['--http-port', String(o.httpPort), '--http-host', '127.0.0.1'],
    ...['--seeds', o.seeds, '--app', o.app],
  ]);
}
