import { type MessageTypes, read, schema, type UniqueNodeAddress } from '@doyen/core';

export interface HeartbeatPing {
  readonly type: 'heartbeat.ping';
  readonly from: UniqueNodeAddress;
  readonly version: number;
}

export interface HeartbeatPong {
  readonly type: 'heartbeat.pong';
  readonly from: UniqueNodeAddress;
  readonly version: number;
}

export type HeartbeatMessage = HeartbeatPing | HeartbeatPong;

/** Heartbeats, rebuilt from their fields: anyone may send them (a joiner is heartbeated too). */
export function registerHeartbeatMessages(types: MessageTypes): void {
  const heartbeat = { from: read.node, version: read.count };
  types.register(
    'heartbeat.ping',
    schema<HeartbeatPing>(heartbeat, (m) => [m.from], 'anyone'),
  );
  types.register(
    'heartbeat.pong',
    schema<HeartbeatPong>(heartbeat, (m) => [m.from], 'anyone'),
  );
}
