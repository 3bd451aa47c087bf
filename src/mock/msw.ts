/**
 * The MSW 3 adapter: mount a contract server as MSW request handlers. The only module of
 * oncely that imports `msw` (an optional peer dependency).
 */
import { type HttpHandler, HttpResponse, http } from 'msw';
import type { ContractServer } from './contract-server.js';

export interface MswHandlersOptions {
  /**
   * Only requests under this URL reach the server (same origin, path prefix). Route
   * paths match the whole URL path, prefix included.
   * @default undefined (every request)
   * @example { baseUrl: 'https://api.test' }
   */
  baseUrl?: string;
}

const underBase = (base: URL | undefined, url: string): boolean => {
  if (!base) return true;
  const target = new URL(url);
  const prefix = base.pathname.replace(/\/$/, '');
  return (
    target.origin === base.origin &&
    (target.pathname === prefix || target.pathname.startsWith(`${prefix}/`) || prefix === '')
  );
};

/**
 * MSW handlers answering from `server`. A dropped or hung-then-released request becomes
 * `HttpResponse.error()`: the client's `fetch` rejects with a network error.
 *
 * @example
 * import { setupServer } from 'msw/node';
 * const contract = createContractServer();
 * const msw = setupServer(...mswHandlers(contract, { baseUrl: 'https://api.test' }));
 * msw.listen({ onUnhandledFrame: 'error' });
 */
export function mswHandlers(server: ContractServer, options: MswHandlersOptions = {}): HttpHandler[] {
  const base = options.baseUrl === undefined ? undefined : new URL(options.baseUrl);
  return [
    http.all(
      ({ request }) => underBase(base, request.url),
      async ({ request }) => {
        const response = await server.fetch(request);
        return response.type === 'error' ? HttpResponse.error() : response;
      },
    ),
  ];
}
