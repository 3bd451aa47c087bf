/** Entry of the demo checkout page: one oncely client with IndexedDB keys and Web Locks across tabs. */
import { createClient, openBrowserStore, WebLocksCoordinator } from 'oncely/browser';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { Checkout } from './checkout.tsx';
import { readConfig } from './config.ts';
import { TanstackApp } from './tanstack-checkout.tsx';

const root = createRoot(document.getElementById('root')!);

try {
  const config = readConfig();
  const store = await openBrowserStore();
  const client = createClient({
    baseUrl: config.api,
    scope: config.account,
    store,
    coordinator: new WebLocksCoordinator(),
    headers: { 'X-Account': config.account },
    retry: { maxAttempts: config.maxAttempts, deadline: 30_000, timeout: 5_000, baseDelay: 200, maxDelay: 1_000 },
  });
  Object.assign(window, { oncelyDemo: { client, config } });
  // A checkout that survives a reload while offline is a PWA: its shell comes from a cache.
  if (config.sw) navigator.serviceWorker?.register('/sw.js').catch(console.error);
  root.render(
    <StrictMode>
      {config.ui === 'tanstack' ? (
        <TanstackApp client={client} config={config} />
      ) : (
        <Checkout client={client} config={config} />
      )}
    </StrictMode>,
  );
} catch (error) {
  root.render(
    <main>
      <section className="alert" data-testid="fatal">
        {String(error)}
      </section>
    </main>,
  );
}
