import { afterEach } from 'vitest';

interface WithTransport {
  readonly transport: { close(): Promise<unknown> };
}

/** `start` wrapped so that every node it starts is closed after each test of the file. */
export function startedClosedAfterEach<O, N extends WithTransport>(
  start: (options?: O) => Promise<N>,
): (options?: O) => Promise<N> {
  const nodes: N[] = [];
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map((n) => n.transport.close()));
  });
  return async (options) => {
    const n = await start(options);
    nodes.push(n);
    return n;
  };
}
