/** What the page reads from its URL: `?api=http://127.0.0.1:4010&cart=cart_1&account=acct_demo&maxAttempts=8&ui=tanstack&sw=1`. */
export interface PageConfig {
  /** The payments API origin (another origin than the page's: CORS is for real). */
  api: string;
  cartId: string;
  account: string;
  maxAttempts: number;
  /** `?ui=tanstack`: the TanStack Query page instead of `useIdempotentMutation`. */
  ui: 'hook' | 'tanstack';
  /** `?sw=1`: register the service worker that keeps the page loadable offline (e2e/app/sw.ts). */
  sw: boolean;
}

declare global {
  interface Window {
    /** Set by a server that injects the API URL instead of passing `?api=`. */
    __ONCELY_API__?: string;
  }
}

export function readConfig(location: Location = window.location): PageConfig {
  const params = new URLSearchParams(location.search);
  const api = params.get('api') ?? window.__ONCELY_API__;
  if (!api) throw new Error('Open this page with ?api=<payments API URL>, e.g. ?api=http://127.0.0.1:4010');
  const maxAttempts = Number(params.get('maxAttempts') ?? '8');
  return {
    api: api.replace(/\/+$/, ''),
    cartId: params.get('cart') ?? 'cart_1',
    account: params.get('account') ?? 'acct_demo',
    maxAttempts: Number.isInteger(maxAttempts) && maxAttempts > 0 ? maxAttempts : 8,
    ui: params.get('ui') === 'tanstack' ? 'tanstack' : 'hook',
    sw: params.get('sw') === '1',
  };
}
