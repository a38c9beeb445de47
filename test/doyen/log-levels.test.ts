import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { joinAttemptFailure } from '../../packages/cluster/src/join-attempts.js';
import {
  type DeadLetter,
  DeadLetters,
  deadLetterLogLevel,
  Metrics,
  realClock,
} from '../../packages/core/src/index.js';
import { warnUnresolvableSeeds } from '../../packages/doyen/src/bootstrap/seed-resolution.js';
import { JoinFailedError, startNode } from '../../packages/doyen/src/index.js';
import { freePorts } from '../support/cluster-nodes.js';
import { nodesClosedAfterEach } from '../support/doyen-nodes.js';
import { jsonLogCapture } from '../support/json-log.js';
import { eventually } from '../support/wait.js';

/**
 * Log levels as Akka sets them: an app's dead letter at info, a system actor's at debug, none
 * while the node shuts down (still counted); a failing join says, attempt by attempt, which
 * seed it tried and the error the wire saw; an unresolvable seed is said at once.
 */
const INFO = 30;

const letter = (recipient: string, type = 'app.order'): DeadLetter => ({
  recipient,
  message: { type },
  reason: 'node-gone',
});

describe('dead letters are logged as Akka logs them', () => {
  it("an app's at info, a system actor's at debug (a heartbeat to a gone member, a join), none while shutting down", () => {
    expect(deadLetterLogLevel(letter('/user/orders'), false)).toBe('info');
    expect(deadLetterLogLevel(letter('doyen://c@10.0.0.1:2552/user/orders#u1'), false)).toBe('info');
    expect(deadLetterLogLevel(letter('/system/heartbeat', 'heartbeat.ping'), false)).toBe('debug');
    expect(deadLetterLogLevel(letter('/system/membership', 'membership.join'), false)).toBe('debug');
    expect(deadLetterLogLevel(letter('doyen://c@10.0.0.1:2552/system/membership#u1'), false)).toBe('debug');
    // a path ref that follows a node's incarnations names no uid: still a system actor
    expect(deadLetterLogLevel(letter('doyen://c@10.0.0.1:2552/system/membership'), false)).toBe('debug');
    expect(deadLetterLogLevel(letter('/user/orders'), true)).toBeUndefined();
    expect(deadLetterLogLevel(letter('/system/heartbeat'), true)).toBeUndefined();
  });

  it('shutting down: counted and published, not logged (positive control: logged before)', () => {
    const { lines, logger } = jsonLogCapture('debug');
    const metrics = new Metrics();
    const letters = new DeadLetters(logger, realClock, metrics);
    const seen: DeadLetter[] = [];
    letters.subscribe((l) => seen.push(l));
    letters.publish(letter('/user/orders'));
    letters.publish(letter('/system/heartbeat', 'heartbeat.ping'));
    expect(lines.map((l) => [l.event, l.level])).toEqual([
      ['dead-letter', INFO],
      ['dead-letter', 20],
    ]);
    letters.shutdownStarted();
    letters.publish(letter('/user/orders'));
    letters.publish(letter('/system/membership'));
    expect(lines).toHaveLength(2);
    expect(seen).toHaveLength(4);
    expect(metrics.value('doyen_dead_letters_total', { reason: 'node-gone' })).toBe(4);
  });
});

const nodes = nodesClosedAfterEach();

const secret = randomBytes(16).toString('hex');

async function start(
  port: number,
  seeds: number[],
  logger: ReturnType<typeof jsonLogCapture>['logger'],
  extra = {},
) {
  const node = await startNode(
    {
      cluster: 'levels',
      host: '127.0.0.1',
      port,
      seeds: seeds.map((p) => ({ host: '127.0.0.1', port: p })),
      secret,
      partitions: { count: 0 },
      ...extra,
    },
    { logger },
  );
  nodes.push(node);
  return node;
}

describe('a routine leave', () => {
  it('logs no dead letter at info or above on either node, though some were counted', async () => {
    const [p1, p2] = await freePorts(2);
    const a = jsonLogCapture();
    const b = jsonLogCapture();
    const first = await start(p1!, [p1!], a.logger);
    const second = await start(p2!, [p1!], b.logger);
    await eventually(() => first.cluster.reachableMemberCount() === 2, { what: 'both up' });
    let counted = 0;
    const letters: DeadLetter[] = [];
    for (const n of [first, second])
      n.system.deadLetters.subscribe((l) => {
        counted++;
        letters.push(l);
      });
    await second.shutdown('test');
    await eventually(() => first.cluster.reachableMemberCount() === 1, { what: 'the leaver removed' });
    // the first node goes too, as a routine stop does
    await first.shutdown('test');
    const loud = [...a.lines, ...b.lines].filter((l) => l.event === 'dead-letter' && l.level >= INFO);
    expect(loud).toEqual([]);
    // positive control: the leave did dead-letter messages (to system actors it had stopped)
    expect(counted).toBeGreaterThan(0);
  }, 30_000);
});

describe('a member killed', () => {
  it("the survivor's heartbeats to it become dead letters at debug, never at info or above", async () => {
    const [p1, p2] = await freePorts(2);
    const a = jsonLogCapture();
    const options = { clusterOptions: { downing: 'auto' as const } };
    const first = await start(p1!, [p1!], a.logger, options);
    const second = await start(p2!, [p1!], jsonLogCapture('silent').logger, options);
    await eventually(() => first.cluster.reachableMemberCount() === 2, { what: 'both up' });
    const letters: DeadLetter[] = [];
    first.system.deadLetters.subscribe((l) => letters.push(l));
    await second.close(); // what kill -9 looks like to the others
    await eventually(() => first.cluster.state().membership?.members.length === 1, {
      timeoutMs: 20_000,
      what: 'the killed member removed',
    });
    await eventually(() => letters.some((l) => l.message.type === 'heartbeat.ping'), {
      what: 'heartbeats to the killed member dead-lettered',
    });
    const loud = a.lines.filter((l) => l.event === 'dead-letter' && l.level >= INFO);
    expect(loud).toEqual([]);
    // positive control: they were logged, at debug
    expect(
      a.lines.some((l) => l.event === 'dead-letter' && l.level === 20 && l.messageType === 'heartbeat.ping'),
    ).toBe(true);
  }, 30_000);
});

