// The client against a real Muster server: the duel example, started by
// the tests on a free port.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, CloseCode } from '../dist/muster.js';
import { freePort, goMissing, startDuel } from './duel.js';
import { next } from './events.js';

// A WebSocket that the tests can watch and cut.
function recorder() {
  const sockets = [];
  class Socket extends WebSocket {
    constructor(url) {
      super(url);
      this.sent = [];
      this.opened = url;
      sockets.push(this);
    }
    send(data) {
      this.sent.push(JSON.parse(data));
      super.send(data);
    }
  }
  return { Socket, sockets };
}

const missing = goMissing();
if (missing && process.env.CI === 'true') throw new Error(missing);

describe('against the duel', { skip: missing || false, timeout: 60000 }, () => {
  let duel;
  const sessions = [];
  before(async () => { duel = await startDuel(); });
  after(async () => {
    for (const s of sessions) {
      s.leave();
      await s.close();
    }
    await duel?.stop();
  });
  let n = 0;
  function player(opts = {}) {
    const name = `js-${process.pid}-${++n}`;
    const s = connect({ url: duel.url, ticket: () => duel.ticket(name), player: name, backoffInitial: 20, ...opts });
    sessions.push(s);
    return s;
  }

  test('welcome: the player the ticket names, on a server with a node id', async () => {
    const s = player();
    const w = await next(s, 'welcome');
    assert.equal(w.player, s.player);
    assert.ok(w.node, 'the welcome names no node');
    assert.equal(s.node, w.node);
    assert.equal(s.connected, true);
    assert.deepEqual(await s.welcomed(), w);
  });

  test('queue: two players land in one room and get its state', async () => {
    const [a, b] = [player(), player()];
    await Promise.all([a.welcomed(), b.welcomed()]);
    const waiting = next(a, 'queue', (q) => q.type === 'queue.waiting');
    const rooms = Promise.all([next(a, 'room'), next(b, 'room')]);
    a.queue('duel');
    b.queue('duel');
    assert.equal((await waiting).playlist, 'duel');
    const [ra, rb] = await rooms;
    assert.equal(ra.room, rb.room);
    assert.equal(ra.kind, 'duel');
    const st = await next(b, 'state', (s) => (s.players ?? []).length === 2);
    assert.deepEqual(st.players.map((p) => p.ID).sort(), [a.player, b.player].sort());
    // An input moves the player in the state both see.
    const x0 = st.players.find((p) => p.ID === a.player).X;
    a.send('input', { dx: x0 < 400 ? 1 : -1, dy: 0 });
    await next(b, 'state', (s) => Math.abs(s.players.find((p) => p.ID === a.player).X - x0) > 20);
    a.leave();
    b.leave();
    assert.equal(a.room, '');
  });

  test('a dropped connection comes back, hello rejoin, into its seat', async () => {
    const rec = recorder();
    const a = player({ WebSocket: rec.Socket });
    const b = player();
    await Promise.all([a.welcomed(), b.welcomed()]);
    const rooms = Promise.all([next(a, 'room'), next(b, 'room')]);
    a.queue('duel');
    b.queue('duel');
    const [room] = await rooms;
    const node = a.node;
    const closed = next(a, 'closed');
    const back = next(a, 'welcome');
    rec.sockets.at(-1).close(); // as a network drop: the session did not ask for it
    assert.equal((await closed).reconnecting, true);
    const w = await back;
    assert.equal(w.room, room.room, 'the welcome after the drop names no seat');
    assert.equal(a.room, room.room);
    const again = rec.sockets.at(-1);
    assert.deepEqual(again.sent[0], { type: 'hello', data: { mode: 'rejoin' } });
    assert.equal(new URL(again.opened).searchParams.get('node'), node, 'the reconnect does not name the server it played on');
    assert.deepEqual(rec.sockets[0].sent[0], { type: 'hello', data: { mode: 'new' } });
    a.leave();
    b.leave();
  });

  test('lobby: create, join by code, start', async () => {
    const [host, friend] = [player(), player()];
    await Promise.all([host.welcomed(), friend.welcomed()]);
    const created = next(host, 'lobby', (l) => l.type === 'lobby.state');
    host.createLobby();
    const { code } = await created;
    assert.match(code, /^[A-Z0-9]+$/);
    const full = (l) => l.type === 'lobby.state' && l.members.length === 2;
    const joined = Promise.all([next(host, 'lobby', full), next(friend, 'lobby', full)]);
    friend.joinLobby(' ' + code.toLowerCase() + ' ');
    const [lh] = await joined;
    assert.equal(lh.host, host.player);
    const rooms = Promise.all([next(host, 'room'), next(friend, 'room')]);
    host.startLobby();
    const [rh, rf] = await rooms;
    assert.equal(rh.room, rf.room);
    host.leave();
    friend.leave();
  });

  test('messages sent before the welcome go after it; inputs do not', async () => {
    const rec = recorder();
    const s = player({ WebSocket: rec.Socket });
    s.send('input', { dx: 1, dy: 0 });
    s.createLobby();
    await next(s, 'lobby', (l) => l.type === 'lobby.state');
    assert.deepEqual(rec.sockets[0].sent.map((m) => m.type), ['hello', 'lobby.create']);
  });

  test('whileReconnecting keeps the inputs sent between connections: the last, or a bounded queue', async () => {
    for (const [mode, want] of [['drop', []], ['last', [3]], ['queue', [2, 3]]]) {
      const rec = recorder();
      const s = player({ WebSocket: rec.Socket, whileReconnecting: mode, inputQueueMax: 2 });
      for (const dx of [1, 2, 3]) s.send('input', { dx, dy: 0 });
      await s.welcomed();
      assert.deepEqual(rec.sockets[0].sent.slice(1).map((m) => m.data.dx), want, `whileReconnecting ${mode}`);
    }
  });

  test('a bad ticket is retried with a fresh one', async () => {
    let calls = 0;
    const name = `js-${process.pid}-bad`;
    const s = player({ ticket: async () => (++calls === 1 ? 'not-a-ticket' : duel.ticket(name)) });
    const closed = await next(s, 'closed');
    assert.equal(closed.code, CloseCode.BadTicket);
    assert.equal(closed.reconnecting, true);
    const w = await next(s, 'welcome');
    assert.equal(w.player, name);
    assert.equal(calls, 2);
  });

  test('a protocol error ends the session: no reconnect', async () => {
    const s = player();
    await s.welcomed();
    const closed = next(s, 'closed');
    s.send('no.such.type');
    const c = await closed;
    assert.equal(c.code, CloseCode.UnknownType);
    assert.equal(c.reconnecting, false);
    await s.done();
    assert.equal(s.connected, false);
  });
});

