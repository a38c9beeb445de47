import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { freePorts, liveNodeProcesses, NodeProcess } from '../../packages/testkit/src/index.js';
import { eventually } from '../support/wait.js';

/** The one node-process manager of the tests, benches and demo, on small Node.js scripts. */

const script = (code: string, env: Record<string, string> = {}) =>
  NodeProcess.spawn({ args: ['-e', code], env });

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const started: NodeProcess[] = [];
afterEach(() => {
  for (const p of started.splice(0)) p.kill9();
});

describe('NodeProcess', () => {
  it('splits output into lines across chunks, keeps JSON event lines apart, reads to the end before exited', async () => {
    const p = script(
      `process.stdout.write('{"event":"a.b","n":1}\\nplain te');` +
        `setTimeout(() => { process.stdout.write('xt\\n{"level":30}\\n'); console.error('on stderr'); process.stdout.write('{"event":"c.d"}'); }, 50);`,
    );
    const status = await p.exited;
    expect(status).toEqual({ code: 0, signal: null });
    expect(p.logs).toEqual(
      expect.arrayContaining(['{"event":"a.b","n":1}', 'plain text', '{"level":30}', 'on stderr']),
    );
    expect(p.logs).toContain('{"event":"c.d"}'); // the last line had no newline
    expect(p.events().map((e) => e.event)).toEqual(['a.b', 'c.d']);
    expect(p.running).toBe(false);
    expect(p.exitStatus()).toEqual(status);
  });

  it('waits for a log event, past or future; undefined at exit', async () => {
    const p = script(
      `console.log('{"event":"early"}'); setTimeout(() => console.log('{"event":"node.started"}'), 100); setTimeout(() => {}, 300);`,
    );
    expect((await p.waitForEvent('node.started', 5000))?.event).toBe('node.started');
    expect((await p.waitForEvent('early', 10))?.event).toBe('early');
    expect(await p.waitForEvent('never', 5000)).toBeUndefined(); // resolves at exit, not after 5 s
  });

  it('pause freezes it (no output) and resume continues; kill9 of a paused process kills it', async () => {
    const p = script(`let i = 0; setInterval(() => console.log(String(i++)), 20);`);
    started.push(p);
    await eventually(() => p.logs.length >= 3);
    p.pause();
    await new Promise((r) => setTimeout(r, 100)); // a line in flight may still arrive
    const frozen = p.logs.length;
    await new Promise((r) => setTimeout(r, 300));
    expect(p.logs.length).toBe(frozen);
    p.resume();
    await eventually(() => p.logs.length > frozen + 2);
    p.pause();
    p.kill9();
    expect((await p.exited).signal).toBe('SIGKILL');
  });

  it('stop: SIGTERM first (a handler exits 0), SIGKILL once the grace is over', async () => {
    const graceful = script(
      `process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000); console.log('ready');`,
    );
    await eventually(() => graceful.logs.includes('ready'));
    expect(await graceful.stop(5000)).toEqual({ code: 0, signal: null });
    const stubborn = script(
      `process.on('SIGTERM', () => {}); setInterval(() => {}, 1000); console.log('ready');`,
    );
    await eventually(() => stubborn.logs.includes('ready'));
    const t0 = Date.now();
    expect((await stubborn.stop(300)).signal).toBe('SIGKILL');
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
  });

  it('getJson reads its management HTTP; undefined when it does not answer', async () => {
    const [port] = await freePorts(1);
    const p = NodeProcess.spawn({
      args: [
        '-e',
        `require('node:http').createServer((q, s) => { s.setHeader('content-type', 'application/json'); s.end(JSON.stringify({ path: q.url })); }).listen(${port}, '127.0.0.1', () => console.log('listening'));`,
      ],
      http: { host: '127.0.0.1', port: port! },
    });
    started.push(p);
    await eventually(() => p.logs.includes('listening'));
    expect(await p.getJson('/cluster/members')).toEqual({ path: '/cluster/members' });
    p.kill9();
    await p.exited;
    expect(await p.getJson('/cluster', 500)).toBeUndefined();
  });

  it('nothing outlives its owner: an owner that exits takes its processes with it', async () => {
    // the owner: a process that spawns a sleeper through NodeProcess, prints its pid, then exits
    const module = fileURLToPath(new URL('../../packages/testkit/src/node-process.ts', import.meta.url));
    const owner = NodeProcess.spawn({
      args: [
        '--conditions=@doyen/source',
        '--import',
        import.meta.resolve('tsx'),
        '-e',
        `import(${JSON.stringify(module)}).then(({ NodeProcess }) => {
           const sleeper = NodeProcess.spawn({ args: ['-e', 'setInterval(() => {}, 1000)'] });
           console.log('sleeper ' + sleeper.pid);
           setTimeout(() => process.exit(0), 300);
         });`,
      ],
    });
    const line = await owner.waitForLine((l) => l.text.startsWith('sleeper '), 20_000);
    const pid = Number(line!.text.split(' ')[1]);
    expect(alive(pid)).toBe(true); // positive control: it ran while its owner did
    await owner.exited;
    await eventually(() => !alive(pid));
  });

  it('counts what still runs', async () => {
    const before = liveNodeProcesses();
    const p = script('setInterval(() => {}, 1000)');
    expect(liveNodeProcesses()).toBe(before + 1);
    p.kill9();
    await p.exited;
    expect(liveNodeProcesses()).toBe(before);
  });
});
