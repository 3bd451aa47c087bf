/**
 * The routes a contract server uses when none are given: a tiny in-memory resource
 * store, enough to test a client without writing handlers.
 *
 * - `POST /things` creates `{ ...body, id }` at `/things/<id>` → 201 with `Location`.
 * - `PATCH /things/x` merges the body into `/things/x` → 200, or creates it → 201.
 * - `GET /things/x` reads it → 200, or 404.
 */
import type { RouteContext, RouteResult, Routes } from './routes.js';

const isObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

const asFields = (json: unknown): Record<string, unknown> =>
  isObject(json) ? json : json === undefined ? {} : { value: json };

const notFound = (path: string): RouteResult => ({
  status: 404,
  headers: { 'Content-Type': 'application/problem+json' },
  body: { type: 'about:blank', title: 'Not Found', status: 404, detail: `No resource at ${path}.` },
});

/** Create the default routes over a fresh resource store. `clear()` empties it. */
export function createDefaultRoutes(generateId: () => string): { routes: Routes; clear(): void } {
  const resources = new Map<string, Record<string, unknown>>();
  const routes: Routes = {
    'POST /*': ({ json, url }: RouteContext) => {
      const id = generateId();
      const resource = { ...asFields(json), id };
      const location = `${url.pathname.replace(/\/$/, '')}/${encodeURIComponent(id)}`;
      resources.set(location, resource);
      return { status: 201, headers: { Location: location }, body: resource };
    },
    'PATCH /*': ({ json, url }: RouteContext) => {
      const existing = resources.get(url.pathname);
      const id = decodeURIComponent(url.pathname.split('/').filter(Boolean).pop() ?? '');
      const resource = { ...(existing ?? { id }), ...asFields(json) };
      resources.set(url.pathname, resource);
      return { status: existing ? 200 : 201, body: resource };
    },
    'GET /*': ({ url }: RouteContext) => {
      const resource = resources.get(url.pathname);
      return resource ? { status: 200, body: resource } : notFound(url.pathname);
    },
  };
  return { routes, clear: () => resources.clear() };
}
