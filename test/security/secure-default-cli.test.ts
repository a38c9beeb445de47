import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type CliNode, getJson, killAll, nodeArgs, postJson, runCli } from '../support/cli-process.js';
import { freePorts } from '../support/cluster-nodes.js';
import { eventually } from '../support/wait.js';

const started: CliNode[] = [];
afterEach(() => killAll(started.splice(0)));

/** No secret or token inherited from whoever runs the tests. */
const CLEAN = { DOYEN_SECRET: undefined, DOYEN_HTTP_TOKEN: undefined };

function node(
  cluster: string,
  port: number,
  httpPort: number,
  seed: number,
  extra: string[],
  env: Record<string, string | undefined>,
): CliNode {
  const n = runCli(
    [...nodeArgs(cluster, port, `127.0.0.1:${seed}`), '--http-port', String(httpPort), ...extra],
    httpPort,
    { ...CLEAN, ...env },
  );
  started.push(n);
  return n;
}

async function upMembers(httpPort: number): Promise<number | false> {
  try {
    const view = (await getJson(httpPort, '/cluster')).body as { members: { status: string }[] };
    return view.members.filter((m) => m.status === 'up').length;
  } catch {
    return false;
  }
}

/** The command line the kernel shows every local user (`ps`), NUL-separated. */
function cmdlineOf(n: CliNode): string {
  return readFileSync(`/proc/${n.process.pid}/cmdline`, 'utf8').split('\0').join(' ');
}

describe('doyen node: secure by default (child processes)', { timeout: 60_000 }, () => {
  it('refuses to start without a secret, TLS or --insecure: exit 2 and the three ways', async () => {
    const [p, h] = await freePorts(2);
    const n = node('no-secret', p!, h!, p!, [], {});
    expect((await n.exited).code).toBe(2);
    const out = n.logs.join('\n');
    for (const way of ['DOYEN_SECRET', '--secret-file', '--tls-ca', '--insecure']) expect(out).toContain(way);
  });

  it('refuses a secret file it cannot read or that is empty, and TLS flags that are not all three (exit 2)', async () => {
    const [p, h] = await freePorts(2);
    const dir = mkdtempSync(join(tmpdir(), 'doyen-cli-secret-'));
    const empty = join(dir, 'empty');
    writeFileSync(empty, '\n', { mode: 0o600 });
    const missing = node('bad', p!, h!, p!, ['--secret-file', join(dir, 'missing')], {});
    const blank = node('bad', p!, h!, p!, ['--secret-file', empty], {});
    const partialTls = node('bad', p!, h!, p!, ['--tls-ca', join(dir, 'ca.pem')], {});
    expect((await missing.exited).code).toBe(2);
    expect(missing.logs.join('\n')).toMatch(/cannot read the secret file .*missing/);
    expect((await blank.exited).code).toBe(2);
    expect(blank.logs.join('\n')).toMatch(/secret file .*empty is empty/);
    expect((await partialTls.exited).code).toBe(2);
    expect(partialTls.logs.join('\n')).toMatch(/--tls-ca, --tls-cert and --tls-key go together/);
  });

  it('starts with DOYEN_SECRET or --secret-file; neither the secret nor the token is on argv or in the logs', async () => {
    const [pA, pB, hA, hB] = await freePorts(4);
    const secret = randomBytes(16).toString('hex');
    const token = randomBytes(16).toString('hex');
    const dir = mkdtempSync(join(tmpdir(), 'doyen-cli-secret-'));
    const secretFile = join(dir, 'cluster.secret');
    const tokenFile = join(dir, 'http.token');
    // trimmed: the file's newline and spaces are not part of the secret
    writeFileSync(secretFile, `  ${secret}\n`, { mode: 0o600 });
    writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
    const a = node('secret-env', pA!, hA!, pA!, [], { DOYEN_SECRET: secret, DOYEN_HTTP_TOKEN: token });
    await eventually(async () => (await upMembers(hA!)) === 1, { timeoutMs: 20_000, what: 'A up' });
    // B proves the trimmed file content is the same secret: A lets it in
    const b = node(
      'secret-env',
      pB!,
      hB!,
      pA!,
      ['--secret-file', secretFile, '--http-token-file', tokenFile],
      {},
    );
    await eventually(async () => (await upMembers(hA!)) === 2 && (await upMembers(hB!)) === 2, {
      timeoutMs: 20_000,
      what: 'B joined A',
    });
    for (const n of [a, b]) {
      const cmdline = cmdlineOf(n);
      // positive control: this is the node's command line
      expect(cmdline).toContain('secret-env');
      expect(cmdline).not.toContain(secret);
      expect(cmdline).not.toContain(token);
    }
    expect(cmdlineOf(b)).toContain(secretFile);
    // some refusals and an operator request, so the log has auth traffic in it
    expect((await postJson(hB!, '/cluster/leave', {}, 'wrong-token')).status).toBe(401);
    const leave = await postJson(hB!, '/cluster/leave', {}, token);
    expect(leave.status).toBe(202);
    expect(await b.exited).toEqual({ code: 0, signal: null });
    a.process.kill('SIGTERM');
    expect((await a.exited).code).toBe(0);
    for (const n of [a, b]) {
      const events = n.events().map((e) => e.event);
      // positive control: the logs were captured
      expect(events).toContain('node.started');
      expect(events).toContain('http.listening');
      const log = n.logs.join('\n');
      expect(log).not.toContain(secret);
      expect(log).not.toContain(token);
    }
    expect(b.events().find((e) => e.event === 'http.refused')).toMatchObject({ reason: 'unauthorized' });
    expect(a.events().find((e) => e.event === 'http.listening')).toMatchObject({
      host: '127.0.0.1',
      readOnly: false,
    });
  });

  it('--insecure starts with a loud warning; --secret still works, warning that ps shows it', async () => {
    const [p1, p2, h1, h2] = await freePorts(4);
    const secret = randomBytes(16).toString('hex');
    const insecure = node('insecure', p1!, h1!, p1!, ['--insecure'], {});
    const onArgv = node('on-argv', p2!, h2!, p2!, ['--secret', secret], {});
    await eventually(async () => (await upMembers(h1!)) === 1 && (await upMembers(h2!)) === 1, {
      timeoutMs: 20_000,
      what: 'both nodes up',
    });
    expect(insecure.events().find((e) => e.event === 'wire.insecure')).toMatchObject({ level: 40 });
    const warning = onArgv.events().find((e) => e.event === 'secret.on-argv');
    expect(warning?.msg).toMatch(/ps/);
    expect(onArgv.events().some((e) => e.event === 'wire.insecure')).toBe(false);
    expect(onArgv.logs.join('\n')).not.toContain(secret);
    // no token given: the management plane is read-only
    // (the line may reach the pipe after the port already answers)
    await eventually(() => insecure.events().some((e) => e.event === 'http.listening'), {
      what: 'http.listening logged',
    });
    expect(insecure.events().find((e) => e.event === 'http.listening')).toMatchObject({ readOnly: true });
    expect((await postJson(h1!, '/cluster/leave', {}, 'anything')).status).toBe(403);
  });

  it('--help lists the new flags', async () => {
    const help = runCli(['--help']);
    started.push(help);
    await help.exited;
    const text = help.logs.join('\n');
    for (const flag of [
      '--secret-file',
      'DOYEN_SECRET',
      '--insecure',
      '--tls-ca',
      '--http-host',
      '--http-token-file',
      'DOYEN_HTTP_TOKEN',
      '--http-allowed-origins',
      '--http-tls-cert',
    ])
      expect(text).toContain(flag);
  });
});
