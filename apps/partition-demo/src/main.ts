/**
 * `pnpm demo`: starts a local cluster of N `doyen node` processes and shows it live.
 *
 *   pnpm demo [--nodes 5] [--script FILE] [--http-base PORT] [--no-tty] [--logs DIR]
 *
 * In a terminal: a live screen, driven by keys (see keys.ts). With --script: runs the script
 * (see script.ts), prints the final view in plain text and exits 0 when every expectation held.
 * Without a terminal (or with --no-tty): plain output, events as they happen; without a script,
 * commands in the script language are read from stdin, one a line. Every node is stopped on the
 * way out (SIGTERM, then SIGKILL), also on Ctrl-C and on errors.
 */
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { coordinatorNodeArgs } from './coordinator-args.js';
import { DEFAULT_CARTS, Demo } from './demo.js';
import type { DemoEvent } from './events.js';
import { KEY_HELP, type KeyAction, listenKeys } from './keys.js';
import { parseScript, runScript, ScriptError, type ScriptLine, type ScriptResult } from './script.js';
import { formatClock, formatDuration, renderView } from './view.js';

const USAGE = `usage: pnpm demo [--nodes N] [--script FILE] [--http-base PORT] [--no-tty] [--logs DIR]
                 [--coordinator emergent|quorum|etcd] [--etcd URL,…] [--carts N] [--cart-rate R]

  --nodes N          nodes to start (default 5): athens, byzantium, cyrene, delphi, ephesus, …
  --script FILE      run a demo script (apps/partition-demo/scripts/ci.demo), then stop;
                     exits 0 when every expect held
  --http-base PORT   HTTP management ports PORT, PORT+1, … (default: free ports)
  --no-tty           plain output even in a terminal (the default when stdout is not one)
  --logs DIR         where each node's log goes (default: a new temporary directory)
  --coordinator M    emergent (default: the oldest coordinates), quorum (an elected leader that
                     acts only while a majority acknowledges it) or etcd (the holder of an etcd
                     key's lease; --etcd gives the URLs)
  --carts N          carts the demo drives (default 200; 0: none). Every node runs a sharded
                     \`cart\` entity; without --script the load starts once the nodes are up,
                     with one the script starts it (carts start)
  --cart-rate R      adds per second over all carts (default 100)

keys: ${KEY_HELP}`;

interface Args {
  readonly nodes: number;
  readonly script: string | undefined;
  readonly httpBase: number | undefined;
  readonly tty: boolean;
  readonly logs: string | undefined;
  readonly nodeArgs: readonly string[];
  readonly carts: number;
  readonly cartRate: number;
}

function usageError(message: string): never {
  process.stderr.write(`partition-demo: ${message}\n\n${USAGE}\n`);
  process.exit(2);
}

