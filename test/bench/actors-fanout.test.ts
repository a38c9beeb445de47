// `pnpm bench actors` and `pnpm bench fanout` (issue 31) in a tiny configuration: each runs end to end
// (child processes, doyen and its baseline side by side) and its last line is the JSON object of every
// figure, each one there and sane (finite; rates, sizes and ratios positive), so the benches cannot rot.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const runner = fileURLToPath(new URL('../../bench/run.mjs', import.meta.url));

async function benchJson(args: string[]): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [runner, ...args], {
    timeout: 170_000,
    maxBuffer: 16 * 1024 * 1024,
  });
  const last = stdout.trim().split('\n').at(-1)!;
  return JSON.parse(last) as Record<string, unknown>;
}

function expectPositive(result: Record<string, unknown>, keys: readonly string[]): void {
  for (const key of keys) {
    const value = result[key];
    expect(typeof value, key).toBe('number');
    expect(Number.isFinite(value), `${key} = ${value}`).toBe(true);
    expect(value as number, key).toBeGreaterThan(0);
  }
}

const populationKeys = ['SpawnPerSec', 'HeapBytesPerActor', 'RssBytesPerActor', 'TellPerSec'];

describe('pnpm bench actors, tiny', () => {
  it('reports every figure beside bare xstate, and the ratios', { timeout: 180_000 }, async () => {
    const result = await benchJson([
      'actors',
      '--runs',
      '1',
      '--actors',
      '10000',
      '--machines',
      '2000',
      '--burst',
      '20000',
    ]);
    expect(result.bench).toBe('actors');
    expect(result.actors).toBe(10_000);
    const figures = ['transition', 'machine'].flatMap((logic) =>
      ['Doyen', 'Bare'].flatMap((impl) => populationKeys.map((k) => `${logic}${impl}${k}`)),
    );
    const bursts = ['external', 'ring', 'fanIn'].flatMap((b) =>
      ['Bare', 'DoyenDrain', 'DoyenNoDrain'].map((side) => `${b}${side}PerSec`),
    );
    const ratios = [
      ...['transition', 'machine'].flatMap((p) =>
        ['Spawn', 'Heap', 'Rss', 'Tell'].map((k) => `${p}${k}VsBareRatio`),
      ),
      ...['external', 'ring', 'fanIn'].flatMap((b) => [`${b}DrainVsBareRatio`, `${b}NoDrainVsBareRatio`]),
    ];
    expectPositive(result, [...figures, ...bursts, ...ratios]);
    // the overheads are differences: finite, of either sign
    for (const key of ['transitionOverheadBytes', 'machineOverheadBytes'])
      expect(Number.isFinite(result[key]), key).toBe(true);
    expect(Array.isArray(result.targetsMissed)).toBe(true);
  });
});

describe('pnpm bench fanout, tiny', () => {
  it('reports doyen and raw ws across the nodes, and the ratios', { timeout: 180_000 }, async () => {
    const result = await benchJson([
      'fanout',
      '--runs',
      '1',
      '--nodes',
      '2',
      '--actors',
      '100',
      '--messages',
      '5000',
    ]);
    expect(result.bench).toBe('fanout');
    expect(result.nodes).toBe(2);
    expectPositive(result, [
      'fanoutDoyenPerSec',
      'fanoutRawPerSec',
      'fanoutDoyenP50Us',
      'fanoutDoyenP99Us',
      'fanoutRawP50Us',
      'fanoutRawP99Us',
      'fanoutVsRawRatio',
      'fanoutP50VsRawRatio',
      'fanoutP99VsRawRatio',
      'fanoutDoyenCpuUsPerMsg',
      'fanoutRawCpuUsPerMsg',
      'fanoutCpuPerMsgVsRawRatio',
      'fanoutDoyenElu',
      'fanoutRawElu',
    ]);
    for (const key of ['fanoutDoyenElu', 'fanoutRawElu'])
      expect(result[key] as number, key).toBeLessThanOrEqual(1);
  });

  it('--wire reaches the doyen nodes: a setting the wire refuses stops the bench with its error', {
    timeout: 180_000,
  }, async () => {
    const args = ['fanout', '--runs', '1', '--nodes', '2', '--actors', '100', '--messages', '5000'];
    await expect(benchJson([...args, '--wire', '{"batchBytes":99999999}'])).rejects.toThrow(
      /batchBytes must not exceed/,
    );
  });
});
