// What the client does on what a fleet says: redirects, refusals, rate
// limits. A scripted server plays the fleet.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect, CloseCode } from '../dist/muster.js';
import { next } from './events.js';
import { fakeServer } from './fake.js';

// until resolves once cond() holds, looking every 10 ms, and fails the
// test when it has not within 5 s.
async function until(what, cond) {
  for (let i = 0; i < 500 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond(), what);
}

// sendAway redirects connection c to node for reason, as a server does:
// the redirect, then a normal close.
function sendAway(c, node, reason, extra = {}) {
  c.conn.send({ type: 'redirect', node, param: 'node', reason, ...extra });
  c.conn.close(1000, 'redirect');
}

const lobbyState = (c) => c.conn.send({ type: 'lobby.state', code: 'K7QXM', host: 'ann', members: ['ann'], playing: false, node: c.node });

// A fleet in one process: the server a request names with ?node= answers
// it, duel-1 where none is named or the named one is dead (as the relay
// serves a request it cannot pass on). script(c) runs once connection c
// ({node, ticket, query, hello, n, conn}) said hello; create(c) answers a
// lobby.create, with a lobby.state unless told otherwise.
async function fleet(script, dead = [], create = lobbyState) {
  const conns = [];
  const srv = await fakeServer((conn, url) => {
    const asked = url.searchParams.get('node');
    const node = asked && !dead.includes(asked) ? asked : 'duel-1';
    const c = { node, ticket: url.searchParams.get('ticket'), query: url.search, n: conns.length, conn };
    conns.push(c);
    conn.onmessage = (m) => {
      if (m.type === 'hello') {
        c.hello = m.data.mode;
        conn.send({ type: 'welcome', node: c.node, player: 'ann' });
        script(c);
      } else {
        (c.got ??= []).push(m);
        if (m.type === 'lobby.create') create(c);
      }
    };
  });
  return { ...srv, conns };
}

test('a redirect: at once, with its ticket and query, hello rejoin, and the node kept after', async () => {
  let tickets = 0;
  const f = await fleet((c) => {
    if (c.n === 0) sendAway(c, 'duel-2', 'queue', { ticket: 'from-redirect', query: 'node=duel-2&ticket=from-redirect' });
    if (c.n === 2) c.conn.send({ type: 'queue.waiting', playlist: 'duel', waited_ms: 4200, node: 'duel-2' });
  });
  const s = connect({ url: f.url, ticket: async () => `fresh-${++tickets}` });
  const redirect = await next(s, 'redirect');
  assert.equal(redirect.reason, 'queue');
  await next(s, 'welcome', (w) => w.node === 'duel-2');
  assert.equal(f.conns[1].ticket, 'from-redirect', 'the reconnect did not use the redirect\'s ticket');
  assert.deepEqual(new URL('http://x' + f.conns[1].query).searchParams.getAll('ticket'), ['from-redirect'], 'the reconnect did not carry the ticket once');
  assert.equal(f.conns[1].hello, 'rejoin');
  assert.equal(tickets, 1);
  assert.equal(s.redirects, 1);
  // A drop later goes back to duel-2, with a fresh ticket.
  const waiting = next(s, 'queue');
  f.conns[1].conn.close(1001, 'going away');
  assert.equal((await waiting).waited_ms, 4200);
  assert.equal(f.conns[2].node, 'duel-2');
  assert.equal(f.conns[2].ticket, 'fresh-2');
  await s.close();
  await f.close();
});

test('a redirect without ticket or query: a fresh ticket, the target named by param', async () => {
  const f = await fleet((c) => {
    if (c.n === 0) sendAway(c, 'duel-2', 'lobby');
  });
  let tickets = 0;
  const s = connect({ url: f.url, ticket: async () => `t${++tickets}` });
  await next(s, 'welcome', (w) => w.node === 'duel-2');
  assert.equal(f.conns[1].ticket, 't2');
  assert.equal(new URL('http://x' + f.conns[1].query).searchParams.get('node'), 'duel-2');
  await s.close();
  await f.close();
});

test('messages sent during a redirect go to the new server', async () => {
  const f = await fleet((c) => {
    if (c.n === 0) sendAway(c, 'duel-2', 'drain');
  });
  const s = connect({ url: f.url, ticket: async () => 't' });
  await next(s, 'redirect');
  s.send('input', { dx: 1, dy: 0 });
  s.createLobby();
  const lobby = await next(s, 'lobby');
  assert.equal(lobby.node, 'duel-2');
  await s.close();
  assert.deepEqual((f.conns[1].got ?? []).map((m) => m.type), ['lobby.create']);
  await f.close();
});

