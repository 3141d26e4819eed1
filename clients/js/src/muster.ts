// Muster's client: one session with a game server fleet. It gets a ticket,
// connects, says hello, follows redirects, rejoins after a drop with
// backoff and jitter, and keeps the server it plays on across reconnects.
// The wire protocol is docs/protocol.md in the Muster repository.
//
// No runtime dependencies: it uses the platform's WebSocket (browsers, and
// Node.js 22 or later; Node.js 20 with --experimental-websocket, or pass
// one as ConnectOptions.WebSocket).

/** Any packet the server sends: a JSON object with a type. */
export interface Packet {
  type: string;
  [field: string]: unknown;
}

/** The first packet of every connection: the server took the ticket. */
export interface Welcome extends Packet {
  type: "welcome";
  /**
   * The server's node id: every server muster.New assembles has one, a
   * lone in-memory one too; absent only from a room host run with no
   * fleet bound.
   */
  node?: string;
  /** The player id the ticket named. */
  player: string;
  /** The room the player is seated in, when it came back to its seat. */
  room?: string;
}

/** The player was seated in a room. */
export interface RoomPacket extends Packet {
  type: "room";
  room: string;
  /** The room's kind: the playlist's name, or the lobby module's kind. */
  kind?: string;
}

/** The player's room ended (reason: "won by …", "abandoned", "left", "drained", …). */
export interface RoomEnd extends Packet {
  type: "room_end";
  room: string;
  reason: string;
}

/** A packet of the matchmaking module. */
export type QueuePacket =
  | { type: "queue.waiting"; playlist: string; waited_ms: number; node?: string }
  | { type: "queue.left"; playlist: string }
  | { type: "queue.error"; error: string };

/** A packet of the lobby module. */
export type LobbyPacket =
  | {
      type: "lobby.state";
      code: string;
      host: string;
      members: string[];
      playing: boolean;
      room?: string;
      node?: string;
    }
  | { type: "lobby.left"; code: string }
  | { type: "lobby.error"; error: string };

/** The server sends the player to another server of the fleet. */
export interface Redirect extends Packet {
  type: "redirect";
  /** The target server's node id. */
  node: string;
  /** The query parameter that names it (fleet.node-param, "node" by default). */
  param?: string;
  /** The target's public address, when it has one of its own. */
  address?: string;
  /** "rejoin", "queue", "lobby", "drain" or "migrate" (the player's room moved there: same room id). */
  reason: string;
  /** A fresh ticket for the next connection, when the server gives one. */
  ticket?: string;
  /** The ready query that names the target, e.g. "node=duel-2". */
  query?: string;
}

/** How one connection ended. */
export interface Closed {
  /** The WebSocket close code (1006 when the connection dropped without one). */
  code: number;
  /** The close reason the server gave. */
  reason: string;
  /** Whether the session connects again. */
  reconnecting: boolean;
  /** How long it waits first, in milliseconds. */
  delay: number;
}

/** The events a Session emits, and what each listener gets. */
export interface SessionEvents<State extends Packet = Packet> {
  /** A connection was welcomed. */
  welcome: Welcome;
  /** The player was seated in a room. */
  room: RoomPacket;
  /** The game's state (packets of type "state"). */
  state: State;
  /** The player's room ended. */
  roomEnd: RoomEnd;
  /** queue.waiting, queue.left or queue.error. */
  queue: QueuePacket;
  /** lobby.state, lobby.left or lobby.error. */
  lobby: LobbyPacket;
  /** The server moves the player; the session follows on its own. */
  redirect: Redirect;
  /** The server is draining and had nowhere to send the player yet. */
  draining: Packet;
  /** A connection ended. */
  closed: Closed;
  /** Every packet, the game's own included, before its own event. */
  packet: Packet;
}

