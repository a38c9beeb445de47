/**
 * Preloaded (`--import`) into every node the demo starts: the demo keeps the child's stdin pipe
 * open, so when it closes the demo is gone (crashed, or killed with -9) and this node ends too.
 * Never leaves a process behind, even when the demo cannot clean up. Plain JavaScript: the
 * nodes run the compiled CLI with no TypeScript loader.
 */
if (process.env.DOYEN_DEMO_CHILD === '1' && !process.stdin.isTTY) {
  const orphaned = () => process.kill(process.pid, 'SIGKILL');
  process.stdin.on('end', orphaned);
  process.stdin.on('close', orphaned);
  process.stdin.on('error', orphaned);
  process.stdin.on('data', () => {});
  process.stdin.resume();
  process.stdin.unref?.();
}
