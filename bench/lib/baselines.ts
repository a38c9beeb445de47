// The baselines doyen's messaging figures are read against, measured without doyen.
export { nactTellRate } from './nact-baseline.js';
export type { Latency, RemoteRateOptions } from './raw-ws.js';
export { rawWsMsgpackrRemoteRate, rawWsPingPongLatency } from './raw-ws.js';
export { bareXstateMachineSendRate, bareXstateTransitionSendRate } from './xstate-baselines.js';
