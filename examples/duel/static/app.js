// The duel client: gets a ticket, connects, follows redirects, draws the
// arena and sends the keyboard's direction as input.
'use strict';

const $ = (id) => document.getElementById(id);
const state = window.musterState = { player: localStorage.getItem('muster.player') || '', node: '', socket: null, snapshot: null, keys: new Set(), sent: '', retries: 0 };
// Reconnect at once, then back off: a dropped player is back in its room
// within one round trip, and a server in trouble is not hammered.
const backoff = [0, 250, 500, 1000, 2000, 4000];

function log(msg) {
  const line = document.createElement('div');
  line.textContent = new Date().toLocaleTimeString() + '  ' + msg;
  $('log').prepend(line);
}

async function newTicket() {
  const res = await fetch('ticket', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ player: state.player }) });
  if (!res.ok) throw new Error('ticket: ' + res.status);
  const t = await res.json();
  state.player = t.player;
  localStorage.setItem('muster.player', t.player);
  $('player').textContent = t.player;
  return t.ticket;
}

async function connect(hello) {
  const ticket = await newTicket();
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  let url = `${scheme}//${location.host}${location.pathname.replace(/[^/]*$/, '')}play?ticket=${encodeURIComponent(ticket)}`;
  if (state.node) url += `&${state.param || 'node'}=${encodeURIComponent(state.node)}`;
  const ws = new WebSocket(url);
  state.socket = ws;
  ws.onopen = () => ws.send(JSON.stringify({ type: 'hello', data: { mode: hello } }));
  ws.onmessage = (m) => onPacket(JSON.parse(m.data));
  ws.onclose = (e) => {
    if (state.socket !== ws) return;
    log(`closed ${e.code} ${e.reason}`);
    const wait = backoff[Math.min(state.retries++, backoff.length - 1)];
    setTimeout(() => connect('rejoin'), wait); // reconnect anywhere: the fleet finds our room
  };
}

function onPacket(p) {
  switch (p.type) {
    case 'welcome':
      state.retries = 0;
      $('node').textContent = p.node || 'this server';
      $('room').textContent = p.room || '–';
      log(`welcome on ${p.node || 'this server'}${p.room ? ', back in ' + p.room : ''}`);
      break;
    case 'redirect':
      // Keep the node for later reconnects too, then reconnect through
      // the same public address: any server relays us there.
      log(`redirected to ${p.node} (${p.reason})`);
      state.node = p.node;
      state.param = p.param;
      state.socket = null;
      connect('rejoin');
      break;
    case 'room':
      $('room').textContent = p.room;
      log(`match ${p.room} (${p.kind || 'room'})`);
      break;
    case 'state':
      state.snapshot = p;
      if (p.winner) log(`${p.winner === state.player ? 'you win' : p.winner + ' wins'}`);
      break;
    case 'room_end':
      $('room').textContent = '–';
      log(`match over: ${p.reason}`);
      break;
    case 'server_draining':
      log('this server is draining');
      break;
    case 'queue.waiting':
      log(`waiting for ${p.playlist} on ${p.node || 'this server'} (waited ${(p.waited_ms / 1000).toFixed(1)} s)`);
      break;
    case 'lobby.state':
      $('lobby').textContent = `${p.code}${p.host === state.player ? ' (host)' : ''} · ${p.members.length} in`;
      log(`lobby ${p.code}: ${p.members.join(', ')}${p.playing ? ' (playing)' : ''}`);
      break;
    case 'lobby.left':
      $('lobby').textContent = '–';
      log(`left lobby ${p.code}`);
      break;
    default:
      log(p.type + ' ' + JSON.stringify(p));
  }
}

function send(type, data) {
  if (state.socket && state.socket.readyState === WebSocket.OPEN) state.socket.send(JSON.stringify({ type, data }));
}

$('queue').onclick = () => send('queue', { playlist: 'duel' });
$('create').onclick = () => send('lobby.create', {});
$('join').onclick = () => send('lobby.join', { code: $('code').value.trim().toUpperCase() });
$('start').onclick = () => send('lobby.start', {});

const dirs = { ArrowLeft: [-1, 0], a: [-1, 0], ArrowRight: [1, 0], d: [1, 0], ArrowUp: [0, -1], w: [0, -1], ArrowDown: [0, 1], s: [0, 1] };
function steer() {
  let dx = 0, dy = 0;
  for (const k of state.keys) { const d = dirs[k]; if (d) { dx += d[0]; dy += d[1]; } }
  const msg = JSON.stringify({ dx, dy });
  if (msg !== state.sent) { state.sent = msg; send('input', { dx, dy }); }
}
addEventListener('keydown', (e) => { if (dirs[e.key] && e.target.tagName !== 'INPUT') { state.keys.add(e.key); steer(); e.preventDefault(); } });
addEventListener('keyup', (e) => { state.keys.delete(e.key); steer(); });

const ctx = $('arena').getContext('2d');
function draw() {
  ctx.clearRect(0, 0, 800, 500);
  const s = state.snapshot;
  if (s) {
    ctx.fillStyle = '#f5c542';
    ctx.beginPath(); ctx.arc(s.orbX, s.orbY, 10, 0, 2 * Math.PI); ctx.fill();
    for (const f of s.players || []) {
      ctx.fillStyle = f.ID === state.player ? '#4aa3ff' : '#ff5a5f';
      ctx.beginPath(); ctx.arc(f.X, f.Y, 18, 0, 2 * Math.PI); ctx.fill();
      ctx.fillStyle = '#dde3ea';
      ctx.fillText(`${f.ID} ${f.Score}`, f.X - 18, f.Y - 24);
    }
  }
  requestAnimationFrame(draw);
}
draw();
connect('new');
