// Whether the hub's JetStream is in reach (DESIGN §14, issue 33): at a leaf site the client's own
// connection to its site's server stays up through a WAN cut, while every read and write of the
// mesh's buckets finds nothing behind it. One `$JS.API.INFO` (a grant every node has) a period tells.
import type { NatsConnection } from '@nats-io/transport-node';
import { errorText, isNoResponders, isTimeout } from '../../shared/base/errors.ts';
import type { Logger } from '../../shared/cli/log.ts';

/** The JetStream request a node is granted that asks the least of the hub: its account's info. */
export const HUB_PROBE_SUBJECT = '$JS.API.INFO';

/** What one probe found: the hub answered, it is out of reach (why), or the bus itself is down (said elsewhere). */
export type HubReach = { reached: true } | { reached: false; why: string } | { reached: undefined };

/**
 * Asks the hub's JetStream once, within `timeoutMs`. No responders while connected is a cut for sure
 * (the site's server knows no way there); a timeout is one only when the connection itself still
 * answers (a round trip to the site's server), else it is the bus that is down, which is not judged here.
 */
export async function probeHub(nc: NatsConnection, timeoutMs: number): Promise<HubReach> {
  try {
    await nc.request(HUB_PROBE_SUBJECT, '', { timeout: timeoutMs });
    return { reached: true };
  } catch (err) {
    if (isNoResponders(err)) return { reached: false, why: `${HUB_PROBE_SUBJECT} found no responders behind ${nc.getServer()}` };
    if (!isTimeout(err) || nc.isClosed()) return { reached: undefined };
    const connected = await Promise.race([
      nc.rtt().then(
        () => true,
        () => false,
      ),
      new Promise<false>((r) => setTimeout(() => r(false), timeoutMs).unref()),
    ]);
    if (!connected) return { reached: undefined };
    return { reached: false, why: `${HUB_PROBE_SUBJECT} went unanswered for ${timeoutMs} ms while ${nc.getServer()} answers (${errorText(err)})` };
  }
}

/** Says a cut once at warning when it begins and once at info when it ends. */
export class HubWatch {
  #cut = false;

  constructor(private readonly log: Pick<Logger, 'warn' | 'info'>) {}

  /** Takes one probe's finding. */
  found(reach: HubReach): void {
    if (reach.reached === false && !this.#cut) {
      this.#cut = true;
      this.log.warn(`cannot reach the hub: ${reach.why}; the mesh's buckets cannot be read or written from here until it answers`);
    } else if (reach.reached === true && this.#cut) {
      this.#cut = false;
      this.log.info('the hub is in reach again: its JetStream answers');
    }
  }

  /** Whether a cut is being said. */
  get cut(): boolean {
    return this.#cut;
  }
}
