/** The bench's `--runs N` argument (a positive integer), or `fallback` when it is not given. */
export function runsArg(fallback: number, args: readonly string[] = process.argv.slice(2)): number {
  return intArg('runs', fallback, args);
}

/** The bench's `--NAME N` argument (a positive integer), or `fallback` when it is not given. */
export function intArg(
  name: string,
  fallback: number,
  args: readonly string[] = process.argv.slice(2),
): number {
  const at = args.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const n = Number(args[at + 1]);
  if (!(Number.isInteger(n) && n > 0))
    throw new Error(`--${name} needs a positive integer, got ${args[at + 1]}`);
  return n;
}