describe('a failing join', () => {
  it('logs each attempt with the seed and the error the wire saw, and no dead letter at info or above', async () => {
    const [port, closed] = await freePorts(2);
    const { lines, logger } = jsonLogCapture();
    await expect(
      start(port!, [closed!], logger, {
        clusterOptions: {
          maxJoinAttempts: 3,
          joinTimeoutMs: 300,
          joinBackoffMinMs: 50,
          joinBackoffMaxMs: 50,
        },
      }),
    ).rejects.toBeInstanceOf(JoinFailedError);
    const attempts = lines.filter((l) => l.event === 'cluster.join-attempt-failed');
    expect(attempts.map((l) => l.attempt)).toEqual([1, 2, 3]);
    for (const l of attempts) {
      expect(l.level).toBe(40);
      expect(l.seeds).toEqual([
        { seed: `127.0.0.1:${closed}`, error: expect.stringMatching(/ECONNREFUSED/) },
      ]);
      expect(l.msg).toMatch(new RegExp(`127\\.0\\.0\\.1:${closed} \\(connect ECONNREFUSED`));
    }
    expect(lines.filter((l) => l.event === 'dead-letter' && l.level >= INFO)).toEqual([]);
    // positive control: the wire did see those refusals (logged at debug, dial by dial)
    expect(lines.some((l) => l.event === 'wire.dial-failed' && l.code === 'ECONNREFUSED')).toBe(true);
  }, 20_000);

  it('names a seed that never answered (no dial error known) as "no answer"', () => {
    const { fields, message } = joinAttemptFailure(
      [
        { host: '127.0.0.1', port: 1 },
        { host: '127.0.0.1', port: 2 },
        { host: 'seed.example', port: 3 },
      ],
      { host: '127.0.0.1', port: 1 },
      4,
      10,
      (s) => (s.port === 3 ? 'getaddrinfo ENOTFOUND seed.example' : undefined),
    );
    expect(fields).toEqual({
      event: 'cluster.join-attempt-failed',
      attempt: 4,
      maxAttempts: 10,
      seeds: [
        { seed: '127.0.0.1:2', error: 'no answer' },
        { seed: 'seed.example:3', error: 'getaddrinfo ENOTFOUND seed.example' },
      ],
    });
    expect(message).toBe(
      'join attempt 4/10 failed: 127.0.0.1:2 (no answer), seed.example:3 (getaddrinfo ENOTFOUND seed.example)',
    );
  });

  it('says a live cluster saw the join when a member answered it (membership.join-seen)', () => {
    const { fields, message } = joinAttemptFailure(
      [
        { host: '127.0.0.1', port: 1 },
        { host: '127.0.0.1', port: 2 },
      ],
      { host: '127.0.0.1', port: 1 },
      2,
      10,
      () => undefined,
      '127.0.0.1:2#u2',
    );
    expect(fields).toMatchObject({
      answeredBy: '127.0.0.1:2#u2',
      seeds: [{ seed: '127.0.0.1:2', error: 'no welcome yet' }],
    });
    expect(message).toBe(
      'join attempt 2/10 failed (a live cluster saw it: 127.0.0.1:2#u2 answered): 127.0.0.1:2 (no welcome yet)',
    );
  });
});

describe('an unresolvable seed', () => {
  it('is warned about at once, with the seed and the resolver error', async () => {
    const { lines, logger } = jsonLogCapture('warn');
    const asked: string[] = [];
    await warnUnresolvableSeeds(
      [
        { host: '10.0.0.1', port: 1 },
        { host: 'me.example', port: 2 },
        { host: 'typo.example', port: 3 },
        { host: 'good.example', port: 4 },
      ],
      { host: 'me.example', port: 2 },
      logger,
      async (host) => {
        asked.push(host);
        if (host === 'typo.example')
          throw Object.assign(new Error('getaddrinfo ENOTFOUND typo.example'), { code: 'ENOTFOUND' });
      },
    );
    // IP seeds and this node itself are not looked up
    expect(asked.sort()).toEqual(['good.example', 'typo.example']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 40,
      event: 'cluster.seed-unresolvable',
      seed: 'typo.example:3',
      error: 'ENOTFOUND',
    });
  });

  it('a real node warns before its first join attempt ends', async () => {
    const [port] = await freePorts(1);
    const { lines, logger } = jsonLogCapture('info');
    const started = Date.now();
    // `.invalid` never resolves (RFC 6761); this node is its own first seed and forms meanwhile
    const nodeStart = start(port!, [port!], logger, {
      seeds: [
        { host: '127.0.0.1', port: port! },
        { host: 'seed.doyen.invalid', port: 2552 },
      ],
    });
    await eventually(() => lines.some((l) => l.event === 'cluster.seed-unresolvable'), {
      timeoutMs: 5000,
      what: 'the unresolvable seed warning',
    });
    expect(Date.now() - started).toBeLessThan(5000);
    expect(lines.find((l) => l.event === 'cluster.seed-unresolvable')).toMatchObject({
      level: 40,
      seed: 'seed.doyen.invalid:2552',
      error: expect.stringMatching(/ENOTFOUND|EAI_AGAIN|ESERVFAIL/),
    });
    await nodeStart;
  }, 20_000);
});
