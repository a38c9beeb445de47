// The demo nodes' app (`doyen node --app apps/partition-demo/src/cart-app.mjs`): a sharded `cart`
// entity on every node, and a small HTTP front on 127.0.0.1:$DOYEN_DEMO_CART_PORT through which
// the demo adds items and reads counts, as a web front end would. Plain JavaScript: the nodes
// run the compiled CLI, which imports this module as it is.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { fromTransition } from 'xstate';

/** How long the front waits for a cart's answer (a partition moving or failing over takes less). */
const ASK_TIMEOUT_MS = 5000;
/** Ids per request, at most (the demo sends batches). */
const MAX_IDS = 500;

/**
 * A cart counts its items. `life` is made when the cart starts empty and travels with its
 * snapshot on a planned move: the demo tells a cart that kept its state (same life) from one that
 * restarted empty after a crash (a new life).
 */
const cartLogic = (host) =>
  fromTransition(
    (state, event) => {
      if (event.type === 'cart.add') {
        const next = { ...state, count: state.count + 1 };
        event.replyTo?.send({ type: 'cart.count', count: next.count, life: state.life, host });
        return next;
      }
      if (event.type === 'cart.get')
        event.replyTo.send({ type: 'cart.count', count: state.count, life: state.life, host });
      return state;
    },
    () => ({ count: 0, life: randomUUID() }),
  );

let carts;
let server;

export function setup(node) {
  node.system.messageTypes.register(['cart.add', 'cart.get', 'cart.count']);
  // the newest incarnation's carts serve the front (a downed node restarts with a new one)
  carts = node.sharding.register('cart', cartLogic(node.cluster.self.key), { handOverSnapshot: true });
  const port = Number(process.env.DOYEN_DEMO_CART_PORT);
  if (!server && Number.isInteger(port) && port > 0) server = startFront(port, node.logger);
}

/** The cart's answer, or null (no answer in time, or an id the sharding refuses: empty, too long). */
async function askCart(id, op) {
  try {
    const r = await carts.ref(id).ask((replyTo) => ({ type: op, replyTo }), { timeout: ASK_TIMEOUT_MS });
    return { count: r.count, life: r.life, host: r.host };
  } catch {
    return null;
  }
}

/** POST /carts/add or /carts/get with `{ ids: [...] }`: one answer per id, null when none came. */
function startFront(port, logger) {
  const s = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk) => {
      body += chunk;
      if (body.length > 100_000) req.destroy();
    });
    req.on('end', async () => {
      const op =
        req.method === 'POST' &&
        (req.url === '/carts/add' ? 'cart.add' : req.url === '/carts/get' ? 'cart.get' : undefined);
      let ids;
      try {
        ids = JSON.parse(body).ids;
      } catch {}
      if (!op || !Array.isArray(ids) || ids.length > MAX_IDS || !ids.every((id) => typeof id === 'string')) {
        res.writeHead(400, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: 'POST /carts/add or /carts/get with {"ids": [up to 500 strings]}' }));
        return;
      }
      const answers = await Promise.all(ids.map((id) => askCart(id, op)));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ answers }));
    });
  });
  s.on('error', (err) =>
    logger.error({ event: 'demo.cart-front-failed', err }, 'the cart front could not listen'),
  );
  s.listen(port, '127.0.0.1');
  return s;
}
