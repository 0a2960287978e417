// node-provisioner, the client of one node: flags, wiring and signals. Everything else lives in src/client/.
// First, so the heap is set before the rest of the bundle allocates (client/v8-flags.ts says why).
import './client/v8-flags.ts';
import { drainBus } from './shared/bus/bus.ts';
import { connectWhenReachable } from './shared/bus/first-connect.ts';
import { printLine, runMain, untilSignalled } from './shared/cli/entry.ts';
import { createLogger, underSystemd } from './shared/cli/log.ts';
import { notifySystemd } from './shared/cli/notify.ts';
import { VERSION } from './shared/cli/version.ts';
import { runDryRun } from './client/commands/dry-run/command.ts';
import { createEngineClient } from './client/handoff/fill-socket.ts';
import { runLint } from './client/commands/lint/command.ts';
import { startNodeClient } from './client/node.ts';
import { runOnce } from './client/commands/once/command.ts';
import { parseClientOptions } from './client/command-line.ts';
import { NodeLoginRefusedError } from './client/login-check.ts';
import { nodeClientUser, whichLogin } from './shared/bus/login.ts';
import { startAlive } from './client/alive/alive.ts';
import { EngineWatch } from './client/alive/engine-state.ts';

// Every line a command prints may quote bus or archive text: printed as safe text (DESIGN §3).
const out = (line: string) => printLine(process.stdout, line);
const err = (line: string) => printLine(process.stderr, `node-provisioner: ${line}`);

async function main(): Promise<number> {
  const parsed = parseClientOptions(process.argv.slice(2), process.env);
  if (!parsed.ok) return (err(parsed.reason), 2);
  const opts = parsed.value;
  if (opts.command === 'help') return (void process.stdout.write(opts.text + '\n'), 0);
  if (opts.command === 'version') return (void process.stdout.write(`node-provisioner ${VERSION}\n`), 0);
  if (opts.command === 'lint') return runLint(opts, out, err);

  const log = createLogger({ prefix: underSystemd(), least: opts.debug ? 'debug' : 'info' });
  const signalled = untilSignalled();
  if (opts.dryRun !== undefined) {
    log.info(`node-provisioner ${VERSION} for node ${opts.node}, bus ${opts.bus.servers.join(',')}: dry run into ${opts.dryRun}`);
    return runDryRun({ ...opts, dir: opts.dryRun, log, signalled, out, err });
  }
  if (opts.once) {
    log.info(`node-provisioner ${VERSION} for node ${opts.node}, bus ${opts.bus.servers.join(',')}, engine ${opts.socket}: once`);
    return runOnce({ ...opts, log, signalled, out, err });
  }
  log.info(`node-provisioner ${VERSION} for node ${opts.node}, bus ${opts.bus.servers.join(',')}, engine ${opts.socket}`);
  const login = whichLogin(opts.bus, nodeClientUser(opts.node));
  const nc = await connectWhenReachable({ bus: opts.bus, log, signalled, login });
  if (!nc) return 0;
  const engine = createEngineClient({ socketPath: opts.socket, log, timeoutMs: opts.engineTimeoutMs });
  // From the start: the start's fills already say how the engine is.
  const engineWatch = new EngineWatch(engine, Date.now);
  const client = await Promise.race([
    startNodeClient({
      nc,
      node: opts.node,
      engine,
      log,
      inboxPrefix: opts.bus.inboxPrefix ?? '_INBOX',
      cacheDir: opts.cache,
      settleMs: opts.settleMs,
      login,
      ...(opts.archiveDir ? { archiveDir: opts.archiveDir } : {}),
    }).catch((e: unknown) => {
      // A configuration error an operator must see at once (journalctl -p err), not a wait; see docs/decisions.md.
      if (!(e instanceof NodeLoginRefusedError)) throw e;
      log.error(e.message);
      return 'refused' as const;
    }),
    signalled.then(() => undefined),
  ]);
  if (client === 'refused') {
    engine.close();
    await nc.close();
    return 1;
  }
  if (client) {
    log.info('client ready');
    // Once its plans are read, so that the first message counts them (DESIGN §14).
    const alive = startAlive({
      nc,
      node: opts.node,
      version: VERSION,
      everyMs: opts.aliveMs,
      engine: engineWatch,
      modules: () => client.modules().length,
      log,
    });
    notifySystemd(log, signalled);
    await signalled;
    log.info('draining');
    alive.stop();
    await client.stop();
  }
  engine.close();
  await drainBus(nc, log);
  log.info('stopped');
  return 0;
}

runMain('node-provisioner', main);
