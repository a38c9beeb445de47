// A full garbage collection between in-process measurements, so none pays for the garbage the one before
// it left (a doyen run leaves its queued messages, a baseline its snapshots): without it the figures
// depend on the order they are taken in.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

export function settleHeap(): void {
  gc();
}
