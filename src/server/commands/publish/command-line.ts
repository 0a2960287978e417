// The command line of `publish DIR|ARCHIVE --composition FILE` (DESIGN §13, with the admin login):
// its flags, its --help and its parser.
import { BUS_FLAGS, busOptionsFrom } from '../../../shared/cli/bus-flags.ts';
import { openCommand, unexpectedArgument, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { ok, type Parsed } from '../../../shared/base/result.ts';
import { buildProblem } from '../../../shared/contract/fields.ts';
import type { PublishOptions } from '../../options.ts';
import { commandHelpText, type CommandHelp } from '../command-help.ts';
import { ARCHIVES_FLAG, parseArchives } from '../common-flags.ts';

/** The flags `publish` takes besides the bus's. */
const PUBLISH_OWN_FLAGS = [
  {
    name: 'composition',
    type: 'string',
    arg: 'FILE',
    help: 'the composition: {module, build, published?, provisioning, rollout?} (DESIGN §4 without archive)',
  },
  { name: 'build', type: 'string', arg: 'B', help: "the build, in place of the file's" },
  { name: 'dry-run', type: 'bool', help: 'say what would be written (the archive, the composition) and write nothing' },
  ARCHIVES_FLAG,
] as const satisfies FlagTable;

/** What `publish --help` says, and the seat's --help of it. */
export const PUBLISH_HELP: CommandHelp = {
  name: 'publish',
  usage: 'node server.js publish DIR|ARCHIVE --composition FILE [--build B] [--dry-run] [flags]   (with the admin login)',
  about: [
    'publish puts a module (with the admin login): DIR packed as a tar (sorted, fixed times and owners: the same',
    'DIR gives the same digest) or ARCHIVE as it is, gzipped, in the archives store as <module>-<build>.tar.gz,',
    'and the composition with its archive in mesh-catalog_modules — after checking the composition strictly',
    '(unknown fields, rollout) and linting every template against it; a refusal writes nothing.',
  ],
  flags: PUBLISH_OWN_FLAGS,
  bus: true,
};

/** Parses `publish …` (argv after the word `publish`); a reason names the flag or what is missing. */
export function parsePublish(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<PublishOptions | Asked> {
  const opened = openCommand(argv, env, [...BUS_FLAGS, ...PUBLISH_OWN_FLAGS], commandHelpText(PUBLISH_HELP));
  if ('answered' in opened) return opened.answered;
  const {
    values,
    positional: [input, extra],
  } = opened;
  if (input === undefined) return { ok: false, reason: 'publish needs a DIR or an ARCHIVE of the module' };
  if (extra !== undefined) return unexpectedArgument(extra);
  const { composition, build } = values;
  if (composition === undefined) return { ok: false, reason: 'publish needs --composition FILE' };
  const buildBad = build === undefined ? undefined : buildProblem(build);
  if (buildBad !== undefined) return { ok: false, reason: `--build ${buildBad}` };
  const bus = busOptionsFrom(values, 'mesh-provisioner publish');
  if (!bus.ok) return bus;
  const archives = parseArchives(values.archives);
  if (!archives.ok) return archives;
  return ok({
    command: 'publish',
    bus: bus.value,
    input,
    composition,
    ...(build === undefined ? {} : { build }),
    dryRun: values['dry-run'] === true,
    archives: archives.value,
  });
}
