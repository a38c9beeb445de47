// Client-side ws helpers shared by the raw ws baselines.
import WebSocket from 'ws';
import { withTimeout } from './timeout.js';

/** Bytes queued in ws and the socket beyond which a sender waits, so memory stays bounded. */
const HIGH_WATER_BYTES = 1 << 20;

/** `tls`: client options of a `wss` dial (certificate, key, CA), as doyen's wire dials with mutual TLS. */
export async function connect(url: string, tls: WebSocket.ClientOptions = {}): Promise<WebSocket> {
  // No compression: the baselines measure framing and encoding, and doyen's wire does not deflate either.
  const ws = new WebSocket(url, { perMessageDeflate: false, ...tls });
  try {
    await withTimeout(
      new Promise<void>((resolve, reject) => {
        ws.once('open', resolve);
        ws.once('error', reject);
      }),
      5_000,
      `connecting to ${url}`,
    );
    return ws;
  } catch (error) {
    ws.terminate();
    throw error;
  }
}

/**
 * Sends `data`, or, when too much is queued already, returns a promise for the moment this frame reaches
 * the kernel, i.e. the queue ahead of it has drained. Returns `undefined` on the fast path so hot loops
 * need not await.
 */
export function sendWithBackpressure(ws: WebSocket, data: Uint8Array): Promise<void> | undefined {
  if (ws.bufferedAmount < HIGH_WATER_BYTES) {
    ws.send(data);
    return undefined;
  }
  return new Promise((resolve, reject) => ws.send(data, (error) => (error ? reject(error) : resolve())));
}

/** The next message on `ws`; rejects if the socket closes or fails first. */
export function nextMessage(ws: WebSocket): Promise<WebSocket.RawData> {
  return new Promise((resolve, reject) => {
    const onMessage = (data: WebSocket.RawData) => settle(() => resolve(data));
    const onClose = (code: number) => settle(() => reject(new Error(`socket closed (${code})`)));
    const onError = (error: Error) => settle(() => reject(error));
    const settle = (then: () => void) => {
      ws.off('message', onMessage).off('close', onClose).off('error', onError);
      then();
    };
    ws.on('message', onMessage).on('close', onClose).on('error', onError);
  });
}