test('backoff: doubling to the cap, each wait a random half to whole of it', async () => {
  // A port nobody listens on: every attempt fails.
  const port = await freePort();
  let tickets = 0;
  const s = connect({ url: `ws://127.0.0.1:${port}/play`, ticket: async () => `t${++tickets}`, backoffInitial: 4, backoffMax: 32 });
  const delays = [];
  let gaveUp = 0;
  try {
    await new Promise((resolve) => {
      s.on('closed', (c) => {
        if (!c.reconnecting) gaveUp++;
        delays.push(c.delay);
        if (delays.length === 6) resolve();
      });
    });
  } finally {
    await s.close(); // a session left open would keep the runner waiting
  }
  assert.equal(gaveUp, 0, 'the session stopped reconnecting');
  const caps = [4, 8, 16, 32, 32, 32];
  delays.forEach((d, i) => assert.ok(d >= caps[i] / 2 && d <= caps[i], `wait ${i} is ${d}, want ${caps[i] / 2}–${caps[i]}`));
  assert.ok(tickets >= 6, 'each attempt takes a fresh ticket');
});

test('a failing ticket function is retried with backoff', async () => {
  let calls = 0;
  const s = connect({ url: 'ws://127.0.0.1:9/play', ticket: async () => { calls++; throw new Error('sign-in down'); }, backoffInitial: 2, backoffMax: 4 });
  try {
    const c = await next(s, 'closed');
    assert.match(c.reason, /sign-in down/);
    assert.equal(c.reconnecting, true);
  } finally {
    await s.close();
  }
  assert.ok(calls >= 1);
});

test('whileReconnecting and inputQueueMax: a value that cannot work is refused', () => {
  const opts = { url: 'ws://127.0.0.1:1/play', ticket: async () => 't', WebSocket: class {} };
  assert.throws(() => connect({ ...opts, whileReconnecting: 'keep' }), /whileReconnecting is "drop", "last" or "queue", not "keep"/);
  assert.throws(() => connect({ ...opts, whileReconnecting: 'queue', inputQueueMax: 0 }), /inputQueueMax is a positive integer, not 0/);
});

test('url: anything but ws:, wss:, http: and https: is refused', () => {
  assert.throws(() => connect({ url: 'ftp://x/play', ticket: async () => '' }), /not ws:/);
});