function parseDemoArgs(argv: readonly string[], isTty: boolean): Args {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: argv.filter((a) => a !== '--'),
      options: {
        nodes: { type: 'string' },
        script: { type: 'string' },
        'http-base': { type: 'string' },
        'no-tty': { type: 'boolean' },
        logs: { type: 'string' },
        coordinator: { type: 'string' },
        etcd: { type: 'string' },
        carts: { type: 'string' },
        'cart-rate': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    usageError((error as Error).message);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const int = (name: string, v: string | boolean | undefined, min: number, max: number) => {
    if (v === undefined) return undefined;
    const n = Number(v);
    if (!Number.isInteger(n) || n < min || n > max) usageError(`--${name} must be an integer ${min}..${max}`);
    return n;
  };
  const nodeArgs = coordinatorNodeArgs(
    values.coordinator as string | undefined,
    values.etcd as string | undefined,
  );
  if (typeof nodeArgs === 'string') usageError(nodeArgs);
  return {
    nodeArgs,
    nodes: int('nodes', values.nodes, 1, 20) ?? 5,
    script: values.script as string | undefined,
    httpBase: int('http-base', values['http-base'], 1, 65_000),
    tty: isTty && values['no-tty'] !== true,
    logs: values.logs as string | undefined,
    carts: int('carts', values.carts, 0, 100_000) ?? DEFAULT_CARTS.count,
    cartRate: int('cart-rate', values['cart-rate'], 1, 100_000) ?? DEFAULT_CARTS.rate,
  };
}

// ---- terminal output ----

const ESC = '\u001b[';
const screen = {
  enter: `${ESC}?1049h${ESC}?25l`,
  leave: `${ESC}?25h${ESC}?1049l`,
};

function eventLine(e: DemoEvent): string {
  const who = e.event === 'demo' ? 'demo' : e.reporters.join(',');
  return `${formatClock(e.time)}  ${who.padEnd(10)} ${e.event.padEnd(21)} ${e.text}`;
}

async function main(): Promise<void> {
  const args = parseDemoArgs(
    process.argv.slice(2),
    process.stdout.isTTY === true && process.stdin.isTTY === true,
  );
  let script: { file: string; lines: ScriptLine[] } | undefined;
  if (args.script) {
    const path = resolve(process.env.INIT_CWD ?? process.cwd(), args.script);
    let source: string;
    try {
      source = readFileSync(path, 'utf8');
    } catch (error) {
      usageError(`cannot read ${args.script}: ${(error as Error).message}`);
    }
    try {
      script = { file: basename(path), lines: parseScript(source, basename(path)) };
    } catch (error) {
      if (error instanceof ScriptError) {
        process.stderr.write(`partition-demo: bad script\n${error.message}\n`);
        process.exit(2);
      }
      throw error;
    }
  }
  const logDir = args.logs ? resolve(args.logs) : mkdtempSync(join(tmpdir(), 'doyen-demo-'));
  mkdirSync(logDir, { recursive: true });

  const plain = !args.tty;
  let muted = false;
  const print = (text: string) => {
    if (plain && !muted) process.stdout.write(`${text}\n`);
  };
  const demo = new Demo({
    nodes: args.nodes,
    logDir,
    nodeArgs: args.nodeArgs,
    ...(args.carts > 0 ? { carts: { count: args.carts, rate: args.cartRate } } : {}),
    ...(args.httpBase !== undefined ? { httpBase: args.httpBase } : {}),
    onEvent: (e) => print(eventLine(e)),
  });

  // ---- stopping, whatever happens ----
  let render: NodeJS.Timeout | undefined;
  let restoreKeys: (() => void) | undefined;
  let inScreen = false;
  const restoreTerminal = () => {
    clearInterval(render);
    restoreKeys?.();
    restoreKeys = undefined;
    if (inScreen) process.stdout.write(screen.leave);
    inScreen = false;
  };
  let finishing: Promise<never> | undefined;
  const finish = (code: number, summary?: string): Promise<never> => {
    finishing ??= (async () => {
      muted = true;
      restoreTerminal();
      // the last word: the final view, plain, then the outcome
      const width = process.stdout.isTTY ? process.stdout.columns : 120;
      process.stdout.write(`\n${renderView(demo.model(), { width, color: false })}\n\n`);
      if (summary) process.stdout.write(`${summary}\n`);
      const alive = demo.processes.alive().length;
      if (alive) process.stdout.write(`stopping ${alive} node(s)…\n`);
      const watchdog = setTimeout(() => {
        demo.processes.killAllNow();
        process.exit(code);
      }, 10_000);
      try {
        await demo.shutdown();
      } finally {
        clearTimeout(watchdog);
      }
      process.stdout.write(`all nodes stopped; logs in ${logDir}\n`);
      process.exit(code);
    })();
    return finishing;
  };
  process.on('exit', () => {
    demo.processes.killAllNow();
    restoreTerminal();
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    // Ctrl-C is how an interactive demo ends; it only fails an unfinished script
    const code = script ? 128 + constants.signals[signal] : 0;
    process.on(signal, () => void finish(code, `stopped (${signal})`));
  }
  const crash = (error: unknown) => {
    restoreTerminal();
    process.stderr.write(`partition-demo: ${(error as Error)?.stack ?? String(error)}\n`);
    void finish(1, 'stopped by an error (above)');
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
  try {
    await run(
      args,
      demo,
      script,
      print,
      finish,
      () => finishing !== undefined,
      (r) => {
        render = r.render;
        restoreKeys = r.restoreKeys;
        inScreen = r.inScreen;
      },
    );
  } catch (error) {
    crash(error);
  }
}

interface Screen {
  render: NodeJS.Timeout | undefined;
  restoreKeys: (() => void) | undefined;
  inScreen: boolean;
}

async function run(
  args: Args,
  demo: Demo,
  script: { file: string; lines: ScriptLine[] } | undefined,
  print: (text: string) => void,
  finish: (code: number, summary?: string) => Promise<never>,
  finishing: () => boolean,
  setScreen: (s: Screen) => void,
): Promise<void> {
  const plain = !args.tty;

  // ---- the screen and the keys ----
  if (args.tty) {
    process.stdout.write(screen.enter);
    const draw = () => {
      const text = renderView(demo.model({ keys: KEY_HELP }), {
        width: process.stdout.columns ?? 100,
        height: process.stdout.rows ?? 30,
        color: true,
      });
      process.stdout.write(`${ESC}H${text.split('\n').join(`${ESC}K\r\n`)}${ESC}K${ESC}J`);
    };
    const render = setInterval(draw, 250);
    process.stdout.on('resize', draw);
    const act = (what: string, run: () => Promise<unknown>) => {
      run().catch((error: Error) => {
        demo.lastAction = `${what} failed: ${error.message}`;
      });
    };
    const restoreKeys = listenKeys(process.stdin, (a: KeyAction) => {
      const name = demo.selectedName();
      switch (a.type) {
        case 'quit':
          void (script ? finish(1, `quit before ${script.file} ended`) : finish(0, 'quit'));
          return;
        case 'select':
          if (a.index < demo.processes.nodes.length) demo.selected = a.index;
          break;
        case 'move':
          demo.selected = Math.max(0, Math.min(demo.processes.nodes.length - 1, demo.selected + a.by));
          break;
        case 'kill':
        case 'restart':
        case 'remove':
          if (name) {
            const op = a.type;
            act(`${op} ${name}`, () => demo[op](name));
          }
          break;
        case 'pause':
          if (name) act(`pause ${name}`, () => demo.togglePause(name));
          break;
        case 'add':
          act('add', () => demo.add());
          break;
        case 'split':
          act('split', () => demo.split());
          break;
        case 'heal':
          act('heal', () => demo.heal());
          break;
        case 'redraw':
          process.stdout.write(`${ESC}2J`);
          break;
      }
      draw();
    });
    setScreen({ render, restoreKeys, inScreen: true });
    draw();
  } else {
    print(`partition demo: starting ${args.nodes} nodes; logs in ${demo.logDir}`);
  }

  const t0 = Date.now();
  await demo.start();
  if (finishing()) return; // quit while starting
  await demo.poller.pollAll();
  // without a script the carts start with the cluster; a script starts them when it wants
  if (!script && args.carts > 0) print(`  ${await demo.cartsStep({ op: 'carts', action: 'start' })}`);
  print(`\n${renderView(demo.model(), { width: 120 })}\n`);

  if (script) {
    const log = (text: string, level: 'step' | 'ok' | 'fail') => {
      if (plain) print(`[${formatDuration(Date.now() - t0)}] ${text}`);
      else if (level !== 'step') demo.lastAction = text.trim();
      if (level === 'fail') demo.events.addDemo(text, Date.now(), 'error');
    };
    const result: ScriptResult = await runScript(script.lines, demo, {
      file: script.file,
      log,
      onLine: (l) => {
        demo.script = l && { file: script!.file, line: l.line, text: l.text };
      },
      aborted: finishing,
    });
    const took = ((Date.now() - t0) / 1000).toFixed(1);
    await finish(
      result.ok ? 0 : 1,
      result.ok
        ? `script ${script.file} passed: ${result.steps} steps, ${result.expects} expectations held, ${took} s`
        : `script ${script.file} FAILED after ${took} s\n  ${result.failure}`,
    );
  }
  if (plain) {
    // no script, no terminal: commands from stdin, in the script language
    print(
      'commands from stdin, one a line (kill athens, partition athens | byzantium, heal, …); Ctrl-C stops',
    );
    const rl = createInterface({ input: process.stdin, terminal: false });
    let n = 0;
    let queue = Promise.resolve();
    rl.on('line', (text) => {
      const line = ++n;
      queue = queue.then(async () => {
        try {
          const lines = parseScript(`${'\n'.repeat(line - 1)}${text}`, 'stdin');
          const r = await runScript(lines, demo, { file: 'stdin', log: (t) => print(t) });
          if (r.ok && lines.length) print(renderView(demo.model(), { width: 120 }));
        } catch (error) {
          print((error as Error).message);
        }
      });
    });
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`partition-demo: ${(error as Error)?.stack ?? String(error)}\n`);
  process.exitCode = 1;
});
