// The isolation matrix's rows of the subject a provider's helpers say they serve on (issue 31 item 19,
// src/sdk/sole-provider.ts): `mesh-provider.<provider>.>` is its own user's alone. An answer there
// makes a provider starting stop, so nobody else may answer: not a node's client, not the seat, and
// not another provider's login.
import { jsonBytes } from '../../src/shared/base/bytes.ts';
import { providerServesSubject } from '../../src/shared/contract/subjects.ts';
import { USERS } from '../../src/server/commands/bus-config/users.ts';
import { client, PROVIDER, received, type Row } from './isolation-actions.ts';

const subject = providerServesSubject(PROVIDER, 'database');
const provider = USERS.provider(PROVIDER);
/** What a helper starting asks there. */
const ask = jsonBytes({ id: 'probe', host: 'probe', pid: 1, since: '2026-12-06T00:00:00.000Z', held: false });

/** A row: `listener` subscribes `on`, `asker` asks there; allowed when the listener hears the ask. */
function hears(listener: string, action: string, expected: 'allowed' | 'refused', on: string, asker = provider): Row {
  return {
    actor: listener,
    action,
    expected,
    async run(c) {
      const count = await received(c.as(listener), on, async () => {
        c.as(asker).publish(on, ask);
        await c.as(asker).flush();
      });
      return count > 0 ? { verdict: 'allowed', how: `heard the ask of ${asker}` } : { verdict: 'refused', how: `heard nothing of ${asker}'s ask` };
    },
  };
}

/** Every row of the provider's subject, in the order the matrix prints them. */
export const PROVIDER_ROWS: readonly Row[] = [
  hears(provider, `answer on \`${subject}\` (its helpers say there that one serves) and hear a second helper ask`, 'allowed', subject),
  hears(client, `answer on \`${subject}\` (so that ${PROVIDER}, starting, would stop)`, 'refused', subject),
  hears(USERS.seat, `answer on \`${subject}\``, 'refused', subject),
  hears(
    provider,
    `answer on \`${providerServesSubject('other', 'database')}\` (another provider's)`,
    'refused',
    providerServesSubject('other', 'database'),
    'admin',
  ),
];
