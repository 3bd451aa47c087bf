/**
 * A PostgreSQL wire proxy for the server matrix's COMMIT faults: it relays every connection
 * of the app's pool as is, until a connection sends the marker query
 * `SELECT 'oncely-fault:<mode>'` (from the handler, in its transaction). Then, at that
 * connection's next query holding a COMMIT:
 * - `commit-unsent`: the connection dies before the COMMIT reaches the server (which rolls
 *   the transaction back when its client goes);
 * - `commit-lost`: the COMMIT reaches the server, which commits; the connection dies as its
 *   answer comes back, so the app never hears it.
 * Either way the app's COMMIT gets no answer; what the database did differs.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

type Mode = 'commit-unsent' | 'commit-lost';
const MARKER = /oncely-fault:(commit-unsent|commit-lost)/;
const COMMIT = /\bCOMMIT\b/i;

/** Frontend messages from a byte stream: the startup message has no type byte, the rest do. */
class Frontend {
  #buffer = Buffer.alloc(0);
  #started = false;

  /** The complete messages in `chunk` (with what was buffered), as [type, whole message]. */
  push(chunk: Buffer): [string, Buffer][] {
    this.#buffer = Buffer.concat([this.#buffer, chunk]);
    const out: [string, Buffer][] = [];
    for (;;) {
      const head = this.#started ? 1 : 0;
      if (this.#buffer.length < head + 4) return out;
      const length = this.#buffer.readInt32BE(head) + head;
      if (this.#buffer.length < length) return out;
      const message = this.#buffer.subarray(0, length);
      this.#buffer = this.#buffer.subarray(length);
      out.push([this.#started ? String.fromCharCode(message[0]!) : '', message]);
      this.#started = true;
    }
  }
}

/** Listens on 127.0.0.1; `port` to give `pg`. `target` is the server's socket path or port. */
export async function startPgProxy(target: { path: string } | { host: string; port: number }): Promise<Server> {
  const server = createServer((client: Socket) => {
    const upstream = connect(target as never);
    const frontend = new Frontend();
    let armed: Mode | undefined;
    let swallow = false;
    const kill = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', kill);
    upstream.on('error', kill);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.on('data', (chunk: Buffer) => {
      if (swallow)
        kill(); // the COMMIT's answer: the app never gets it
      else client.write(chunk);
    });
    client.on('data', (chunk: Buffer) => {
      for (const [type, message] of frontend.push(chunk)) {
        const text = type === 'Q' ? message.subarray(5, -1).toString('utf8') : '';
        const marker = MARKER.exec(text);
        if (marker) armed = marker[1] as Mode;
        else if (armed && type === 'Q' && COMMIT.test(text)) {
          if (armed === 'commit-unsent') return kill();
          swallow = true;
        }
        if (!upstream.destroyed) upstream.write(message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}
