// --dry-run's sinks (issue 14): the client's own stages (client/node.ts) hand their work to a
// capture in place of the engine's socket and the bus, so every module is rendered as it would be
// handed while nothing reaches the engine or is written to the bus (no needs, report, item,
// `prov.changed` or ask answered). Values are read as the client reads them.
import type { FillFile } from '../../../shared/contract/fill-protocol.ts';
import type { FilledItem } from '../../fill/fill.ts';
import type { EngineClient } from '../../handoff/fill-socket.ts';
import type { ClientSinks } from '../../sinks.ts';
import type { ReportBook } from '../once/book.ts';

/** What one module's runs rendered: every file handed, by path, and its items. */
export type Rendered = { files: Map<string, FillFile>; items: FilledItem[] };

/** What a dry run's modules rendered, taken by the sinks it hands the client; reports go to the book. */
export class DryRunCapture {
  readonly #byModule = new Map<string, Rendered>();

  constructor(private readonly book: ReportBook) {}

  /** What the module's runs rendered so far. */
  rendered(module: string): Rendered {
    return this.#byModule.get(module) ?? this.#byModule.set(module, { files: new Map(), items: [] }).get(module)!;
  }

  /** The sinks: an engine that takes every file, reports to the book, items kept here, no needs and no asks. */
  sinks(): ClientSinks {
    return {
      engine: this.#engine(),
      reporter: {
        needs: async () => {},
        report: async (module, body) => this.book.record(module, body),
        removed: async (module) => void this.#byModule.delete(module),
        known: () => {},
        close: () => {},
      },
      leftBehind: () => Promise.resolve(undefined),
      items: {
        record: async (module, filled) => void (this.rendered(module).items = [...filled]),
        removed: async () => {},
        deleteLeft: () => {},
      },
    };
  }

  /** An engine that takes every file and confirms it written; it never opens a socket. */
  #engine(): EngineClient {
    return {
      fill: async (req) => {
        const files = this.rendered(req.module).files;
        for (const f of req.files) files.set(f.path, f);
        return { id: 0, ok: true, files: req.files.map((f) => ({ path: f.path, action: 'written' as const })) };
      },
      onKnock: () => {},
      close: () => {},
    };
  }
}
