/** The server's ledger (`GET /ledger`), polled: what was really charged. */
import { useEffect, useState } from 'react';

interface Charge {
  id: string;
  key: string;
  amount: number;
  currency: string;
  created_at: number;
}

export function Ledger({ api, refreshOn }: { api: string; refreshOn: unknown }) {
  const [charges, setCharges] = useState<Charge[] | undefined>();
  const [failed, setFailed] = useState<string | undefined>();

  useEffect(() => {
    let active = true;
    const load = async () => {
      try {
        const res = await fetch(`${api}/ledger`, { cache: 'no-store' });
        const body = (await res.json()) as { charges: Charge[] };
        if (active) {
          setCharges(body.charges);
          setFailed(undefined);
        }
      } catch (error) {
        if (active) setFailed(String(error));
      }
    };
    void load();
    const timer = setInterval(load, 1000);
    return () => {
      active = false;
      clearInterval(timer);
    };
  }, [api, refreshOn]);

  return (
    <section>
      <h2>
        Ledger (server): <span data-testid="ledger-count">{charges === undefined ? '…' : charges.length}</span>{' '}
        {charges?.length === 1 ? 'charge' : 'charges'}
      </h2>
      {failed && <p className="alert">Could not read the ledger: {failed}</p>}
      <table data-testid="ledger">
        <thead>
          <tr>
            <th>Charge</th>
            <th>Amount</th>
            <th>Idempotency key</th>
          </tr>
        </thead>
        <tbody>
          {charges?.map((charge) => (
            <tr key={charge.id} data-testid="ledger-row">
              <td className="mono">{charge.id}</td>
              <td>
                {charge.amount} {charge.currency}
              </td>
              <td className="mono">{charge.key}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
