/**
 * `oncely/mock/msw`: mount a contract server as MSW 3 request handlers. The only module
 * of oncely that imports `msw` (an optional peer dependency); `oncely/mock` works without it.
 */

import { type HttpHandler, HttpResponse, http } from 'msw';
import { InvalidArgumentError } from '../errors.js';
import type { ContractServer } from './contract-server.js';

export interface MswHandlersOptions {
  /**
   * Requests under this URL (same origin, path prefix) all reach the server, and one no
   * route serves answers 404, as a real API would. Route paths match the whole URL path,
   * prefix included. Without it, only requests a route serves reach the server; the rest
   * go on to the app's other handlers.
   * @default undefined (only requests a route serves; required with the default routes)
   * @example { baseUrl: 'https://api.test' }
   */
  baseUrl?: string;
}

const underBase = (base: URL, target: URL): boolean => {
  const prefix = base.pathname.replace(/\/$/, '');
  return (
    target.origin === base.origin &&
    (prefix === '' || target.pathname === prefix || target.pathname.startsWith(`${prefix}/`))
  );
};

/**
 * MSW handlers answering from `server`. A dropped or hung-then-released request becomes
 * `HttpResponse.error()`: the client's `fetch` rejects with a network error.
 *
 * @throws InvalidArgumentError without a `baseUrl` when the server runs its default routes: they
 * serve every path, so the handlers would answer every request of the app.
 * @example
 * import { setupServer } from 'msw/node';
 * import { createContractServer } from 'oncely/mock';
 * import { mswHandlers } from 'oncely/mock/msw';
 * const contract = createContractServer();
 * const msw = setupServer(...mswHandlers(contract, { baseUrl: 'https://api.test' }));
 * msw.listen({ onUnhandledFrame: 'error' });
 */
export function mswHandlers(server: ContractServer, options: MswHandlersOptions = {}): HttpHandler[] {
  if (options.baseUrl === undefined && server.defaultRoutes) {
    throw new InvalidArgumentError(
      'mswHandlers needs a baseUrl when the contract server has no routes of its own: its default routes serve every path and would answer every request of the app. Pass { baseUrl: "https://api.test" } or give createContractServer routes.',
    );
  }
  const base = options.baseUrl === undefined ? undefined : new URL(options.baseUrl);
  const reaches = (request: Request): boolean => {
    const url = new URL(request.url);
    return base ? underBase(base, url) : server.serves(request.method, url.pathname);
  };
  return [
    http.all(
      ({ request }) => reaches(request),
      async ({ request }) => {
        const response = await server.fetch(request);
        return response.type === 'error' ? HttpResponse.error() : response;
      },
    ),
  ];
}