test('a queue a drain redirect crossed is sent again on the next server; one answered is not', async () => {
  const f = await fleet(() => {});
  const s = connect({ url: f.url, ticket: async () => 't' });
  try {
    await next(s, 'welcome');
    s.queue('duel', 1500);
    s.send('lobby.leave'); // not a request sent again
    await until('duel-1 got the queue', () => (f.conns[0].got ?? []).length === 2);
    // The draining server sends the player away without answering.
    sendAway(f.conns[0], 'duel-2', 'drain');
    await until('duel-2 got the queue again', () => (f.conns[1]?.got ?? []).length > 0);
    assert.deepEqual(f.conns[1].got, [{ type: 'queue', data: { playlist: 'duel', rating: 1500 } }]);

    // Answered before the next drain redirect: not sent again.
    f.conns[1].conn.send({ type: 'queue.waiting', playlist: 'duel', waited_ms: 0, node: 'duel-2' });
    await next(s, 'queue');
    sendAway(f.conns[1], 'duel-3', 'drain');
    await next(s, 'welcome', (w) => w.node === 'duel-3');
    s.send('ping');
    await until('duel-3 got the ping', () => (f.conns[2].got ?? []).length > 0);
    assert.deepEqual(f.conns[2].got.map((m) => m.type), ['ping']);
  } finally {
    await s.close();
    await f.close();
  }
});

test('a lobby.create a drain redirect crossed is sent again; "already in a lobby" for it is not news', async () => {
  // duel-1 drains and answers nothing; duel-2 gets the creation along
  // (lobby.state after the welcome) and tells the one sent again that the
  // player is in a lobby.
  const f = await fleet((c) => {
    if (c.n === 1) lobbyState(c);
  }, [], (c) => {
    if (c.n === 1) c.conn.send({ type: 'lobby.error', error: 'lobby: already in a lobby' });
  });
  const s = connect({ url: f.url, ticket: async () => 't' });
  try {
    const lobby = [];
    s.on('lobby', (p) => lobby.push(p.type));
    await next(s, 'welcome');
    s.createLobby();
    await until('duel-1 got the creation', () => (f.conns[0].got ?? []).length === 1);
    sendAway(f.conns[0], 'duel-2', 'drain');
    await until('duel-2 got the creation again', () => (f.conns[1]?.got ?? []).length > 0);
    // A queue.left after the error: once it is here, so is the error.
    f.conns[1].conn.send({ type: 'queue.left', playlist: 'duel' });
    await next(s, 'queue');
    assert.deepEqual(lobby, ['lobby.state']);
    // The game's own create afterwards is answered as it is.
    s.createLobby();
    await next(s, 'lobby', (p) => p.type === 'lobby.error');
  } finally {
    await s.close();
    await f.close();
  }
});

test('sent back to a server the relay could not reach: waits before following', async () => {
  // duel-3 is "dead": a request naming it is served by duel-1, which sends
  // the player straight back.
  const f = await fleet((c) => {
    if (c.n < 3) sendAway(c, 'duel-3', 'rejoin');
  }, ['duel-3']);
  const s = connect({ url: f.url, ticket: async () => 't', backoffInitial: 8, backoffMax: 64 });
  const closes = [];
  s.on('closed', (c) => closes.push(c));
  await next(s, 'welcome', () => f.conns.length === 4);
  await s.close();
  await f.close();
  // The first redirect is followed at once; the ones back to duel-3 after
  // duel-1 answered for it wait.
  assert.equal(closes[0].delay, 0);
  assert.ok(closes[1].delay >= 4 && closes[1].delay <= 8, `second wait ${closes[1].delay}`);
  assert.ok(closes[2].delay >= 8 && closes[2].delay <= 16, `third wait ${closes[2].delay}`);
});

test('4004 replaced: the session stops', async () => {
  const f = await fleet((c) => c.conn.close(CloseCode.Replaced, 'replaced by a newer connection'));
  const s = connect({ url: f.url, ticket: async () => 't' });
  const c = await next(s, 'closed');
  assert.equal(c.code, 4004);
  assert.equal(c.reconnecting, false);
  await s.done();
  assert.equal(f.conns.length, 1);
  await f.close();
});

test('4005 rate limited: the longest wait before the next attempt', async () => {
  const f = await fleet((c) => { if (c.n === 0) c.conn.close(CloseCode.RateLimited, 'rate limited'); });
  const s = connect({ url: f.url, ticket: async () => 't', backoffInitial: 5, backoffMax: 40 });
  const c = await next(s, 'closed');
  assert.equal(c.code, 4005);
  assert.equal(c.reconnecting, true);
  assert.ok(c.delay >= 20 && c.delay <= 40, `wait ${c.delay}, want 20–40`);
  await next(s, 'welcome', () => f.conns.length === 2);
  await s.close();
  await f.close();
});

test('retry, join_refused and the game\'s packets reach the packet listeners', async () => {
  const f = await fleet((c) => {
    c.conn.send({ type: 'join_refused', reason: 'full' });
    c.conn.send({ type: 'retry', reason: 'handoff not written' });
  });
  const s = connect({ url: f.url, ticket: async () => 't' });
  const seen = [];
  await new Promise((resolve) => s.on('packet', (p) => { seen.push(p.type); if (p.type === 'retry') resolve(); }));
  assert.deepEqual(seen, ['welcome', 'join_refused', 'retry']);
  await s.close();
  await f.close();
});
