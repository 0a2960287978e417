// The reference node-engine (DESIGN §9): flags, signals, and nothing else; the engine itself is src/engine/.
import { printLine } from './shared/cli/entry.ts';
import { createLogger, underSystemd } from './shared/cli/log.ts';
import { parseEngineOptions, type EngineOptions } from './engine/options.ts';
import { startEngine } from './engine/start.ts';
import { VERSION } from './shared/cli/version.ts';
import { errorText } from './shared/base/errors.ts';

const command = parseEngineOptions(process.argv.slice(2), process.env);
if (!command.ok) {
  printLine(process.stderr, `engine: ${command.reason}`);
  process.exit(2);
}
if (command.value.command === 'help') {
  process.stdout.write(command.value.text + '\n');
  process.exit(0);
}
if (command.value.command === 'version') {
  process.stdout.write(`mesh-provisioner engine ${VERSION}\n`);
  process.exit(0);
}

const log = createLogger({ prefix: underSystemd() });
// Not top-level await: the bundle is a script, so that Node 20.0 runs it without module detection (build.mjs).
void serve(command.value.options);

/** Starts the engine and stops it on SIGTERM or SIGINT; a failed start is one line and exit 1. */
async function serve(options: EngineOptions): Promise<void> {
  try {
    const engine = await startEngine({ ...options, log });
    let stopping = false;
    const stop = (signal: string) => {
      if (stopping) return;
      stopping = true;
      log.info(`${signal}: stopping`);
      engine.close().then(
        () => process.exit(0),
        (err: Error) => {
          log.error(`stopping failed: ${err.message}`);
          process.exit(1);
        },
      );
    };
    process.on('SIGTERM', () => stop('SIGTERM'));
    process.on('SIGINT', () => stop('SIGINT'));
  } catch (err) {
    log.error(`engine cannot start: ${errorText(err)}`);
    process.exit(1);
  }
}
