/**
 * The heartbeat interval the default detector configs assume: 100 ms, a tenth of Akka's 1 s, because
 * doyen targets LAN clusters where a crashed coordinator should be noticed in about a second. With
 * ~9 monitored peers per node (see heartbeat-ring.ts) that is ~90 small frames/s per node.
 */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 100;
