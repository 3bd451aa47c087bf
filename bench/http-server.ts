/**
 * The benchmarks' HTTP server, run in a child process so that its work does not share
 * the client's event loop. `POST /ok` answers 201 with a small JSON body; `POST /busy`
 * answers 503 with `Retry-After: 0`; anything else 404. Prints the port on stdout.
 */
import { createServer } from 'node:http';

const body = JSON.stringify({ id: 'pay_123', status: 'succeeded', amount: 1999 });

const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    if (req.url === '/ok') {
      res.writeHead(201, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    } else if (req.url === '/busy') {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0', 'content-length': 2 });
      res.end('{}');
    } else {
      res.writeHead(404, { 'content-length': 0 });
      res.end();
    }
  });
});
server.keepAliveTimeout = 60_000;
server.headersTimeout = 61_000;
server.listen(0, '127.0.0.1', () => {
  const address = server.address();
  if (typeof address === 'object' && address) process.stdout.write(`${address.port}\n`);
});
process.on('disconnect', () => server.close(() => process.exit(0)));
