/**
 * Settles like `call`, or rejects with `timeout()` after `ms`, whichever comes first. The timer
 * never keeps the process alive. `onLate` gets a value that arrives after the deadline (e.g. a
 * lease granted too late, to be given back).
 */
export function withDeadline<T>(
  call: Promise<T>,
  ms: number,
  timeout: () => Error,
  onLate?: (value: T) => void,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    const timer = setTimeout(() => {
      settled = true;
      if (onLate) call.then(onLate, () => undefined);
      reject(timeout());
    }, ms);
    timer.unref?.();
    call.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
