import { formatNodeAddress, InvalidConfigError, parseNodeAddress } from '@doyen/core';
import type { WireTlsConfig } from './tls-config.js';
import { loadTlsMaterial } from './tls-material.js';

export interface WireConfig {
  /** Shared cluster secret proven with HMAC during the handshake. Empty: no authentication. */
  readonly secret: string;
  /** Largest frame accepted or sent; larger inbound frames close the connection (1009). */
  readonly maxFrameBytes: number;
  /**
   * Largest frame on the system lane, accepted or sent. Cluster messages are small (a 1,000-member
   * membership update with long host names, keys and roles encodes to ~164 KB), so a peer may not
   * make this node decode megabyte frames there, where heartbeats travel.
   */
  readonly maxSystemFrameBytes: number;
  /**
   * Time all inbound connections together may spend decoding and delivering per event-loop
   * turn: they take turns (one frame, or one slice of a large one, each), so timers and heartbeats
   * run between turns however many connections flood.
   */
  readonly inboundTurnBudgetMs: number;
  /** Authenticated inbound connections at once, all peers and lanes together; beyond: closed with 4012. */
  readonly maxInboundConnections: number;
  /**
   * Authenticated inbound connections per identity (`host:port#uid`) and lane. Beyond, the
   * identity's oldest connection is closed (4013): a reconnect replaces its own half-open socket.
   */
  readonly maxInboundPerIdentity: number;
  /**
   * Of `maxPendingUpgrades` and `maxPendingHandshakes`, the slots only sources this node knows may
   * take (current members, seeds, discovered contacts; see WsTransport.setKnownPeers): unknown
   * sources holding every other slot cannot keep those out. 0: no reservation. Unset: 16, or a
   * quarter of the smaller of the two limits when they are set lower.
   */
  readonly reservedHandshakeSlots: number;
  /** Outbound frames aim at this size: many small messages share one frame. */
  readonly batchBytes: number;
  /** Messages waiting per peer and lane; beyond it new ones become dead letters. */
  readonly systemQueueCapacity: number;
  readonly userQueueCapacity: number;
  /** Bytes handed to the socket but not yet written; above it we stop and wait (backpressure). */
  readonly highWaterBytes: number;
  /** Time a peer has to complete the handshake after the WebSocket upgrade (the dialer: from the dial). */
  readonly handshakeTimeoutMs: number;
  /** Time a TCP connection has to complete the HTTP upgrade to WebSocket before it is cut. */
  readonly upgradeTimeoutMs: number;
  /** TCP connections allowed at once that have not completed the HTTP upgrade (beyond: cut at once). */
  readonly maxPendingUpgrades: number;
  /** Upgraded connections allowed at once that have not authenticated (beyond: closed with 4006). */
  readonly maxPendingHandshakes: number;
  /** Unauthenticated connections (upgraded or not) allowed at once from one remote IP address. */
  readonly maxPendingHandshakesPerIp: number;
  /** Largest challenge, hello or welcome frame: the limit before a peer has authenticated. */
  readonly maxHandshakeFrameBytes: number;
  /** Deepest nesting of arrays and maps a frame may contain (checked before decoding). */
  readonly maxNestingDepth: number;
  /**
   * Other `host:port` names this node is reachable as (a DNS name, a NAT address): a hello must
   * name the node it meant to reach, and only the advertised `host:port` and these are accepted.
   */
  readonly aliases: readonly string[];
  /**
   * A peer that names an IP address as its host must connect from that address: the identity in
   * a hello is otherwise only claimed (anyone with the secret could claim another node's). Turn
   * off behind NAT or a proxy that rewrites source addresses; host names are not checked.
   */
  readonly verifyPeerAddress: boolean;
  /**
   * This node's identity key (an Ed25519 private key, PKCS#8 PEM) for an identity that survives
   * restarts; absent: a new key per process. A restarted node that proves the key of its previous
   * incarnation replaces it at once; otherwise only once that incarnation is unreachable.
   */
  readonly identityKey?: string;
  /**
   * Refuse a connection that claims a member but signs with another key than the one the
   * coordinator admitted with it. Only tests and benches turn this off (to show what it stops).
   */
  readonly checkPeerKeys: boolean;
  /** Reconnect backoff: doubles from min to max, with ±`reconnectJitter` random spread. */
  readonly reconnectMinMs: number;
  readonly reconnectMaxMs: number;
  readonly reconnectJitter: number;
  /** Mutual TLS between nodes; absent: plaintext `ws` (the HMAC handshake only). */
  readonly tls?: WireTlsConfig;
}