/** The part of the platform's WebSocket the session uses. */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((ev: any) => void) | null;
  onmessage: ((ev: { data: any }) => void) | null;
  onclose: ((ev: { code: number; reason: string }) => void) | null;
  onerror: ((ev: any) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/** A WebSocket constructor: the platform's, or one given in its place. */
export type SocketConstructor = new (url: string) => SocketLike;

/** What connect needs. */
export interface ConnectOptions {
  /**
   * The play endpoint: ws:, wss:, http: or https: (turned into ws: and
   * wss:), or a path resolved against the page's address in a browser.
   * Redirects reconnect through this same address with the target named in
   * the query: any server of the fleet relays the player there.
   */
  url: string | URL;
  /** Mints a ticket for the player; called before every connection that has none. */
  ticket: () => Promise<string>;
  /** The player's id, if known before the welcome; the welcome's id wins. */
  player?: string;
  /** A node id to ask for on the first connection (one kept from an earlier session). */
  node?: string;
  /** The WebSocket constructor. Default: globalThis.WebSocket. */
  WebSocket?: SocketConstructor;
  /** The first wait after a failed attempt, in ms. Default 250. */
  backoffInitial?: number;
  /** The longest wait between attempts, in ms. Default 5000. */
  backoffMax?: number;
  /** How long a connection may take to be welcomed, in ms. Default 10000. */
  helloTimeout?: number;
  /**
   * What becomes of an input sent while the session is between
   * connections (a drop, a redirect). "drop", the default, drops it: for a
   * continuous control (a direction held) it is stale by the time the
   * session is back. "last" keeps the last one and sends it after the
   * next welcome; "queue" keeps them in order, at most inputQueueMax (the
   * oldest go first), and sends them after the next welcome: for inputs
   * that are moves, as in a turn-based game (which should number them,
   * so that a move kept for a turn that is over is ignored).
   */
  whileReconnecting?: "drop" | "last" | "queue";
  /** The most inputs whileReconnecting "queue" keeps. Default 32. */
  inputQueueMax?: number;
}

/** Close codes of the Muster room host. */
export const CloseCode = {
  /** A redirect: the session follows it. */
  Normal: 1000,
  /** The server stops, or cut a client that did not answer its ping. */
  GoingAway: 1001,
  /** A frame above the server's read limit. */
  MessageTooBig: 1009,
  /** The ticket could not be checked now. */
  TryAgainLater: 1013,
  BadHello: 4000,
  BadTicket: 4001,
  BadPacket: 4002,
  UnknownType: 4003,
  Replaced: 4004,
  RateLimited: 4005,
  TooSlow: 4006,
} as const;

// Codes after which connecting again cannot help: the client speaks
// another protocol, or another connection took the player's place.
const fatal = new Set<number>([
  CloseCode.BadHello,
  CloseCode.BadPacket,
  CloseCode.UnknownType,
  CloseCode.Replaced,
  CloseCode.MessageTooBig,
]);

const OPEN = 1;

// How long a connection must have lasted for its drop to be retried at
// once, in milliseconds.
const stable = 2000;

type Listener<T> = (ev: T) => void;

/**
 * connect starts a session and returns it at once; it connects in the
 * background and keeps connecting until close is called or the server
 * closes with a code that retrying cannot help (closed with reconnecting
 * false).
 */
export function connect<State extends Packet = Packet>(opts: ConnectOptions): Session<State> {
  return new Session<State>(opts);
}

/**
 * A Session is one player's presence on the fleet, across connections:
 * redirects, drops and rejoins. Its methods never throw for a connection
 * that is down: messages other than inputs wait for the next welcome.
 */
export class Session<State extends Packet = Packet> {
  /** The player id: the option's until the first welcome, the server's after. */
  player: string;
  /** The server that welcomed the current or last connection ("" before). */
  node = "";
  /** The room the player is seated in, or "". */
  room = "";
  /** How many redirects the session followed. */
  redirects = 0;
  /** Whether the current connection is welcomed. */
  connected = false;

  private readonly base: URL;
  private readonly opts: Required<Pick<ConnectOptions, "backoffInitial" | "backoffMax" | "helloTimeout" | "whileReconnecting" | "inputQueueMax">> & ConnectOptions;
  private readonly WS: SocketConstructor;
  private listeners = new Map<keyof SessionEvents<State>, Set<Listener<any>>>();
  private socket: SocketLike | null = null;
  private outbox: string[] = [];
  // Inputs kept while between connections (whileReconnecting), sent after
  // the outbox.
  private inputs: string[] = [];
  // Requests sent on this connection and not answered yet, by type: a
  // drain redirect that comes first may have crossed them (see follow).
  private asking = new Map<string, string>();
  // Requests to send again after the next welcome, before the outbox.
  private resend = new Map<string, string>();
  // A lobby.create sent again after a drain redirect, until a lobby.error:
  // if the first one went along and made the lobby, the second is told
  // "already in a lobby", which is no news to the game.
  private createdAgain = false;
  private mode: "new" | "rejoin" = "new";
  private hint: string;
  private param = "node";
  private query = "";
  private nextTicket = "";
  private redirected: Redirect | null = null;
  private unreachable = "";
  private backoff = 0;
  private bounce = 0;
  private welcomedAt = 0;
  private last: Welcome | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private ended: Promise<void>;
  private end!: () => void;

  constructor(opts: ConnectOptions) {
    this.opts = { backoffInitial: 250, backoffMax: 5000, helloTimeout: 10000, whileReconnecting: "drop", inputQueueMax: 32, ...opts };
    if (!["drop", "last", "queue"].includes(this.opts.whileReconnecting)) {
      throw new Error(`muster: whileReconnecting is "drop", "last" or "queue", not ${JSON.stringify(this.opts.whileReconnecting)}`);
    }
    if (!Number.isInteger(this.opts.inputQueueMax) || this.opts.inputQueueMax < 1) {
      throw new Error(`muster: inputQueueMax is a positive integer, not ${JSON.stringify(this.opts.inputQueueMax)}`);
    }
    const WS = opts.WebSocket ?? (globalThis as any).WebSocket;
    if (typeof WS !== "function") {
      throw new Error("muster: no WebSocket on this platform (Node.js 20 needs --experimental-websocket); pass ConnectOptions.WebSocket");
    }
    this.WS = WS;
    this.base = playURL(opts.url);
    this.player = opts.player ?? "";
    this.hint = opts.node ?? "";
    this.ended = new Promise((resolve) => (this.end = resolve));
    this.schedule(0);
  }

  /** Adds a listener for an event and returns a function that removes it. */
  on<K extends keyof SessionEvents<State>>(event: K, fn: Listener<SessionEvents<State>[K]>): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn);
    return () => set!.delete(fn);
  }

  /** Resolves with the current connection's welcome, or the next one. */
  welcomed(): Promise<Welcome> {
    if (this.connected && this.last) return Promise.resolve(this.last);
    return new Promise((resolve) => {
      const off = this.on("welcome", (w) => {
        off();
        resolve(w);
      });
    });
  }

  /**
   * Sends a message {type, data}. While the session is between
   * connections an input is dropped (it would be stale), or kept as
   * ConnectOptions.whileReconnecting says, and any other message is sent
   * after the next welcome.
   */
  send(type: string, data: unknown = {}): void {
    const frame = JSON.stringify({ type, data });
    if (this.connected && this.socket?.readyState === OPEN) {
      this.socket.send(frame);
      if (type === "queue" || type === "lobby.create") this.asking.set(type, frame);
      else if (type === "unqueue") this.asking.delete("queue");
      if (type === "lobby.create") this.createdAgain = false; // the game's own, answered as it is
    } else if (type !== "input" && !this.stopped) {
      this.outbox.push(frame);
    } else if (!this.stopped) {
      this.keep(frame);
    }
  }

  /** Queues the player on a playlist; rating is optional. */
  queue(playlist: string, rating?: number): void {
    this.send("queue", rating === undefined ? { playlist } : { playlist, rating });
  }

  /** Takes the player out of its queue. */
  unqueue(): void {
    this.send("unqueue");
  }

  /** Creates a lobby with the player as its host; its code comes with the lobby event. */
  createLobby(): void {
    this.send("lobby.create");
  }

  /** Joins the lobby of a code, on whichever server holds it. */
  joinLobby(code: string): void {
    this.send("lobby.join", { code: code.trim().toUpperCase() });
  }

  /** Leaves the player's lobby. */
  leaveLobby(): void {
    this.send("lobby.leave");
  }

  /** As the lobby's host, opens a room for its members. */
  startLobby(): void {
    this.send("lobby.start");
  }

  /** Gives up the player's seat for good: its room ends for it ("left"). */
  leave(): void {
    this.room = "";
    this.send("leave");
  }

  /**
   * Closes the session: no reconnect. The seat stays until the room ends
   * (call leave first to give it up). Resolves when the connection is
   * closed.
   */
  close(): Promise<void> {
    if (!this.stopped) {
      this.stopped = true;
      this.outbox = [];
      this.resend.clear();
      if (this.timer) clearTimeout(this.timer);
      const ws = this.socket;
      if (ws && ws.readyState <= OPEN) {
        ws.close(1000, "bye");
      } else {
        this.finish();
      }
    }
    return this.ended;
  }

  /** Resolves when the session has stopped for good. */
  done(): Promise<void> {
    return this.ended;
  }

  private emit<K extends keyof SessionEvents<State>>(event: K, value: SessionEvents<State>[K]): void {
    for (const fn of [...(this.listeners.get(event) ?? [])]) {
      try {
        fn(value);
      } catch (err) {
        setTimeout(() => {
          throw err;
        }); // a listener's bug is reported, and does not break the session
      }
    }
  }

  private finish(): void {
    this.socket = null;
    this.connected = false;
    this.end();
  }

  private schedule(delay: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.open();
    }, delay);
  }

  // retryDelay is the wait before the next attempt after a failed one:
  // doubling from backoffInitial to backoffMax, then a random part of it
  // (between a half and the whole), so that a fleet's players who dropped
  // together do not come back together.
  private retryDelay(floor = 0): number {
    this.backoff = Math.min(Math.max(2 * this.backoff, this.opts.backoffInitial, floor), this.opts.backoffMax);
    return Math.round(this.backoff * (0.5 + Math.random() / 2));
  }

  private async open(): Promise<void> {
    if (this.stopped) return;
    let ticket = this.nextTicket;
    this.nextTicket = ""; // a ticket is good for one attempt
    if (!ticket) {
      try {
        ticket = await this.opts.ticket();
      } catch (err) {
        if (this.stopped) return;
        const delay = this.retryDelay();
        this.emit("closed", { code: 1006, reason: "ticket: " + String((err as Error)?.message ?? err), reconnecting: true, delay });
        this.schedule(delay);
        return;
      }
      if (this.stopped) return;
    }
    const url = new URL(this.base);
    url.searchParams.set("ticket", ticket);
    let asked = "";
    if (this.query) {
      // The redirect's query names the target and carries its ticket: each
      // of its parameters takes the place of the URL's own of that name.
      new URLSearchParams(this.query).forEach((v, k) => url.searchParams.set(k, v));
      asked = this.hint;
    } else if (this.hint) {
      url.searchParams.set(this.param, this.hint);
      asked = this.hint;
    }
    let ws: SocketLike;
    try {
      ws = new this.WS(url.toString());
    } catch (err) {
      const delay = this.retryDelay();
      this.emit("closed", { code: 1006, reason: String((err as Error)?.message ?? err), reconnecting: true, delay });
      this.schedule(delay);
      return;
    }
    this.socket = ws;
    (ws as { binaryType?: string }).binaryType = "arraybuffer"; // a binary frame decodes as text, not a Blob
    const mode = this.mode;
    let welcomed = false;
    const helloTimer = setTimeout(() => {
      if (welcomed || this.socket !== ws) return;
      this.socket = null;
      ws.close();
      this.closed(1006, "no welcome", false);
    }, this.opts.helloTimeout);
    ws.onopen = () => ws.send(JSON.stringify({ type: "hello", data: { mode } }));
    ws.onerror = () => {
      // A connection that failed before it opened: browsers follow with
      // onclose (1006), some Node.js versions do not. Either way the
      // attempt is over.
      if (this.socket !== ws || ws.readyState === OPEN) return;
      clearTimeout(helloTimer);
      this.socket = null;
      try {
        ws.close();
      } catch {
        // already closing
      }
      this.closed(1006, "connection failed", false);
    };
    ws.onmessage = (m) => {
      if (this.socket !== ws) return;
      let p: Packet;
      try {
        p = JSON.parse(typeof m.data === "string" ? m.data : new TextDecoder().decode(m.data));
      } catch {
        return; // not ours to judge: the server speaks JSON
      }
      if (!p || typeof p.type !== "string") return;
      if (!welcomed) {
        if (p.type !== "welcome") return;
        welcomed = true;
        clearTimeout(helloTimer);
        this.welcome(p as Welcome, asked);
      }
      this.dispatch(p);
      if (p.type === "welcome") this.flush(ws);
    };
    ws.onclose = (e) => {
      clearTimeout(helloTimer);
      if (this.socket !== ws) return;
      this.socket = null;
      this.connected = false;
      this.closed(e.code, e.reason ?? "", welcomed);
    };
  }

  private welcome(w: Welcome, asked: string): void {
    this.connected = true;
    this.last = w;
    this.mode = "rejoin";
    this.welcomedAt = Date.now();
    this.player = w.player || this.player;
    this.node = w.node ?? "";
    this.room = w.room ?? "";
    // Asked for a server and welcomed by another: the relay could not
    // reach it (it died, or is going), and this one serves us.
    this.unreachable = asked && this.node !== asked ? asked : "";
    if (!asked || this.node === asked) this.bounce = 0;
    // Keep this server for later reconnects: a drop comes back to it, where
    // the player's room runs, through any server of the fleet.
    if (this.node) {
      this.hint = this.node;
      this.query = "";
    }
  }

  private dispatch(p: Packet): void {
    this.emit("packet", p);
    switch (p.type) {
      case "welcome":
        this.emit("welcome", p as Welcome);
        break;
      case "room":
        this.room = String(p.room ?? "");
        this.emit("room", p as RoomPacket);
        break;
      case "room_end":
        if (p.room === this.room || !p.room) this.room = "";
        this.emit("roomEnd", p as RoomEnd);
        break;
      case "state":
        this.emit("state", p as State);
        break;
      case "redirect":
        this.follow(p as Redirect);
        break;
      case "server_draining":
        this.emit("draining", p);
        break;
      default:
        if (p.type.startsWith("queue.")) {
          this.asking.delete("queue");
          this.emit("queue", p as unknown as QueuePacket);
        } else if (p.type.startsWith("lobby.")) {
          this.asking.delete("lobby.create");
          if (p.type === "lobby.error" && this.createdAgain) {
            this.createdAgain = false;
            if (p.error === "lobby: already in a lobby") break;
          }
          this.emit("lobby", p as unknown as LobbyPacket);
        }
    }
  }

  // keep keeps an input sent between connections, as whileReconnecting
  // says.
  private keep(frame: string): void {
    switch (this.opts.whileReconnecting) {
      case "last":
        this.inputs = [frame];
        break;
      case "queue":
        this.inputs.push(frame);
        if (this.inputs.length > this.opts.inputQueueMax) this.inputs.shift();
        break;
    }
  }

  private flush(ws: SocketLike): void {
    for (const [type, frame] of this.resend) {
      ws.send(frame);
      this.asking.set(type, frame);
    }
    this.resend.clear();
    const out = this.outbox.concat(this.inputs);
    this.outbox = [];
    this.inputs = [];
    for (const frame of out) ws.send(frame);
  }

  // follow takes a redirect: the next connection names the target (through
  // the same public address) with the ticket the redirect carries, if any.
  //
  // A drain redirect can cross a queue or lobby.create on the wire: the
  // draining server handles no request once it sends its last players
  // away. One that got no answer is sent again after the next welcome; if
  // it did go along, the second only restarts the wait of a place just
  // taken, or is told the lobby it made exists.
  private follow(r: Redirect): void {
    this.redirects++;
    if (r.reason === "drain") {
      for (const [type, frame] of this.asking) this.resend.set(type, frame);
      this.createdAgain = this.resend.has("lobby.create");
    }
    this.asking.clear();
    this.redirected = r;
    this.hint = r.node ?? "";
    if (r.param) this.param = r.param;
    this.query = typeof r.query === "string" ? r.query : "";
    this.nextTicket = typeof r.ticket === "string" ? r.ticket : "";
    this.emit("redirect", r);
    // The server closes with 1000 after the packet; do not wait for it.
    const ws = this.socket;
    if (ws) {
      this.socket = null;
      this.connected = false;
      ws.close(1000, "redirected");
      this.closed(1000, "redirect", true);
    }
  }

  private closed(code: number, reason: string, welcomed: boolean): void {
    const redirect = this.redirected;
    this.redirected = null;
    if (this.stopped) {
      this.emit("closed", { code, reason, reconnecting: false, delay: 0 });
      this.finish();
      return;
    }
    if (fatal.has(code)) {
      this.stopped = true;
      this.outbox = [];
      this.resend.clear();
      this.emit("closed", { code, reason, reconnecting: false, delay: 0 });
      this.finish();
      return;
    }
    let delay: number;
    if (redirect) {
      delay = 0;
      if (redirect.node && redirect.node === this.unreachable) {
        // Sent back to a server the relay could not reach: it died and the
        // fleet has not noticed yet. Wait a little instead of bouncing.
        this.bounce = Math.min(Math.max(2 * this.bounce, this.opts.backoffInitial), this.opts.backoffMax);
        delay = Math.round(this.bounce * (0.5 + Math.random() / 2));
      }
    } else if (code === CloseCode.RateLimited) {
      delay = this.retryDelay(this.opts.backoffMax); // the limit counts per window: wait it out
    } else if (welcomed && Date.now() - this.welcomedAt >= stable) {
      // A drop: back at once, into the same seat. Only a connection that
      // lasted resets the backoff: a server that welcomes and closes at
      // once is not hammered.
      this.backoff = 0;
      delay = 0;
    } else {
      delay = this.retryDelay();
    }
    if (!welcomed && code === CloseCode.BadTicket) {
      this.query = ""; // the redirect's ticket and query were spent
    }
    this.emit("closed", { code, reason, reconnecting: true, delay });
    this.schedule(delay);
  }
}

// playURL turns the configured address into the WebSocket URL without
// ticket or node.
function playURL(u: string | URL): URL {
  const loc = (globalThis as any).location?.href as string | undefined;
  const url = new URL(String(u), loc);
  if (url.protocol === "http:") url.protocol = "ws:";
  else if (url.protocol === "https:") url.protocol = "wss:";
  if (url.protocol !== "ws:" && url.protocol !== "wss:") {
    throw new Error(`muster: url ${url} is not ws:, wss:, http: or https:`);
  }
  url.hash = "";
  return url;
}
