// The demo's cart books: what "exact" means after planned moves and after a crash, and the
// script's `carts` commands.
import { describe, expect, it } from 'vitest';
import { type CartAnswer, CartBook, describeCheck } from '../../apps/partition-demo/src/cart-book.js';
import {
  parseScript,
  parseStep,
  runScript,
  type ScriptTarget,
} from '../../apps/partition-demo/src/script.js';
import { renderView, type ViewModel } from '../../apps/partition-demo/src/view.js';

const answer = (count: number, life: string, host = 'n1'): CartAnswer => ({ count, life, host });

/** Sends `n` adds to `id`, each acknowledged by the cart in `life` starting after `from`. */
function acked(book: CartBook, id: string, n: number, life: string, from = 0): void {
  for (let i = 1; i <= n; i++) {
    book.sent(id);
    book.answered(id, answer(from + i, life));
  }
}

describe('cart books', () => {
  it('a cart that kept its life is exact when its count equals its acknowledged adds', () => {
    const book = new CartBook(2);
    acked(book, 'cart-0', 5, 'L0');
    acked(book, 'cart-1', 3, 'L1');
    const r = book.check(
      new Map([
        ['cart-0', answer(5, 'L0', 'n2')],
        ['cart-1', answer(3, 'L1')],
      ]),
    );
    expect(r).toMatchObject({
      carts: 2,
      exact: 2,
      uncertain: 0,
      problems: [],
      restartedEmpty: 0,
      lostAcked: 0,
    });
  });

  it('catches a lost acknowledged add and a counted-twice one (the check is not vacuous)', () => {
    const book = new CartBook(2);
    acked(book, 'cart-0', 5, 'L0');
    acked(book, 'cart-1', 5, 'L1');
    const r = book.check(
      new Map([
        ['cart-0', answer(4, 'L0')],
        ['cart-1', answer(6, 'L1')],
      ]),
    );
    expect(r.exact).toBe(0);
    expect(r.problems.map((p) => p.id)).toEqual(['cart-0', 'cart-1']);
    expect(describeCheck(r)).toMatch(/2 WRONG: cart-0 count 4, acknowledged 5/);
  });

  it('an unanswered add may or may not have counted: up to that many more is within bounds', () => {
    const book = new CartBook(1);
    acked(book, 'cart-0', 2, 'L0');
    book.sent('cart-0');
    book.answered('cart-0', null);
    expect(book.check(new Map([['cart-0', answer(3, 'L0')]]))).toMatchObject({
      exact: 0,
      uncertain: 1,
      problems: [],
    });
    expect(book.check(new Map([['cart-0', answer(4, 'L0')]])).problems).toHaveLength(1);
  });

  it('a crash: the cart restarts empty in a new life, its acknowledged adds are counted as lost', () => {
    const book = new CartBook(2);
    acked(book, 'cart-0', 5, 'old');
    acked(book, 'cart-1', 5, 'L1');
    // the killed node's cart answers again from a new life, two more adds
    acked(book, 'cart-0', 2, 'new');
    // a late answer of the ended life counted in state that is gone
    book.sent('cart-0');
    book.answered('cart-0', answer(6, 'old'));
    const r = book.check(
      new Map([
        ['cart-0', answer(2, 'new')],
        ['cart-1', answer(5, 'L1')],
      ]),
    );
    expect(r).toMatchObject({ exact: 2, problems: [], restartedEmpty: 1, lostAcked: 6 });
    // the next check starts counting restarts anew; an answer from the ended life is wrong
    const again = book.check(
      new Map([
        ['cart-0', answer(5, 'old')],
        ['cart-1', answer(5, 'L1')],
      ]),
    );
    expect(again.restartedEmpty).toBe(0);
    expect(again.problems[0]?.detail).toMatch(/ended life/);
  });

  it('a restart without any add after it shows at the check', () => {
    const book = new CartBook(1);
    acked(book, 'cart-0', 3, 'old');
    expect(book.check(new Map([['cart-0', answer(0, 'new')]]))).toMatchObject({
      exact: 1,
      restartedEmpty: 1,
      lostAcked: 3,
    });
  });

  it('an add that never reached a node does not count as sent', () => {
    const book = new CartBook(1);
    book.sent('cart-0');
    book.notSent('cart-0');
    expect(book.totals()).toMatchObject({ sent: 0, inFlight: 0, unanswered: 0 });
  });
});

describe('carts in demo scripts', () => {
  it('parses carts start/stop/check and refuses bad ones', () => {
    expect(parseStep('carts start')).toEqual({ op: 'carts', action: 'start' });
    expect(parseStep('carts start 300 50')).toEqual({ op: 'carts', action: 'start', count: 300, rate: 50 });
    expect(parseStep('carts stop')).toEqual({ op: 'carts', action: 'stop' });
    expect(parseStep('carts check')).toEqual({ op: 'carts', action: 'check', noLoss: false });
    expect(parseStep('carts check no-loss')).toEqual({ op: 'carts', action: 'check', noLoss: true });
    for (const bad of ['carts', 'carts start 0', 'carts start x', 'carts check lossy', 'carts stop now'])
      expect(parseStep(bad), bad).toMatch(/usage: carts start/);
  });

  it('runs them on the target; a failed check fails the script at its line', async () => {
    const done: string[] = [];
    const target = {
      carts: async (step: { action: string }) => {
        done.push(step.action);
        if (step.action === 'check') throw new Error('1 WRONG: cart-3 count 4, acknowledged 5');
        return 'ok';
      },
    } as unknown as ScriptTarget;
    const r = await runScript(parseScript('carts start 10 5\ncarts stop\ncarts check\n', 't.demo'), target, {
      file: 't.demo',
    });
    expect(done).toEqual(['start', 'stop', 'check']);
    expect(r.ok).toBe(false);
    expect(r.failure).toMatch(/t\.demo:3: carts check: 1 WRONG/);
    const none = await runScript(parseScript('carts stop'), {} as ScriptTarget);
    expect(none.failure).toMatch(/drives no carts/);
  });

  it('the screen shows the carts line and entities per node', () => {
    const model: ViewModel = {
      cluster: 'c',
      now: 0,
      uptimeMs: 0,
      running: 1,
      total: 1,
      coordinator: undefined,
      otherCoordinators: [],
      singletons: [],
      table: undefined,
      missing: [],
      fault: undefined,
      rows: [
        {
          number: 1,
          name: 'athens',
          port: 1,
          process: 'running',
          status: 'up',
          reachable: true,
          age: 1,
          incarnation: 1,
          partitions: 271,
          entities: 137,
          coordinator: true,
          allocator: true,
          sees: '1 up',
          selected: false,
        },
      ],
      events: [],
      script: undefined,
      lastAction: undefined,
      keys: undefined,
      logDir: undefined,
      carts: {
        carts: 200,
        rate: 100,
        running: true,
        totals: { sent: 10, acked: 9, unanswered: 0, inFlight: 1, restartedEmpty: 2, lostAcked: 7 },
        lastCheck: undefined,
      },
    };
    const text = renderView(model, { width: 200 });
    expect(text).toMatch(
      /carts\s+200 carts, 100 adds\/s: 9 adds acked, 1 in flight, 0 unanswered, 2 restarted empty/,
    );
    expect(text).toMatch(/entities/);
    expect(text).toMatch(/athens.*137/);
  });
});
