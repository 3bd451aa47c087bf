/**
 * A proxy on 127.0.0.1 that forwards each request to `target` and, while `drop` is above
 * zero, reads the whole answer and then destroys the client's socket instead of sending
 * it: the effect happened, the client sees a network error.
 */
import { createServer, request } from 'node:http';
import { closeServer, listen } from './listen.js';

export interface DropProxy {
  url: string;
  /** Answers still to drop (the next n). */
  drop: number;
  /** Answers dropped so far. */
  dropped: number;
  close(): Promise<void>;
}

export async function startDropProxy(target: string): Promise<DropProxy> {
  const proxy: DropProxy = { url: '', drop: 0, dropped: 0, close: async () => {} };
  const server = createServer((req, res) => {
    const upstream = request(
      new URL(req.url ?? '/', target),
      { method: req.method, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (chunk: Buffer) => chunks.push(chunk));
        answer.on('end', () => {
          if (proxy.drop > 0) {
            proxy.drop -= 1;
            proxy.dropped += 1;
            req.socket.destroy();
            return;
          }
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          res.end(Buffer.concat(chunks));
        });
      },
    );
    upstream.on('error', () => req.socket.destroy());
    req.pipe(upstream);
  });
  proxy.url = await listen(server);
  proxy.close = () => closeServer(server);
  return proxy;
}
