/**
 * Exits the bench with status 1 after `minutes`: a stuck bench fails rather than hangs (every wait
 * inside has its own, shorter bound). Unref'd, so a bench that finishes exits at once.
 */
export function startWatchdog(bench: string, minutes: number): void {
  setTimeout(() => {
    process.stderr.write(`${bench} bench: watchdog expired after ${minutes} minutes\n`);
    process.exit(1);
  }, minutes * 60_000).unref();
}
