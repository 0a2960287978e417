// How the mesh helpers start and stop a process: tests start it quietly, the demo hands in its own spawn.
import { spawn, type ChildProcess } from 'node:child_process';

/** Starts `command` as the child called `name`; its stderr must be a pipe (the helpers read it on a failure). */
export type Spawn = (name: string, command: string, args: string[]) => ChildProcess;

/** The grace between SIGTERM and SIGKILL when a helper stops a child. */
export const DEFAULT_STOP_GRACE_MS = 5000;

/** The environment without MESH_* variables, so a developer's shell cannot steer a child. */
export function envWithoutMesh(env: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !k.startsWith('MESH_')));
}

/** The tests' spawn: stdout ignored, stderr piped, no MESH_* variables. */
export const spawnQuiet: Spawn = (_name, command, args) => spawn(command, args, { env: envWithoutMesh(), stdio: ['ignore', 'ignore', 'pipe'] });

/** Collects what the child writes to stderr; the returned function gives it so far. */
export function collectStderr(child: ChildProcess): () => string {
  let text = '';
  child.stderr?.on('data', (d: Buffer | string) => (text += String(d)));
  child.once('error', (err) => (text += String(err)));
  return () => text;
}

/** Whether the child has exited (or was never started). */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null || child.pid === undefined;
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves once the child has exited. */
export async function stopProcess(child: ChildProcess, graceMs = DEFAULT_STOP_GRACE_MS): Promise<void> {
  if (hasExited(child)) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
