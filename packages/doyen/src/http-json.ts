import type { IncomingMessage, ServerResponse } from 'node:http';

/** Request bodies the management plane reads are small JSON documents: a bigger one is refused. */
export const MAX_JSON_BODY_BYTES = 64 * 1024;

/** A request body that is not JSON, or too big: answered 400 (413 when too big). */
export class BadRequestBodyError extends Error {
  override readonly name = 'BadRequestBodyError';
  constructor(
    message: string,
    readonly status: 400 | 413 = 400,
  ) {
    super(message);
  }
}

/** Reads a JSON body of at most `limit` bytes; an empty body is `{}`. */
export async function readJsonBody(request: IncomingMessage, limit = MAX_JSON_BODY_BYTES): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new BadRequestBodyError(`body over ${limit} bytes`, 413);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw new BadRequestBodyError(`bad JSON: ${(error as Error).message}`);
  }
}

/** Answers with a JSON document, never cached. */
export function sendJson(
  response: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  response.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    ...headers,
  });
  response.end(`${JSON.stringify(body, null, 2)}\n`);
}
