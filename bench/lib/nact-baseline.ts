// nact: an established Node actor library, as the in-process tell baseline.
import { dispatch, spawn, start, stop } from 'nact';
import { perSecond } from './stats.js';
import { withTimeout } from './timeout.js';

type Inc = { type: 'inc' };

/** msgs/s of `dispatch` to a stateful nact actor that counts, timed until it has processed the last one. */
export async function nactTellRate(messages: number): Promise<number> {
  const system = start();
  try {
    let finished!: () => void;
    const done = new Promise<void>((resolve) => (finished = resolve));
    const counter = spawn(
      system,
      (count: number, _msg: Inc) => {
        if (count + 1 === messages) finished();
        return count + 1;
      },
      'counter',
      { initialState: 0 },
    );
    const start = process.hrtime.bigint();
    for (let i = 0; i < messages; i++) dispatch(counter, { type: 'inc' });
    await withTimeout(done, 30_000, 'nact counter');
    return perSecond(messages, start, process.hrtime.bigint());
  } finally {
    stop(system);
  }
}
