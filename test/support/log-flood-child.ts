// A process that logs FLOOD_LINES lines through the node's logger, waits until its stdout pipe is
// full (the reader has paused: the asynchronous writes stop advancing), says so on stderr and exits:
// FLOOD_EXIT=drained through exitAfterLogs (as `doyen node` does), otherwise the way it did before
// (`logger.flush()`, then `process.exit`: pino's exit hook alone). FLOOD_DRAIN_MS bounds the drain.
import { pino } from 'pino';
import { exitAfterLogs } from '../../packages/doyen/src/log-drain.js';
import { createNodeLogger } from '../../packages/doyen/src/node-logger.js';

const logger = createNodeLogger();
const destination = (logger as unknown as Record<symbol, NodeJS.EventEmitter>)[pino.symbols.streamSym]!;
const lines = Number(process.env.FLOOD_LINES ?? 10_000);
const pad = 'x'.repeat(300);
for (let i = 0; i < lines; i++) logger.info({ event: 'flood.line', i, pad }, 'flood');

// full: no write has completed for QUIET_MS (on a free pipe they follow each other within a few ms)
const QUIET_MS = 300;
let lastWrite = Date.now();
destination.on('write', () => {
  lastWrite = Date.now();
});
const check = setInterval(() => {
  if (Date.now() - lastWrite < QUIET_MS) return;
  clearInterval(check);
  logger.info({ event: 'flood.last' }, 'last');
  process.stderr.write('flood: pipe full, exiting\n');
  if (process.env.FLOOD_EXIT === 'drained')
    void exitAfterLogs(logger, 0, Number(process.env.FLOOD_DRAIN_MS ?? 5000));
  else {
    logger.flush();
    process.exit(0);
  }
}, 50);
