// Preloaded into a bench child (NODE_OPTIONS=--import <this file>; Node refuses --cpu-prof there):
// SIGUSR2 starts V8's sampling profiler, and the profile is written to CPU_PROFILE_FILE when the IPC
// channel closes (the child's parent is done), so only the phase the parent chose is profiled.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const file = process.env.CPU_PROFILE_FILE;
if (file) {
  const session = new Session();
  session.connect();
  let started = false;
  process.on('SIGUSR2', () => {
    if (started) return;
    started = true;
    session.post('Profiler.enable');
    session.post('Profiler.setSamplingInterval', {
      interval: Number(process.env.CPU_PROFILE_INTERVAL_US ?? 200),
    });
    session.post('Profiler.start');
  });
  // a same-thread session answers synchronously: written before the child's own exit handler runs
  process.on('disconnect', () => {
    if (!started) return;
    session.post('Profiler.stop', (error, result) => {
      if (!error) writeFileSync(file, JSON.stringify(result.profile));
    });
  });
}
