// The verb's reads (DESIGN §6) from a cursor: the keys under a filter from the connection's key
// index (key-index.ts), then only a page's values, fetched ahead as far as the page has room
// (value-fetch.ts). Any failure on the bus comes out as a BucketReadError.
import type { NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_INBOX_PREFIX } from '../../shared/bus/inbox.ts';
import { BucketReadError } from './direct-get.ts';
import { firstAfter, KeyIndex, type KeyIndexHooks } from './key-index.ts';
import { fetchValues, type FetchOptions, type Stored } from './value-fetch.ts';
import { errorText } from '../../shared/base/errors.ts';

/** How a reader reads, and what it is told of its work: the hooks are injected so tests count and age without sleeping. */
export type ReaderOptions = KeyIndexHooks & {
  /** The inbox prefix the connection was made with (default `_INBOX`): its user may subscribe only under it. */
  inboxPrefix?: string;
  /** Called once per value asked of the server. */
  onFetch?: FetchOptions['onFetch'];
};

const readers = new WeakMap<NatsConnection, VerbReader>();

/**
 * The reader of a connection made with `inboxPrefix` (default `_INBOX`), made on first use, so that
 * its key lists outlive one request.
 */
export function readerOf(nc: NatsConnection, inboxPrefix?: string): VerbReader {
  let reader = readers.get(nc);
  if (!reader) readers.set(nc, (reader = new VerbReader(nc, { inboxPrefix })));
  return reader;
}

/** The verb's reads on one connection. */
export class VerbReader {
  readonly #index: KeyIndex;
  readonly #inboxPrefix: string;

  constructor(
    private readonly nc: NatsConnection,
    private readonly options: ReaderOptions = {},
  ) {
    this.#index = new KeyIndex(nc, options);
    this.#inboxPrefix = options.inboxPrefix ?? DEFAULT_INBOX_PREFIX;
  }

  /**
   * The stored entries under `filter` past `after`, in key order, a run at a time. `room()` says
   * how many more the caller might take: values are fetched that far ahead and no further. A bus
   * failure is thrown as a BucketReadError.
   */
  async *entries(bucket: string, filter: string, after: string | undefined, maxPayload: number, room: () => number): AsyncGenerator<Stored[]> {
    try {
      const keys = await this.#index.keys(bucket, filter);
      yield* fetchValues(this.nc, bucket, keys, firstAfter(keys, after), { inboxPrefix: this.#inboxPrefix, maxPayload, room, onFetch: this.options.onFetch });
    } catch (err) {
      throw err instanceof BucketReadError ? err : new BucketReadError(errorText(err), { cause: err });
    }
  }
}
