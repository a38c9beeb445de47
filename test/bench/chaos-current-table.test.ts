// The chaos runner waits, after each fault, until every process holds one table and every
// partition of it is active once. Seed 40093 (session 40) never settled: its one-way cut downed
// every hosting node, n5's incarnation allocated a table alone as it went down (v20, owning
// nothing), and the runner took that downed incarnation's v20 for the process's table, while the
// restarted incarnations all ran the new allocator's v19. A process's table is its current
// incarnation's newest.
import { describe, expect, it } from 'vitest';
import { currentTable } from '../../bench/lib/chaos-sharding-run.js';

const table = (version: number) => ({ event: 'partitions.table', version, partitionCount: 271 });

describe("the chaos runner's table of a process", () => {
  it('is the newest table of the current incarnation, not one a downed incarnation held', () => {
    const n5 = [
      { event: 'node.setup', incarnation: 1 },
      table(18),
      table(19),
      table(20),
      { event: 'node.restart', reason: 'downed' },
      { event: 'node.setup', incarnation: 3 },
      table(1),
      table(19),
    ];
    expect(currentTable(n5)).toEqual({ version: 19, partitionCount: 271 });
    // the control: read across incarnations, the process would hold v20, which no node holds now
    expect(currentTable(n5.filter((e) => e.event !== 'node.restart' && e.event !== 'node.setup'))).toEqual({
      version: 20,
      partitionCount: 271,
    });
  });

  it('is none before the incarnation adopts one, and the newest one once it has', () => {
    expect(currentTable([{ event: 'node.setup' }])).toBeUndefined();
    expect(currentTable([table(3), { event: 'node.restart' }])).toBeUndefined();
    expect(currentTable([{ event: 'node.setup' }, table(4), table(2)])?.version).toBe(4);
  });
});
