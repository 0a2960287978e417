// The seat's own command line (DESIGN §10): `node server.js [flags]`, its flags and their parser;
// its --help, which says every command too, is server/help.ts.
import { BUS_FLAGS, busOptionsFrom } from '../../shared/cli/bus-flags.ts';
import { openFlagsOnly, valueSource, type Asked, type FlagTable } from '../../shared/cli/flags.ts';
import { ok, type Parsed } from '../../shared/base/result.ts';
import { ARCHIVES_FLAG, parseArchives, parseReplicas } from '../commands/common-flags.ts';
import { ROLLOUT_FLAG } from '../commands/rollout/command-line.ts';
import { DEFAULT_REPLICAS, type ServeOptions } from '../options.ts';
import { parseRolloutFlag } from './rollout/policy.ts';
import { parseListenAddress } from '../metrics/listen-address.ts';

/** The flags of the seat itself. */
export const SERVE_FLAGS = [
  ...BUS_FLAGS,
  ARCHIVES_FLAG,
  { name: 'replicas', env: 'MESH_REPLICAS', type: 'int', arg: 'N', help: `copies each created bucket keeps, 1–5 (default ${DEFAULT_REPLICAS})` },
  { name: 'debug', env: 'MESH_DEBUG', type: 'bool', help: 'log debug lines' },
  ROLLOUT_FLAG,
  {
    name: 'metrics',
    env: 'MESH_METRICS',
    type: 'string',
    arg: 'HOST:PORT',
    help: "serve the seat's figures for Prometheus at http://HOST:PORT/metrics (default: none)",
  },
] as const satisfies FlagTable;

/** Parses the seat's flags (the whole argv: no command word); `help` is the text --help prints. */
export function parseServe(argv: readonly string[], env: NodeJS.ProcessEnv, help: () => string): Parsed<ServeOptions | Asked> {
  const opened = openFlagsOnly(argv, env, SERVE_FLAGS, help);
  if ('answered' in opened) return opened.answered;
  const { values } = opened;
  const bus = busOptionsFrom(values, 'mesh-provisioner');
  if (!bus.ok) return bus;
  const replicasFrom = valueSource(SERVE_FLAGS, 'replicas', opened.onCommandLine, env);
  const replicas = parseReplicas(values.replicas, replicasFrom);
  if (!replicas.ok) return replicas;
  const archives = parseArchives(values.archives);
  if (!archives.ok) return archives;
  const rollout = values.rollout === undefined ? undefined : parseRolloutFlag(values.rollout);
  if (rollout && !rollout.ok) return { ok: false, reason: `--rollout: ${rollout.reason}` };
  const metricsFrom = valueSource(SERVE_FLAGS, 'metrics', opened.onCommandLine, env);
  const metrics = values.metrics === undefined ? undefined : parseListenAddress(values.metrics);
  if (metrics && !metrics.ok) return { ok: false, reason: `${metricsFrom}: ${metrics.reason}` };
  return ok({
    command: 'serve',
    bus: bus.value,
    archives: archives.value,
    replicas: replicas.value,
    replicasFrom,
    debug: values.debug === true,
    ...(rollout ? { rollout: rollout.value } : {}),
    ...(metrics ? { metrics: { address: metrics.value, from: metricsFrom } } : {}),
  });
}
