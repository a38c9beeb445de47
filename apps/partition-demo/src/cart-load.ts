/**
 * The demo's load of carts: adds items to carts at a steady rate through the running nodes' cart
 * fronts (the app's HTTP port, cart-app.mjs), round-robin over the carts and spread over the
 * nodes, and keeps the books (cart-book.ts). `stop` waits for what is in flight, `read` asks every
 * cart its count, so a check compares settled numbers.
 */
import { type CartAnswer, CartBook } from './cart-book.js';

export interface CartFront {
  readonly name: string;
  readonly port: number;
}

export interface CartLoadOptions {
  readonly carts: number;
  /** Adds per second, all carts together. */
  readonly rate: number;
  /** The fronts that may take requests now (running nodes). */
  readonly fronts: () => readonly CartFront[];
  readonly host?: string;
}

const TICK_MS = 100;
/** A front waits 5 s for a cart; the request a little longer. */
const REQUEST_TIMEOUT_MS = 8000;
const READ_BATCH = 500;

type Answers = (CartAnswer | null)[];

export class CartLoad {
  readonly book: CartBook;
  private timer: NodeJS.Timeout | undefined;
  private next = 0;
  private owed = 0;
  private readonly requests = new Set<Promise<void>>();
  private front = 0;
  private readonly host: string;

  constructor(private readonly options: CartLoadOptions) {
    this.book = new CartBook(options.carts);
    this.host = options.host ?? '127.0.0.1';
    this.rate = options.rate;
  }

  get running(): boolean {
    return this.timer !== undefined;
  }

  /** Adds per second, all carts together (may change between ticks). */
  rate: number;

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => this.tick(), TICK_MS);
  }

  /** Stops sending and resolves once every add sent has its answer (or gave up). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    while (this.requests.size > 0) await Promise.allSettled([...this.requests]);
  }

  private tick(): void {
    const fronts = this.options.fronts();
    if (fronts.length === 0) return;
    this.owed += (this.rate * TICK_MS) / 1000;
    const n = Math.floor(this.owed);
    this.owed -= n;
    if (n === 0) return;
    const ids: string[] = [];
    for (let i = 0; i < n; i++) {
      ids.push(this.book.ids[this.next]!);
      this.next = (this.next + 1) % this.book.ids.length;
    }
    // one request per front per tick: the adds of a tick spread over the nodes
    const per = Math.ceil(ids.length / fronts.length);
    for (let i = 0; i < ids.length; i += per) {
      const front = fronts[this.front++ % fronts.length]!;
      this.add(front, ids.slice(i, i + per));
    }
  }

  private add(front: CartFront, ids: string[]): void {
    for (const id of ids) this.book.sent(id);
    const request = this.post(front, '/carts/add', ids).then(
      (answers) => {
        for (const [i, id] of ids.entries()) this.book.answered(id, answers[i] ?? null);
      },
      (error: unknown) => {
        const refused = (error as { cause?: { code?: string } }).cause?.code === 'ECONNREFUSED';
        for (const id of ids) {
          if (refused) this.book.notSent(id);
          else this.book.answered(id, null);
        }
      },
    );
    this.requests.add(request);
    void request.finally(() => this.requests.delete(request));
  }

  /** Every cart's count now, through the running fronts (null: no answer). */
  async read(): Promise<Map<string, CartAnswer | null>> {
    const answers = new Map<string, CartAnswer | null>();
    const ids = this.book.ids;
    for (let i = 0; i < ids.length; i += READ_BATCH) {
      const batch = ids.slice(i, i + READ_BATCH);
      let got: Answers | undefined;
      for (const front of this.options.fronts()) {
        got = await this.post(front, '/carts/get', batch).catch(() => undefined);
        if (got) break;
      }
      for (const [j, id] of batch.entries()) answers.set(id, got?.[j] ?? null);
    }
    return answers;
  }

  private async post(front: CartFront, path: string, ids: readonly string[]): Promise<Answers> {
    const res = await fetch(`http://${this.host}:${front.port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ids }),
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    if (!res.ok) throw new Error(`${front.name} ${path}: HTTP ${res.status}`);
    const body = (await res.json()) as { answers?: Answers };
    if (!Array.isArray(body.answers) || body.answers.length !== ids.length)
      throw new Error(`${front.name} ${path}: malformed answer`);
    return body.answers;
  }
}
