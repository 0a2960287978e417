// The command lines of `assign NODE MODULE [placement flags]` and `unassign NODE MODULE` (DESIGN
// §13): their flags, their --help and their parsers, every word checked against its grammar (names
// §2, placement) before the bus is reached; a reason names the flag or the word.
import { describeFlags, openCommand, unexpectedArgument, type Asked, type FlagTable } from '../../../shared/cli/flags.ts';
import { ok, fail, type Parsed } from '../../../shared/base/result.ts';
import type { AssignOptions, UnassignOptions } from '../../options.ts';
import { INPUT_FLAGS, INPUT_NOTE, inputBase } from '../input-flags.ts';
import { assignmentSizeProblem, placementFromFlags, targetProblem } from './command.ts';

/** The placement flags of `assign`: each a namespace of `${<kind>:<name>}`, repeated once a name. */
export const ASSIGN_OWN_FLAGS = [
  { name: 'dir', type: 'repeat', arg: 'NAME=PATH', help: '${dir:NAME}: an absolute path (repeat, once a name)' },
  { name: 'port', type: 'repeat', arg: 'NAME=N', help: '${port:NAME}: a port number, 1–65535 (repeat)' },
  { name: 'access', type: 'repeat', arg: 'NAME=VALUE', help: '${access:NAME}: text without control characters (repeat)' },
  { name: 'seat', type: 'repeat', arg: 'NAME=VALUE', help: '${seat:NAME} (repeat)' },
  { name: 'machine', type: 'repeat', arg: 'NAME=VALUE', help: '${machine:NAME} (repeat)' },
] as const satisfies FlagTable;

/** The text of `assign --help` and `unassign --help`. */
export function assignHelp(): string {
  return [
    'usage: node server.js assign NODE MODULE [--dir NAME=PATH …] [--port NAME=N …] [--access|--seat|--machine NAME=VALUE …] [flags]',
    '       node server.js unassign NODE MODULE [flags]',
    '',
    'assign writes mesh-controller_assignments key NODE.MODULE: {node, module, placement}, the placement whole as given',
    '(an assignment already there is replaced; the same bytes are not written again). unassign deletes it, and the seat',
    'retires its plan; a module not assigned there exits 1.',
    ...INPUT_NOTE,
    '',
    'assign flags:',
    describeFlags(ASSIGN_OWN_FLAGS),
    '',
    'flags:',
    describeFlags(INPUT_FLAGS),
  ].join('\n');
}

/** Parses `assign NODE MODULE [placement flags]`. */
export function parseAssign(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<AssignOptions | Asked> {
  const opened = openCommand(argv, env, [...INPUT_FLAGS, ...ASSIGN_OWN_FLAGS], assignHelp);
  if ('answered' in opened) return opened.answered;
  const { values, positional } = opened;
  const base = inputBase(values, 'assign');
  if (!base.ok) return base;
  const target = nodeAndModule('assign', positional);
  if (!target.ok) return target;
  const placement = placementFromFlags(values);
  if (!placement.ok) return placement;
  const assignment = { ...target.value, placement: placement.value };
  const tooBig = assignmentSizeProblem(assignment);
  return tooBig === undefined ? ok({ command: 'assign', assignment, ...base.value }) : fail(`assign: ${tooBig}`);
}

/** Parses `unassign NODE MODULE`. */
export function parseUnassign(argv: readonly string[], env: NodeJS.ProcessEnv): Parsed<UnassignOptions | Asked> {
  const opened = openCommand(argv, env, INPUT_FLAGS, assignHelp);
  if ('answered' in opened) return opened.answered;
  const base = inputBase(opened.values, 'unassign');
  if (!base.ok) return base;
  const target = nodeAndModule('unassign', opened.positional);
  return target.ok ? ok({ command: 'unassign', ...target.value, ...base.value }) : target;
}

function nodeAndModule(command: string, words: readonly string[]): Parsed<{ node: string; module: string }> {
  const [node, module, extra] = words;
  if (node === undefined || module === undefined) return fail(`${command} needs NODE and MODULE (see ${command} --help)`);
  if (extra !== undefined) return unexpectedArgument(extra);
  const problem = targetProblem(node, module);
  return problem === undefined ? ok({ node, module }) : fail(`${command}: ${problem}`);
}
