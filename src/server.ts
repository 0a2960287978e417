// mesh-provisioner, the seat: flags, wiring and signals. Everything else lives in src/server/.
import { connectBus } from './shared/bus.ts';
import { createLogger, underSystemd } from './shared/log.ts';
import { VERSION } from './shared/version.ts';
import { parseServerOptions } from './server/options.ts';
import { runQuery } from './server/query.ts';
import { startSeat } from './server/seat.ts';

async function main(): Promise<number> {
  const parsed = parseServerOptions(process.argv.slice(2), process.env);
  if (!parsed.ok) {
    process.stderr.write(`mesh-provisioner: ${parsed.reason}\n`);
    return 2;
  }
  const opts = parsed.value;
  if (opts.command === 'help') return void process.stdout.write(opts.text + '\n'), 0;
  if (opts.command === 'version') return void process.stdout.write(`mesh-provisioner ${VERSION}\n`), 0;

  if (opts.command === 'query') {
    const nc = await connectBus(opts.bus, true);
    try {
      const { command: _c, bus: _b, ...args } = opts;
      return await runQuery(nc, args, (line) => process.stdout.write(line + '\n'));
    } finally {
      await nc.close();
    }
  }

  const log = createLogger({ prefix: underSystemd(), least: opts.debug ? 'debug' : 'info' });
  log.info(`mesh-provisioner ${VERSION} connecting to ${opts.bus.servers.join(',')}`);
  const nc = await connectBus(opts.bus);
  void (async () => {
    for await (const s of nc.status()) {
      if (s.type === 'disconnect') log.warn(`bus: disconnected from ${'server' in s ? s.server : 'server'}`);
      if (s.type === 'reconnect') log.notice(`bus: reconnected to ${'server' in s ? s.server : 'server'}`);
    }
  })();
  const seat = await startSeat({ nc, log, archives: opts.archives, replicas: opts.replicas });
  log.info('seat ready');

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('draining');
  await seat.stop();
  await nc.drain();
  log.info('stopped');
  return 0;
}

main().then(
  (code) => {
    // Let stdout flush; force the exit only if something still holds the loop open.
    process.exitCode = code;
    setTimeout(() => process.exit(code), 2000).unref();
  },
  (err) => {
    process.stderr.write(`mesh-provisioner: ${(err as Error).message}\n`);
    process.exit(1);
  },
);
