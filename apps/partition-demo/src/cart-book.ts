/**
 * The demo's books on its carts: what it sent, what each cart acknowledged, and whether a cart
 * kept its state. A cart's answer carries its `life`, made when it starts empty and carried with
 * its snapshot on a planned move, so a new life means the cart restarted empty (its owner was
 * killed or downed: no remember, no persistence). The check after a run:
 *
 * - a cart's count is EXACT when it equals the adds acknowledged in its current life;
 * - adds without an answer (timed out) may or may not have counted: the count may exceed the
 *   acknowledged by at most those, never fall below them;
 * - adds acknowledged in an earlier life are LOST by design when that life ended with a crash;
 *   across planned moves (graceful leave, restart, join) no cart may change life at all.
 */
export interface CartAnswer {
  readonly count: number;
  readonly life: string;
  /** The member key (`host:port#uid`) of the node that ran it. */
  readonly host: string;
}

interface Cart {
  life: string | undefined;
  readonly endedLives: Set<string>;
  /** Adds acknowledged in the current life. */
  acked: number;
  /** Adds with no answer, ever (they may have counted in some life). */
  unanswered: number;
  inFlight: number;
  host: string | undefined;
}

export interface CartProblem {
  readonly id: string;
  readonly detail: string;
}

export interface CartCheck {
  readonly carts: number;
  /** Count equal to the adds acknowledged in its life. */
  readonly exact: number;
  /** Above that by no more than its unanswered adds. */
  readonly uncertain: number;
  readonly problems: readonly CartProblem[];
  /** Carts that restarted empty since the previous check, and the acknowledged adds they lost. */
  readonly restartedEmpty: number;
  readonly lostAcked: number;
}

export interface CartTotals {
  readonly sent: number;
  readonly acked: number;
  readonly unanswered: number;
  readonly inFlight: number;
  readonly restartedEmpty: number;
  readonly lostAcked: number;
}

export class CartBook {
  readonly ids: readonly string[];
  private readonly carts = new Map<string, Cart>();
  private sentTotal = 0;
  private ackedTotal = 0;
  private unansweredTotal = 0;
  private restartedTotal = 0;
  private lostTotal = 0;
  /** Since the last check. */
  private restartedSince = 0;
  private lostSince = 0;

  constructor(count: number, prefix = 'cart-') {
    this.ids = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
    for (const id of this.ids)
      this.carts.set(id, {
        life: undefined,
        endedLives: new Set(),
        acked: 0,
        unanswered: 0,
        inFlight: 0,
        host: undefined,
      });
  }

  private cart(id: string): Cart {
    const c = this.carts.get(id);
    if (!c) throw new Error(`no cart ${id}`);
    return c;
  }

  sent(id: string): void {
    this.cart(id).inFlight++;
    this.sentTotal++;
  }

  /** The add never reached a node (connection refused): as if not sent. */
  notSent(id: string): void {
    this.cart(id).inFlight--;
    this.sentTotal--;
  }

  /** The answer to an add: the cart's count after it, or null when none came. */
  answered(id: string, answer: CartAnswer | null): void {
    const c = this.cart(id);
    c.inFlight--;
    if (answer === null) {
      c.unanswered++;
      this.unansweredTotal++;
      return;
    }
    // an answer of a life that already ended counted in state that is gone
    if (c.endedLives.has(answer.life)) {
      this.lost(1);
      return;
    }
    this.enterLife(c, answer.life);
    c.acked++;
    c.host = answer.host;
    this.ackedTotal++;
  }

  private enterLife(c: Cart, life: string): void {
    if (c.life === life) return;
    if (c.life !== undefined) {
      c.endedLives.add(c.life);
      this.lost(c.acked);
      this.restartedTotal++;
      this.restartedSince++;
      c.acked = 0;
    }
    c.life = life;
  }

  private lost(n: number): void {
    this.lostTotal += n;
    this.lostSince += n;
  }

  /** Where each cart ran last, per member key (the entities per node as the demo saw them). */
  hosts(): Map<string, number> {
    const m = new Map<string, number>();
    for (const c of this.carts.values()) if (c.host) m.set(c.host, (m.get(c.host) ?? 0) + 1);
    return m;
  }

  totals(): CartTotals {
    let inFlight = 0;
    for (const c of this.carts.values()) inFlight += c.inFlight;
    return {
      sent: this.sentTotal,
      acked: this.ackedTotal,
      unanswered: this.unansweredTotal,
      inFlight,
      restartedEmpty: this.restartedTotal,
      lostAcked: this.lostTotal,
    };
  }

  /** Checks every cart's answer to a read (`answers` by id; null: no answer) with nothing in flight. */
  check(answers: ReadonlyMap<string, CartAnswer | null>): CartCheck {
    const problems: CartProblem[] = [];
    let exact = 0;
    let uncertain = 0;
    for (const id of this.ids) {
      const c = this.cart(id);
      const a = answers.get(id) ?? null;
      if (a === null) {
        problems.push({ id, detail: 'no answer' });
        continue;
      }
      if (c.endedLives.has(a.life)) {
        problems.push({
          id,
          detail: `answered from an ended life ${a.life.slice(0, 8)} (state that should be gone)`,
        });
        continue;
      }
      // a new life without any acknowledged add in it: the cart restarted empty since
      this.enterLife(c, a.life);
      c.host = a.host;
      if (a.count === c.acked) exact++;
      else if (a.count > c.acked && a.count <= c.acked + c.unanswered) uncertain++;
      else
        problems.push({
          id,
          detail: `count ${a.count}, acknowledged ${c.acked}${c.unanswered ? ` (+ up to ${c.unanswered} unanswered)` : ''}`,
        });
    }
    const result = {
      carts: this.ids.length,
      exact,
      uncertain,
      problems,
      restartedEmpty: this.restartedSince,
      lostAcked: this.lostSince,
    };
    this.restartedSince = 0;
    this.lostSince = 0;
    return result;
  }
}

/** One line for the screen or the script's log. */
export function describeCheck(r: CartCheck): string {
  const parts = [`${r.exact}/${r.carts} carts exact`];
  if (r.uncertain) parts.push(`${r.uncertain} within their unanswered adds`);
  if (r.restartedEmpty)
    parts.push(
      `${r.restartedEmpty} restarted empty after a crash (${r.lostAcked} acknowledged adds lost with them)`,
    );
  else parts.push('none restarted empty');
  if (r.problems.length)
    parts.push(
      `${r.problems.length} WRONG: ${r.problems
        .slice(0, 5)
        .map((p) => `${p.id} ${p.detail}`)
        .join('; ')}`,
    );
  return parts.join(', ');
}
