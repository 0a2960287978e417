// Tells systemd a `Type=notify` service is ready, and later that it is stopping (sd_notify, through
// systemd-notify): neither node nor `deno run -A` can send on a unix datagram socket without a native
// module or an unstable API, so a child sends it, which is why the units say NotifyAccess=all.
import { spawn } from 'node:child_process';
import type { Logger } from './log.ts';
import { errorText } from '../base/errors.ts';

/** The program that sends a notification on $NOTIFY_SOCKET and waits until systemd has read it. */
export const NOTIFY_COMMAND = 'systemd-notify';

/** Sends READY=1 now and STOPPING=1 once `stopping` resolves; does nothing when $NOTIFY_SOCKET is unset. Never throws. */
export function notifySystemd(log: Logger, stopping: Promise<void>, env: NodeJS.ProcessEnv = process.env): void {
  if (!env['NOTIFY_SOCKET']) return;
  void sendNotification('READY=1', log, env);
  void stopping.then(() => sendNotification('STOPPING=1', log, env));
}

/** Runs systemd-notify with `assignment`; resolves whether or not it worked, a failure being one warning. */
export function sendNotification(assignment: string, log: Logger, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  return new Promise((resolve) => {
    let settled = false;
    const finish = (problem?: string) => {
      if (settled) return;
      settled = true;
      if (problem !== undefined) log.warn(`could not tell systemd ${assignment} on ${env['NOTIFY_SOCKET']}: ${problem}`);
      resolve();
    };
    let said = '';
    let child;
    try {
      child = spawn(NOTIFY_COMMAND, [assignment], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      return finish(`${NOTIFY_COMMAND}: ${errorText(err)}`);
    }
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (said += d));
    // A spawn that fails (no systemd-notify on PATH) says so by 'error'; 'close' may follow it.
    child.once('error', (err) => finish(`${NOTIFY_COMMAND}: ${err.message}`));
    child.once('close', (code, signal) => {
      if (code === 0) return finish();
      finish(`${NOTIFY_COMMAND} ${signal ? `killed by ${signal}` : `exited ${code}`}${said.trim() ? `: ${said.trim()}` : ''}`);
    });
  });
}
