// `doyen node --app PATH` (or DOYEN_APP): the CLI imports an app module and runs its `setup` for
// the node, with its `config` defaults below flags, variables and the --config file. Real child
// processes of the bundled CLI, as an image of "doyen + my module" runs them.
import { mkdirSync, mkdtempSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { type CliNode, getJson, killAll, nodeArgs, runCli, secretEnv } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const started: CliNode[] = [];
afterEach(() => killAll(started.splice(0)));

/** An app directory outside the checkout, with xstate installed next to it (as an app has it). */
const appDir = mkdtempSync(join(tmpdir(), 'doyen-cli-app-'));
mkdirSync(join(appDir, 'node_modules'));
symlinkSync(
  realpathSync(join(ROOT, 'packages/doyen/node_modules/xstate')),
  join(appDir, 'node_modules/xstate'),
);
writeFileSync(join(appDir, 'package.json'), JSON.stringify({ type: 'module' }));

/**
 * The app: an inbox on every node, told hello by every other node once that one is up; its
 * message type registered in setup (without it the hello is dropped at the boundary).
 */
const APP = `import { fromTransition } from 'xstate';

export const config = { partitions: { count: 0 }, name: 'named-by-the-app' };

export function setup(node, incarnation) {
  node.system.messageTypes.register(['app.hello']);
  node.system.spawn(
    fromTransition((count, event) => {
      node.logger.info({ event: 'app.hello', from: event.from, incarnation: incarnation.number }, 'hello');
      return count + 1;
    }, 0),
    { name: 'inbox' },
  );
  const self = node.cluster.self;
  node.cluster.subscribe((event) => {
    if (event.type !== 'member.up' || event.member.uid === self.node.uid) return;
    const [host, port] = event.member.address.split(':');
    node.system
      .remoteRef({ host, port: Number(port), uid: event.member.uid }, '/user/inbox')
      .send({ type: 'app.hello', from: self.key });
  });
  node.logger.info({ event: 'app.setup', incarnation: incarnation.number }, 'app set up');
}
`;
writeFileSync(join(appDir, 'app.js'), APP);

function cli(args: string[], env: Record<string, string | undefined> = {}, httpPort?: number): CliNode {
  const n = runCli(args, httpPort, env);
  started.push(n);
  return n;
}

function appTestArgs(port: number, httpPort: number, seed: number): string[] {
  return [...nodeArgs('app-test', port, `127.0.0.1:${seed}`), '--http-port', String(httpPort)];
}

function stderrOf(n: CliNode): () => string {
  let err = '';
  n.process.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  return () => err;
}

describe('doyen node --app (child processes)', { timeout: 60_000 }, () => {
  it("two nodes run the app's setup: one tells the other's actor; the app's config is a default the flags override", async () => {
    const [p1, p2, h1, h2] = await freePorts(4);
    // one by --app, relative to the working directory; the other by DOYEN_APP, absolute
    const a = cli(
      [...appTestArgs(p1!, h1!, p1!), '--app', relative(ROOT, join(appDir, 'app.js'))],
      secretEnv(),
      h1,
    );
    const b = cli([...appTestArgs(p2!, h2!, p1!), '--name', 'named-by-a-flag'], {
      ...secretEnv(),
      DOYEN_APP: join(appDir, 'app.js'),
    });
    const hello = (n: CliNode, from: number) =>
      n.events().find((e) => e.event === 'app.hello' && String(e.from).startsWith(`127.0.0.1:${from}`));
    await eventually(() => hello(a, p2!) && hello(b, p1!), {
      timeoutMs: 30_000,
      what: 'each node told hello by the other',
    }).catch((error: Error) => {
      throw new Error(
        `${error.message}\n--- a\n${a.logs.slice(-20).join('\n')}\n--- b\n${b.logs.slice(-20).join('\n')}`,
      );
    });
    expect(a.events().filter((e) => e.event === 'app.setup')).toHaveLength(1);
    const names = (await getJson(h1!, '/cluster')).body.members.map((m: { name: string }) => m.name).sort();
    expect(names).toEqual(['named-by-a-flag', 'named-by-the-app']);
    // the app's `partitions: { count: 0 }`: no allocator
    expect((await fetch(`http://127.0.0.1:${h1}/partitions`)).status).toBe(404);
  });

  it('positive control: without the app, the same hello is not delivered (the type is unregistered and no inbox exists)', async () => {
    const [p1, p2, h1, h2] = await freePorts(4);
    const a = cli(appTestArgs(p1!, h1!, p1!), secretEnv(), h1);
    const b = cli([...appTestArgs(p2!, h2!, p1!), '--app', join(appDir, 'app.js')], secretEnv());
    await eventually(() => b.events().some((e) => e.event === 'app.setup'), {
      timeoutMs: 20_000,
      what: 'b set up',
    });
    await eventually(
      async () => {
        try {
          return (
            (await getJson(h1!, '/cluster')).body.members.filter((m: any) => m.status === 'up').length === 2
          );
        } catch {
          return false;
        }
      },
      { timeoutMs: 20_000, what: 'two up members' },
    );
    await new Promise((r) => setTimeout(r, 1000));
    expect(a.events().some((e) => e.event === 'app.hello')).toBe(false);
    expect(b.events().some((e) => e.event === 'app.hello')).toBe(false);
  });

  it('a missing module, one without setup, a setup that is no function, a bad config export: exit 2 naming the path', async () => {
    const write = (name: string, text: string) => {
      writeFileSync(join(appDir, name), text);
      return join(appDir, name);
    };
    const cases: [string[], Record<string, string>, RegExp][] = [
      [['--app', join(appDir, 'missing.js')], {}, /--app .*missing\.js: cannot import .*missing\.js/],
      [
        ['--app', write('no-setup.js', 'export const config = {};\n')],
        {},
        /no-setup\.js: the module exports no setup function/,
      ],
      [
        [],
        { DOYEN_APP: write('setup-string.js', "export const setup = 'soon';\n") },
        /DOYEN_APP .*setup-string\.js: its setup export is a string, not a function/,
      ],
      [
        ['--app', write('bad-config.js', 'export function setup() {}\nexport const config = [1];\n')],
        {},
        /bad-config\.js: its config export is an array/,
      ],
      [['--app', write('broken.js', 'export function setup( {\n')], {}, /--app .*broken\.js: cannot import/],
    ];
    const [p] = await freePorts(1);
    const base = nodeArgs('x', p!);
    const runs = cases.map(([args, env]) => {
      const n = cli([...base, ...args], { ...secretEnv(), ...env });
      return { n, err: stderrOf(n) };
    });
    for (const [i, { n, err }] of runs.entries()) {
      expect((await n.exited).code, cases[i]![2].source).toBe(2);
      expect(err()).toMatch(cases[i]![2]);
      // one line, not the usage text
      expect(err().trim().split('\n')).toHaveLength(1);
    }
  });
});
