/**
 * The heartbeat interval the default detector configs assume: 200 ms, a fifth of Akka's 1 s.
 * Detection time is set by the acceptable pause and the deviation floor, not by the interval
 * (see phi-accrual.ts): at 200 ms a crash is still suspected ~1 s after the last heartbeat, as it
 * was at 100 ms, for half the frames. Frames are what an idle node pays for (a write syscall and
 * a parse each), so an idle 5-node cluster costs half the CPU.
 */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 200;
