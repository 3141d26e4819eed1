// The page of the rps example: the game only. Connecting, redirects and
// rejoining are the Muster client's (client/muster.js, built from
// clients/js).
import { connect } from './client/muster.js';

const $ = (id) => document.getElementById(id);
const state = window.musterState = { player: localStorage.getItem('muster.player') || '', match: null, deadline: 0 };

function log(msg) {
  const line = document.createElement('div');
  line.textContent = new Date().toLocaleTimeString() + '  ' + msg;
  $('log').prepend(line);
}

// The example trusts the player id the page keeps, so a reconnect (or a
// reload) comes back as the same player, into its seat.
async function ticket() {
  const res = await fetch('ticket', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ player: state.player }) });
  if (!res.ok) throw new Error('ticket: ' + res.status);
  const t = await res.json();
  state.player = t.player;
  localStorage.setItem('muster.player', t.player);
  $('player').textContent = t.player;
  return t.ticket;
}

// A throw sent while reconnecting is kept (the last one) and sent once
// back: the round number in it keeps it out of a later round.
const session = connect({ url: 'play', ticket, player: state.player, whileReconnecting: 'last' });

function show() {
  const m = state.match;
  if (!m) return;
  const me = m.players.find((p) => p.id === state.player);
  const them = m.players.find((p) => p.id !== state.player);
  const left = Math.max(0, Math.ceil((state.deadline - Date.now()) / 1000));
  const last = m.last ? ' · last round: ' + Object.entries(m.last).map(([id, t]) => `${id === state.player ? 'you' : id} ${t || '(no throw)'}`).join(', ') : '';
  $('board').textContent = m.over
    ? (m.winner ? (m.winner === state.player ? 'You win!' : `${m.winner} wins`) : 'Draw') + last
    : `Round ${m.round} · you ${me ? me.wins : 0} – ${them ? them.wins : 0} ${them ? them.id : ''}${them && them.away ? ' (away)' : ''} · ${me && me.thrown ? 'thrown' : left + ' s to throw'}${last}`;
}
setInterval(show, 250);

session.on('welcome', (w) => { $('node').textContent = w.node || 'this server'; log(`welcome${w.room ? ', back in ' + w.room : ''}`); });
session.on('room', (r) => log(`match ${r.room} (${r.kind})`));
session.on('roomEnd', (e) => log(`match over: ${e.reason}`));
session.on('packet', (p) => {
  if (p.type !== 'rps') return;
  state.match = p;
  state.deadline = Date.now() + p.turn_ms;
  show();
});
session.on('queue', (q) => log(q.type === 'queue.waiting' ? 'waiting for an opponent…' : `queue: ${q.error || q.type}`));
session.on('lobby', (l) => {
  if (l.type === 'lobby.state') $('lobby').textContent = `${l.code} · ${l.members.length} in`;
  else log(`lobby: ${l.error || l.type}`);
});

$('queue').onclick = () => session.queue('rps');
$('create').onclick = () => session.createLobby();
$('join').onclick = () => session.joinLobby($('code').value);
$('start').onclick = () => session.startLobby();
for (const b of document.querySelectorAll('#throws button')) {
  b.onclick = () => state.match && session.send('input', { round: state.match.round, throw: b.dataset.throw });
}