export const defaultWireConfig: WireConfig = {
  secret: '',
  maxFrameBytes: 1024 * 1024,
  maxSystemFrameBytes: 512 * 1024,
  inboundTurnBudgetMs: 2,
  maxInboundConnections: 256,
  maxInboundPerIdentity: 1,
  reservedHandshakeSlots: 16,
  batchBytes: 64 * 1024,
  systemQueueCapacity: 20_000,
  userQueueCapacity: 200_000,
  highWaterBytes: 4 * 1024 * 1024,
  handshakeTimeoutMs: 3_000,
  upgradeTimeoutMs: 2_000,
  maxPendingUpgrades: 64,
  maxPendingHandshakes: 64,
  maxPendingHandshakesPerIp: 8,
  maxHandshakeFrameBytes: 1024,
  maxNestingDepth: 32,
  aliases: [],
  verifyPeerAddress: true,
  checkPeerKeys: true,
  reconnectMinMs: 100,
  reconnectMaxMs: 5_000,
  reconnectJitter: 0.2,
};

export function resolveWireConfig(partial: Partial<WireConfig> = {}): WireConfig {
  const slots = Math.min(
    partial.maxPendingUpgrades ?? defaultWireConfig.maxPendingUpgrades,
    partial.maxPendingHandshakes ?? defaultWireConfig.maxPendingHandshakes,
  );
  const c = {
    ...defaultWireConfig,
    // unset: the default reservation, but never more than a quarter of lowered limits
    reservedHandshakeSlots: Math.min(defaultWireConfig.reservedHandshakeSlots, Math.floor(slots / 4)),
    ...partial,
  };
  const positive = [
    'maxFrameBytes',
    'maxSystemFrameBytes',
    'inboundTurnBudgetMs',
    'batchBytes',
    'systemQueueCapacity',
    'userQueueCapacity',
    'highWaterBytes',
    'handshakeTimeoutMs',
    'upgradeTimeoutMs',
    'maxPendingUpgrades',
    'maxPendingHandshakes',
    'maxPendingHandshakesPerIp',
    'maxHandshakeFrameBytes',
    'maxNestingDepth',
    'reconnectMinMs',
    'reconnectMaxMs',
  ] as const;
  for (const key of positive) {
    if (!(Number.isFinite(c[key]) && c[key] > 0))
      throw new InvalidConfigError(`wire.${key} must be > 0, got ${c[key]}`);
  }
  if (c.batchBytes > Math.min(c.maxFrameBytes, c.maxSystemFrameBytes))
    throw new InvalidConfigError(
      'wire.batchBytes must not exceed wire.maxFrameBytes nor wire.maxSystemFrameBytes',
    );
  // Infinity turns a connection cap off (the positive control of the attack tests)
  for (const key of ['maxInboundConnections', 'maxInboundPerIdentity'] as const) {
    if (!(c[key] === Number.POSITIVE_INFINITY || (Number.isInteger(c[key]) && c[key] >= 1)))
      throw new InvalidConfigError(`wire.${key} must be an integer >= 1 (or Infinity), got ${c[key]}`);
  }
  if (
    !(
      Number.isInteger(c.reservedHandshakeSlots) &&
      c.reservedHandshakeSlots >= 0 &&
      c.reservedHandshakeSlots < slots
    )
  )
    throw new InvalidConfigError(
      `wire.reservedHandshakeSlots must be an integer >= 0 and below maxPendingUpgrades and maxPendingHandshakes (${slots}), got ${c.reservedHandshakeSlots}`,
    );
  if (c.reconnectMaxMs < c.reconnectMinMs)
    throw new InvalidConfigError('wire.reconnectMaxMs < reconnectMinMs');
  if (c.maxHandshakeFrameBytes > Math.min(c.maxFrameBytes, c.maxSystemFrameBytes))
    throw new InvalidConfigError(
      'wire.maxHandshakeFrameBytes must not exceed wire.maxFrameBytes nor wire.maxSystemFrameBytes',
    );
  // normalised as the dialer formats its target, so the comparison is exact
  const aliases = c.aliases.map((a) => formatNodeAddress(parseNodeAddress(a)));
  if (c.tls) validateTlsConfig(c.tls);
  return { ...c, aliases };
}

/** The files exist, parse, match and are valid now (see checkTlsMaterial); throws InvalidConfigError. */
function validateTlsConfig(tls: WireTlsConfig): void {
  for (const key of ['caFile', 'certFile', 'keyFile'] as const) {
    if (typeof tls[key] !== 'string' || tls[key].length === 0)
      throw new InvalidConfigError(`wire.tls.${key} must be a file path`);
  }
  const interval = tls.reloadIntervalMs;
  if (interval !== undefined && !(Number.isFinite(interval) && interval > 0))
    throw new InvalidConfigError(`wire.tls.reloadIntervalMs must be > 0, got ${interval}`);
  loadTlsMaterial(tls);
}

/** Reconnect delay after `attempt` consecutive failures (pure; `random` in [0,1)). */
export function reconnectDelay(config: WireConfig, attempt: number, random: number): number {
  const base = Math.min(config.reconnectMaxMs, config.reconnectMinMs * 2 ** Math.min(attempt, 30));
  return Math.round(base * (1 - config.reconnectJitter + 2 * config.reconnectJitter * random));
}
