// The duel's page: the game only. Connecting, redirects and rejoining are
// the Muster client's (client/muster.js, built from clients/js); this file
// asks it for a session and draws what the session reports.
import { connect } from './client/muster.js';

const $ = (id) => document.getElementById(id);
// The page's state, read by the browser test too.
const state = window.musterState = { player: localStorage.getItem('muster.player') || '', snapshot: null, keys: new Set(), sent: '', phase: 'idle', result: '' };

function log(msg) {
  const line = document.createElement('div');
  line.textContent = new Date().toLocaleTimeString() + '  ' + msg;
  $('log').prepend(line);
}

// The example trusts the player id the page keeps; a real game mints
// tickets where it signs players in.
async function ticket() {
  const res = await fetch('ticket', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ player: state.player }) });
  if (!res.ok) throw new Error('ticket: ' + res.status);
  const t = await res.json();
  state.player = t.player;
  localStorage.setItem('muster.player', t.player);
  $('player').textContent = t.player;
  return t.ticket;
}

const session = window.musterSession = connect({ url: 'play', ticket, player: state.player });

// phase is what the overlay says: idle (call to action), waiting, playing, over.
function phase(p, text) {
  state.phase = p;
  document.body.dataset.phase = p;
  if (text !== undefined) $('overlay-text').textContent = text;
  $('overlay').hidden = p === 'playing';
  $('play').hidden = p === 'waiting';
  $('play').textContent = p === 'over' ? 'Play again' : 'Find an opponent';
}

session.on('welcome', (w) => {
  $('player').textContent = w.player;
  $('node').textContent = w.node || 'this server';
  $('room').textContent = w.room || '–';
  log(`welcome on ${w.node || 'this server'}${w.room ? ', back in ' + w.room : ''}`);
  if (w.room) phase('playing');
});
session.on('redirect', (r) => log(`sent to ${r.node} (${r.reason})`));
session.on('closed', (c) => {
  if (c.code !== 1000) log(`connection closed ${c.code} ${c.reason}${c.reconnecting ? '' : ', not reconnecting'}`);
  if (!c.reconnecting) phase('over', `Disconnected: ${c.reason || c.code}. Reload the page to play.`);
});
session.on('room', (r) => {
  $('room').textContent = r.room;
  state.snapshot = null;
  log(`match ${r.room} (${r.kind || 'room'})`);
  phase('playing');
});
session.on('state', (s) => { state.snapshot = s; });
session.on('roomEnd', (e) => {
  $('room').textContent = '–';
  const winner = state.snapshot && state.snapshot.winner;
  const text = winner ? (winner === state.player ? 'You win!' : `${winner} wins`) : `Match over (${e.reason})`;
  state.result = text;
  log(text);
  phase('over', text);
});
session.on('draining', () => log('this server is draining'));
session.on('queue', (q) => {
  if (q.type === 'queue.waiting') {
    log(`waiting for ${q.playlist} on ${q.node || 'this server'} (waited ${(q.waited_ms / 1000).toFixed(1)} s)`);
    phase('waiting', `Waiting for an opponent on ${q.playlist}…`);
  } else if (q.type === 'queue.left') {
    phase('idle', 'Queue for a duel to find an opponent.');
  } else {
    log(`queue: ${q.error}`);
  }
});
session.on('lobby', (l) => {
  if (l.type === 'lobby.state') {
    $('lobby').textContent = `${l.code}${l.host === state.player ? ' (host)' : ''} · ${l.members.length} in`;
    log(`lobby ${l.code}: ${l.members.join(', ')}${l.playing ? ' (playing)' : ''}`);
    if (state.phase !== 'playing') phase('idle', `Lobby ${l.code}: ${l.members.length} in. ${l.host === state.player ? 'Start the match when your friends are in.' : 'Waiting for the host to start.'}`);
  } else if (l.type === 'lobby.left') {
    $('lobby').textContent = '–';
    log(`left lobby ${l.code}`);
  } else {
    log(`lobby: ${l.error}`);
  }
});

function queue() {
  session.queue('duel');
  phase('waiting', 'Looking for an opponent…');
}
$('queue').onclick = queue;
$('play').onclick = queue;
$('create').onclick = () => session.createLobby();
$('join').onclick = () => session.joinLobby($('code').value);
$('start').onclick = () => session.startLobby();

const dirs = { ArrowLeft: [-1, 0], a: [-1, 0], ArrowRight: [1, 0], d: [1, 0], ArrowUp: [0, -1], w: [0, -1], ArrowDown: [0, 1], s: [0, 1] };
function steer() {
  let dx = 0, dy = 0;
  for (const k of state.keys) { const d = dirs[k]; if (d) { dx += d[0]; dy += d[1]; } }
  const msg = JSON.stringify({ dx, dy });
  if (msg !== state.sent) { state.sent = msg; session.send('input', { dx, dy }); }
}
addEventListener('keydown', (e) => { if (dirs[e.key] && e.target.tagName !== 'INPUT') { state.keys.add(e.key); steer(); e.preventDefault(); } });
addEventListener('keyup', (e) => { state.keys.delete(e.key); steer(); });

const W = 800, H = 500;
const ctx = $('arena').getContext('2d');
// label draws a name tag above a player, on a dark plate, kept inside the
// arena so that it is never clipped.
function label(text, x, y) {
  ctx.font = '600 14px system-ui, sans-serif';
  const w = ctx.measureText(text).width + 10;
  const lx = Math.min(Math.max(x - w / 2, 2), W - w - 2);
  let ly = y - 18 - 26; // above the disc
  if (ly < 2) ly = y + 22; // below it at the top wall
  ctx.fillStyle = 'rgba(11,16,22,.8)';
  ctx.fillRect(lx, ly, w, 20);
  ctx.fillStyle = '#dde3ea';
  ctx.fillText(text, lx + 5, ly + 15);
}
function draw() {
  ctx.clearRect(0, 0, W, H);
  const s = state.snapshot;
  if (s) {
    ctx.fillStyle = '#f5c542';
    ctx.beginPath(); ctx.arc(s.orbX, s.orbY, 10, 0, 2 * Math.PI); ctx.fill();
    const players = s.players || [];
    for (const f of players) {
      ctx.fillStyle = f.ID === state.player ? '#4aa3ff' : '#ff5a5f';
      ctx.beginPath(); ctx.arc(f.X, f.Y, 18, 0, 2 * Math.PI); ctx.fill();
    }
    // Labels after every disc, so that no disc covers a label.
    for (const f of players) label(`${f.ID === state.player ? 'you' : f.ID} · ${f.Score}`, f.X, f.Y);
  }
  requestAnimationFrame(draw);
}
phase('idle', 'Queue for a duel to find an opponent.');
draw();
