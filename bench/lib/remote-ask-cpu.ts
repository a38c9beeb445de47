// The owner's CPU per remote ask (issue 29, cold ask from another node): this process asks an actor of a
// doyen-node-process child at a steady rate, one ask per wake-up as the sharding bench's owners see them,
// and reads the child's CPU from /proc (proc-schedstat.ts) over an idle phase and over the ask phase; the
// same for a raw `ws` + msgpackr echo (raw-relay-node.ts, role echo). Phases alternate doyen / raw in the
// same window, so load moves both alike. Run with tsx and the sources:
//   node --conditions=@doyen/source --import tsx bench/lib/remote-ask-cpu.ts [seconds] [rounds] [rate]
// REMOTE_ASK_OWNER=<path to a doyen-node-process.ts> runs the owner from another tree (A/B against HEAD);
// REMOTE_ASK_VARIANTS='{"name":{"script":path,"env":{...}},...}' measures several owners, interleaved the same way;
// full-node-echo-process.ts is an owner that is a whole node (startNode, partitions, owner lease, keeper).
// REMOTE_ASK_PAIRED=<rounds> alternates 1 s phases instead (see `paired`), for a ratio load moves less.
// REMOTE_ASK_STRACE=<dir> then counts each owner's syscalls over one more ask phase (strace -c).
// REMOTE_ASK_PROFILE=<dir> profiles the owner named "doyen" over the measured phases (its CPU then counts
// the profiler too) into <dir>/owner.cpuprofile.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { pack, unpack } from 'msgpackr';
import type { WebSocket } from 'ws';
import {
  BENCH_CLUSTER,
  BENCH_SECRET,
  type ChildReady,
  PARENT_MESSAGE_TYPES,
  type Ping,
  type Pong,
} from './bench-messages.js';
import { WsTransport } from './doyen.js';
import { startIpcChild } from './ipc-child.js';
import { schedTimes } from './proc-schedstat.js';
import { connect } from './ws-client.js';

const seconds = Number(process.argv[2] ?? 10);
const rounds = Number(process.argv[3] ?? 2);
const rate = Number(process.argv[4] ?? 1000);
const IDLE_SECONDS = 3;

/** Sends one ask and resolves on its answer. */
type Asker = (n: number) => Promise<void>;

/** Asks at `rate`/s for `seconds`, one due ask per timer wake-up of at least 1 ms (as a paced generator does). */
function askPaced(ask: Asker): Promise<number> {
  return askPacedFor(ask, seconds);
}

/** Owner CPU (µs, all threads / main thread) per ask, net of an idle phase of the same process. */
async function measure(pid: number, ask: Asker) {
  const idle0 = schedTimes(pid);
  await sleep(IDLE_SECONDS * 1000);
  const idle1 = schedTimes(pid);
  const asks = await askPaced(ask);
  const busy = schedTimes(pid);
  const idleCpuPerS = (idle1.cpuNs - idle0.cpuNs) / IDLE_SECONDS;
  const idleMainPerS = (idle1.mainCpuNs - idle0.mainCpuNs) / IDLE_SECONDS;
  const cpuNs = busy.cpuNs - idle1.cpuNs - idleCpuPerS * seconds;
  const mainNs = busy.mainCpuNs - idle1.mainCpuNs - idleMainPerS * seconds;
  return { cpuUs: cpuNs / asks / 1000, mainUs: mainNs / asks / 1000 };
}

/**
 * Load on a shared machine moves over seconds: `pairs` rounds of a 1 s ask phase per system in turn,
 * each system's CPU per ask net of its idle rate, and per round each system's ratio to the first
 * one; the median ratio is the figure (REMOTE_ASK_PAIRED=<pairs>, `seconds` is then ignored).
 */
async function paired(systems: Record<string, { pid: number; ask: Asker }>, pairs: number) {
  const names = Object.keys(systems);
  const idleNsPerS: Record<string, number> = {};
  for (const name of names) {
    const pid = systems[name]!.pid;
    const before = schedTimes(pid).cpuNs;
    await sleep(IDLE_SECONDS * 1000);
    idleNsPerS[name] = (schedTimes(pid).cpuNs - before) / IDLE_SECONDS;
  }
  const perAsk: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  // this process is the asking node: its own CPU per ask, all threads, not net of its idle
  // (the pacing loop's wake-ups are in it, alike for every system)
  const askerPerAsk: Record<string, number[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let round = 0; round < pairs; round++)
    for (const name of names) {
      const { pid, ask } = systems[name]!;
      const before = schedTimes(pid).cpuNs;
      const askerBefore = process.cpuUsage();
      const t0 = performance.now();
      const asks = await askPacedFor(ask, 1);
      const elapsedS = (performance.now() - t0) / 1000;
      const askerUsed = process.cpuUsage(askerBefore);
      const cpuNs = schedTimes(pid).cpuNs - before - idleNsPerS[name]! * elapsedS;
      perAsk[name]!.push(cpuNs / asks / 1000);
      askerPerAsk[name]!.push((askerUsed.user + askerUsed.system) / asks);
    }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  const first = names[0]!;
  console.log(
    JSON.stringify({
      rate,
      pairs,
      ownerCpuUsPerAskMedian: Object.fromEntries(names.map((n) => [n, median(perAsk[n]!)])),
      ratioToFirstMedian: Object.fromEntries(
        names.map((n) => [n, median(perAsk[n]!.map((x, i) => x / perAsk[first]![i]!))]),
      ),
      askerCpuUsPerAskMedian: Object.fromEntries(names.map((n) => [n, median(askerPerAsk[n]!)])),
      load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    }),
  );
}

