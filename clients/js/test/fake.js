// A minimal WebSocket server (RFC 6455: text frames, close frames; no
// fragmentation or extensions) for the tests that script what a fleet
// does, redirects and refusals, which one server alone never does.
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';

// fakeServer starts a server on a free loopback port; each connection is
// given to onConn(conn, url) with conn.send(obj), conn.close(code, reason)
// and conn.onmessage(obj). It resolves with {url, close()}.
export function fakeServer(onConn) {
  const sockets = new Set();
  const srv = createServer((req, res) => res.writeHead(404).end());
  srv.on('upgrade', (req, sock) => {
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
    sock.on('error', () => {});
    const accept = createHash('sha1').update(req.headers['sec-websocket-key'] + '258EAFA5-E914-47DA-95CA-C5AB0DC85B11').digest('base64');
    sock.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
    const conn = {
      onmessage: () => {},
      send(obj) { sock.write(frame(0x1, Buffer.from(JSON.stringify(obj)))); },
      close(code, reason = '') {
        const body = Buffer.alloc(2 + Buffer.byteLength(reason));
        body.writeUInt16BE(code, 0);
        body.write(reason, 2);
        sock.end(frame(0x8, body));
      },
    };
    let buf = Buffer.alloc(0);
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        if (buf.length < 2) return;
        const op = buf[0] & 0x0f;
        let len = buf[1] & 0x7f, off = 2;
        if (len === 126) { if (buf.length < 4) return; len = buf.readUInt16BE(2); off = 4; }
        else if (len === 127) { if (buf.length < 10) return; len = Number(buf.readBigUInt64BE(2)); off = 10; }
        if (buf.length < off + 4 + len) return;
        const mask = buf.subarray(off, off + 4);
        const data = Buffer.from(buf.subarray(off + 4, off + 4 + len));
        for (let i = 0; i < data.length; i++) data[i] ^= mask[i % 4];
        buf = buf.subarray(off + 4 + len);
        if (op === 0x1) conn.onmessage(JSON.parse(data.toString()));
        else if (op === 0x8) sock.end(frame(0x8, data.subarray(0, 2)));
      }
    });
    onConn(conn, new URL(req.url, 'http://x'));
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({
    url: `ws://127.0.0.1:${srv.address().port}/play`,
    close: () => new Promise((done) => {
      for (const s of sockets) s.destroy();
      srv.close(() => done());
    }),
  })));
}

function frame(op, payload) {
  const n = payload.length;
  const head = n < 126 ? Buffer.from([0x80 | op, n]) : Buffer.from([0x80 | op, 126, n >> 8, n & 0xff]);
  return Buffer.concat([head, payload]);
}
