// The game of bench/ccu on Colyseus 0.18, written the way Colyseus's own
// examples write one: a schema state (both players' positions and a tick),
// an "input" message that stores the player's position, a simulation
// interval of 50 ms that advances the tick, and a patch rate of 50 ms, in
// rooms of two that the matchmaker fills (joinOrCreate).
//
// node server.js <port>
const { Server, Room } = require("@colyseus/core");
const { WebSocketTransport } = require("@colyseus/ws-transport");
const { schema, t } = require("@colyseus/schema");

const Player = schema({ x: t.uint32(), y: t.uint32() }, "Player");
const State = schema({ players: t.map(Player), tick: t.uint32() }, "State");

class Duel extends Room {
  onCreate() {
    this.maxClients = 2;
    this.setState(new State());
    this.state.tick = 0;
    this.setPatchRate(50);
    this.setSimulationInterval(() => { this.state.tick++; }, 50);
    this.onMessage("input", (client, m) => {
      const p = this.state.players.get(client.sessionId);
      if (p && m) { p.x = m.x >>> 0; p.y = m.y >>> 0; }
    });
  }
  onJoin(client) { this.state.players.set(client.sessionId, new Player()); }
  onLeave(client) { this.state.players.delete(client.sessionId); }
}

const port = Number(process.argv[2] || 2567);
const server = new Server({ transport: new WebSocketTransport(), greet: false });
server.define("duel", Duel);
server.listen(port, process.argv[3] || "127.0.0.1").then(() => console.log("listening " + port));