/** askPaced for `secs` seconds. */
async function askPacedFor(ask: Asker, secs: number): Promise<number> {
  const start = performance.now();
  const total = Math.round(rate * secs);
  let sent = 0;
  const pending: Promise<void>[] = [];
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - start) * rate) / 1000) + 1);
    while (sent < due) pending.push(ask(sent++));
    await sleep(1000 / rate);
  }
  await Promise.all(pending);
  return sent;
}

async function doyenOwner(ownerScript: string, extraEnv: NodeJS.ProcessEnv = {}, profileDir?: string) {
  const env: NodeJS.ProcessEnv = {
    ...extraEnv,
    ...(profileDir
      ? {
          NODE_OPTIONS: `--import ${fileURLToPath(new URL('./cpu-profile-preload.mjs', import.meta.url))}`,
          CPU_PROFILE_FILE: `${profileDir}/owner.cpuprofile`,
        }
      : {}),
  };
  const { child, ready, stop } = await startIpcChild<ChildReady>(ownerScript, 'doyen owner', env);
  return {
    pid: child.pid ?? 0,
    echoActor: ready.echoActor,
    stop: async () => {
      child.disconnect();
      await sleep(500);
      await stop();
    },
  };
}

async function main() {
  const transport = await WsTransport.start({
    cluster: BENCH_CLUSTER,
    host: '127.0.0.1',
    port: 0,
    wire: { secret: BENCH_SECRET },
  });
  transport.system.messageTypes.register([...PARENT_MESSAGE_TYPES]);
  const here = fileURLToPath(new URL('./doyen-node-process.ts', import.meta.url));
  const owners: Record<string, { script?: string; env?: NodeJS.ProcessEnv }> = process.env.REMOTE_ASK_VARIANTS
    ? JSON.parse(process.env.REMOTE_ASK_VARIANTS)
    : { doyen: { script: process.env.REMOTE_ASK_OWNER ?? here } };
  const started: Record<string, { pid: number; ask: Asker; stop: () => Promise<void> }> = {};
  for (const [name, { script, env }] of Object.entries(owners)) {
    const owner = await doyenOwner(
      script ?? here,
      env,
      name === 'doyen' ? process.env.REMOTE_ASK_PROFILE : undefined,
    );
    const echo = transport.system.refFor<Ping>(owner.echoActor);
    const ask: Asker = async (n) => {
      await echo.ask<Pong>((replyTo) => ({ type: 'bench.ping', n, replyTo }), { timeout: 10_000 });
    };
    for (let i = 0; i < 2000; i++) await ask(i); // warm-up: the JIT and the connections
    started[name] = { pid: owner.pid, ask, stop: owner.stop };
  }
  const raw = await startIpcChild<{ port: number }>(
    fileURLToPath(new URL('./raw-relay-node.ts', import.meta.url)),
    'raw echo',
    { RAW_RELAY_ROLE: 'echo' },
  );
  const socket: WebSocket = await connect(`ws://127.0.0.1:${raw.ready.port}/`);
  const waiting = new Map<number, () => void>();
  socket.on('message', (data) => {
    const answer = unpack(data as Buffer) as { msg: { n: number } };
    waiting.get(answer.msg.n)?.();
    waiting.delete(answer.msg.n);
  });
  const rawAsk: Asker = (n) =>
    new Promise<void>((resolve) => {
      waiting.set(n, resolve);
      socket.send(pack({ to: 'x', msg: { type: 'sb.get', id: `e-${n}`, replyTo: 'generator', n } }));
    });
  for (let i = 0; i < 2000; i++) await rawAsk(i);
  started.raw = { pid: raw.child.pid ?? 0, ask: rawAsk, stop: raw.stop };

  // the profiled owner's profile covers the measured phases only (cpu-profile-preload.mjs)
  if (process.env.REMOTE_ASK_PROFILE && started.doyen) process.kill(started.doyen.pid, 'SIGUSR2');
  if (process.env.REMOTE_ASK_PAIRED) {
    await paired(started, Number(process.env.REMOTE_ASK_PAIRED));
    socket.close();
    for (const system of Object.values(started)) await system.stop();
    await transport.close();
    return;
  }
  const results: Record<string, { cpuUs: number; mainUs: number }[]> = {};
  for (let round = 0; round < rounds; round++)
    for (const [name, system] of Object.entries(started)) {
      const figures = await measure(system.pid, system.ask);
      (results[name] ??= []).push(figures);
      console.log(JSON.stringify({ round, system: name, ...figures }));
    }
  const straceDir = process.env.REMOTE_ASK_STRACE;
  if (straceDir)
    for (const [name, system] of Object.entries(started)) {
      // syscalls per ask, counted apart from the CPU figures (strace slows every syscall down)
      const tracer = spawn(
        'strace',
        ['-c', '-f', '-p', String(system.pid), '-o', `${straceDir}/${name}.txt`],
        {
          stdio: 'ignore',
        },
      );
      await sleep(1000);
      const asks = await askPaced(system.ask);
      tracer.kill('SIGINT');
      await once(tracer, 'exit');
      console.log(JSON.stringify({ strace: name, asks, file: `${straceDir}/${name}.txt` }));
    }
  socket.close();
  for (const system of Object.values(started)) await system.stop();
  await transport.close();
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN;
  console.log(
    JSON.stringify({
      rate,
      seconds,
      rounds,
      ownerCpuUsPerAsk: Object.fromEntries(
        Object.entries(results).map(([name, xs]) => [
          name,
          { cpu: median(xs.map((x) => x.cpuUs)), main: median(xs.map((x) => x.mainUs)) },
        ]),
      ),
    }),
  );
}

await main();
