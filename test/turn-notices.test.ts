// The client's prov.changed notices (src/client/asks.ts TurnNotices): those of one turn of the event
// loop said together once it has run, each (module, kind, key) once, so a cold start's thousands of
// values read one get at a time go to the bus in a few writes, not one a value.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { publishChanged, TurnNotices, type Changed } from '../src/client/asks.ts';

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('the notices of one turn are said once it has run, in one call, each module, kind and key once', async () => {
  const said: Changed[][] = [];
  const notices = new TurnNotices((n) => said.push(n));
  notices.add([{ module: 'a', kind: 'config', key: 'k1' }]);
  notices.add([
    { module: 'a', kind: 'config', key: 'k2' },
    { module: 'a', kind: 'config', key: 'k1' },
  ]);
  notices.add([
    { module: 'a', kind: 'config' },
    { module: 'b', kind: 'config', key: 'k1' },
  ]);
  notices.add([]);
  assert.equal(said, [], 'nothing said within the turn: the fills it started go first');
  await turn();
  assert.equal(said, [
    [
      { module: 'a', kind: 'config', key: 'k1' },
      { module: 'a', kind: 'config', key: 'k2' },
      { module: 'a', kind: 'config' },
      { module: 'b', kind: 'config', key: 'k1' },
    ],
  ]);
  notices.add([{ module: 'a', kind: 'config', key: 'k1' }]);
  await turn();
  assert.equal(said.length, 2, 'a later turn says its own, the same notice again');
  assert.equal(said[1], [{ module: 'a', kind: 'config', key: 'k1' }]);
});

test('a turn with no notice says nothing', async () => {
  const said: Changed[][] = [];
  const notices = new TurnNotices((n) => said.push(n));
  notices.add([]);
  await turn();
  await turn();
  assert.equal(said, []);
});

test('notices said on a connection draining or closed are dropped, not thrown from the deferred flush', () => {
  const published: string[] = [];
  const nc = (state: 'open' | 'draining' | 'closed') => ({
    isClosed: () => state === 'closed',
    isDraining: () => state === 'draining',
    publish: (subject: string) => {
      if (state !== 'open') throw new Error('DrainingConnectionError');
      published.push(subject);
    },
  });
  const notice = [{ module: 'web', kind: 'config', key: 'k' }];
  publishChanged(nc('draining'), 'n1', notice);
  publishChanged(nc('closed'), 'n1', notice);
  assert.equal(published, []);
  publishChanged(nc('open'), 'n1', notice);
  assert.equal(published, ['prov.changed.n1.web']);
});

test.run();
