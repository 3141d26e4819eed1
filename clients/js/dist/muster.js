// Muster's client: one session with a game server fleet. It gets a ticket,
// connects, says hello, follows redirects, rejoins after a drop with
// backoff and jitter, and keeps the server it plays on across reconnects.
// The wire protocol is docs/protocol.md in the Muster repository.
//
// No runtime dependencies: it uses the platform's WebSocket (browsers, and
// Node.js 22 or later; Node.js 20 with --experimental-websocket, or pass
// one as ConnectOptions.WebSocket).
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
};
// Codes after which connecting again cannot help: the client speaks
// another protocol, or another connection took the player's place.
const fatal = new Set([
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
/**
 * connect starts a session and returns it at once; it connects in the
 * background and keeps connecting until close is called or the server
 * closes with a code that retrying cannot help (closed with reconnecting
 * false).
 */
export function connect(opts) {
    return new Session(opts);
}
/**
 * A Session is one player's presence on the fleet, across connections:
 * redirects, drops and rejoins. Its methods never throw for a connection
 * that is down: messages other than inputs wait for the next welcome.
 */
export class Session {
    /** The player id: the option's until the first welcome, the server's after. */
    player;
    /** The server that welcomed the current or last connection ("" before). */
    node = "";
    /** The room the player is seated in, or "". */
    room = "";
    /** How many redirects the session followed. */
    redirects = 0;
    /** Whether the current connection is welcomed. */
    connected = false;
    base;
    opts;
    WS;
    listeners = new Map();
    socket = null;
    outbox = [];
    // Inputs kept while between connections (whileReconnecting), sent after
    // the outbox.
    inputs = [];
    // Requests sent on this connection and not answered yet, by type: a
    // drain redirect that comes first may have crossed them (see follow).
    asking = new Map();
    // Requests to send again after the next welcome, before the outbox.
    resend = new Map();
    // A lobby.create sent again after a drain redirect, until a lobby.error:
    // if the first one went along and made the lobby, the second is told
    // "already in a lobby", which is no news to the game.
    createdAgain = false;
    mode = "new";
    hint;
    param = "node";
    query = "";
    nextTicket = "";
    redirected = null;
    unreachable = "";
    backoff = 0;
    bounce = 0;
    welcomedAt = 0;
    last = null;
    timer = null;
    stopped = false;
    ended;
    end;
    constructor(opts) {
        this.opts = { backoffInitial: 250, backoffMax: 5000, helloTimeout: 10000, whileReconnecting: "drop", inputQueueMax: 32, ...opts };
        if (!["drop", "last", "queue"].includes(this.opts.whileReconnecting)) {
            throw new Error(`muster: whileReconnecting is "drop", "last" or "queue", not ${JSON.stringify(this.opts.whileReconnecting)}`);
        }
        if (!Number.isInteger(this.opts.inputQueueMax) || this.opts.inputQueueMax < 1) {
            throw new Error(`muster: inputQueueMax is a positive integer, not ${JSON.stringify(this.opts.inputQueueMax)}`);
        }
        const WS = opts.WebSocket ?? globalThis.WebSocket;
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
    on(event, fn) {
        let set = this.listeners.get(event);
        if (!set)
            this.listeners.set(event, (set = new Set()));
        set.add(fn);
        return () => set.delete(fn);
    }
    /** Resolves with the current connection's welcome, or the next one. */
    welcomed() {
        if (this.connected && this.last)
            return Promise.resolve(this.last);
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
    send(type, data = {}) {
        const frame = JSON.stringify({ type, data });
        if (this.connected && this.socket?.readyState === OPEN) {
            this.socket.send(frame);
            if (type === "queue" || type === "lobby.create")
                this.asking.set(type, frame);
            else if (type === "unqueue")
                this.asking.delete("queue");
            if (type === "lobby.create")
                this.createdAgain = false; // the game's own, answered as it is
        }
        else if (type !== "input" && !this.stopped) {
            this.outbox.push(frame);
        }
        else if (!this.stopped) {
            this.keep(frame);
        }
    }
    /** Queues the player on a playlist; rating is optional. */
    queue(playlist, rating) {
        this.send("queue", rating === undefined ? { playlist } : { playlist, rating });
    }
    /** Takes the player out of its queue. */
    unqueue() {
        this.send("unqueue");
    }
    /** Creates a lobby with the player as its host; its code comes with the lobby event. */
    createLobby() {
        this.send("lobby.create");
    }
    /** Joins the lobby of a code, on whichever server holds it. */
    joinLobby(code) {
        this.send("lobby.join", { code: code.trim().toUpperCase() });
    }
    /** Leaves the player's lobby. */
    leaveLobby() {
        this.send("lobby.leave");
    }
    /** As the lobby's host, opens a room for its members. */
    startLobby() {
        this.send("lobby.start");
    }
    /** Gives up the player's seat for good: its room ends for it ("left"). */
    leave() {
        this.room = "";
        this.send("leave");
    }
    /**
     * Closes the session: no reconnect. The seat stays until the room ends
     * (call leave first to give it up). Resolves when the connection is
     * closed.
     */
    close() {
        if (!this.stopped) {
            this.stopped = true;
            this.outbox = [];
            this.resend.clear();
            if (this.timer)
                clearTimeout(this.timer);
            const ws = this.socket;
            if (ws && ws.readyState <= OPEN) {
                ws.close(1000, "bye");
            }
            else {
                this.finish();
            }
        }
        return this.ended;
    }
    /** Resolves when the session has stopped for good. */
    done() {
        return this.ended;
    }
    emit(event, value) {
        for (const fn of [...(this.listeners.get(event) ?? [])]) {
            try {
                fn(value);
            }
            catch (err) {
                setTimeout(() => {
                    throw err;
                }); // a listener's bug is reported, and does not break the session
            }
        }
    }
    finish() {
        this.socket = null;
        this.connected = false;
        this.end();
    }
    schedule(delay) {
        if (this.timer)
            clearTimeout(this.timer);
        this.timer = setTimeout(() => {
            this.timer = null;
            void this.open();
        }, delay);
    }
    // retryDelay is the wait before the next attempt after a failed one:
    // doubling from backoffInitial to backoffMax, then a random part of it
    // (between a half and the whole), so that a fleet's players who dropped
    // together do not come back together.
    retryDelay(floor = 0) {
        this.backoff = Math.min(Math.max(2 * this.backoff, this.opts.backoffInitial, floor), this.opts.backoffMax);
        return Math.round(this.backoff * (0.5 + Math.random() / 2));
    }
    async open() {
        if (this.stopped)
            return;
        let ticket = this.nextTicket;
        this.nextTicket = ""; // a ticket is good for one attempt
        if (!ticket) {
            try {
                ticket = await this.opts.ticket();
            }
            catch (err) {
                if (this.stopped)
                    return;
                const delay = this.retryDelay();
                this.emit("closed", { code: 1006, reason: "ticket: " + String(err?.message ?? err), reconnecting: true, delay });
                this.schedule(delay);
                return;
            }
            if (this.stopped)
                return;
        }
        const url = new URL(this.base);
        url.searchParams.set("ticket", ticket);
        let asked = "";
        if (this.query) {
            // The redirect's query names the target and carries its ticket: each
            // of its parameters takes the place of the URL's own of that name.
            new URLSearchParams(this.query).forEach((v, k) => url.searchParams.set(k, v));
            asked = this.hint;
        }
        else if (this.hint) {
            url.searchParams.set(this.param, this.hint);
            asked = this.hint;
        }
        let ws;
        try {
            ws = new this.WS(url.toString());
        }
        catch (err) {
            const delay = this.retryDelay();
            this.emit("closed", { code: 1006, reason: String(err?.message ?? err), reconnecting: true, delay });
            this.schedule(delay);
            return;
        }
        this.socket = ws;
        ws.binaryType = "arraybuffer"; // a binary frame decodes as text, not a Blob
        const mode = this.mode;
        let welcomed = false;
        const helloTimer = setTimeout(() => {
            if (welcomed || this.socket !== ws)
                return;
            this.socket = null;
            ws.close();
            this.closed(1006, "no welcome", false);
        }, this.opts.helloTimeout);
        ws.onopen = () => ws.send(JSON.stringify({ type: "hello", data: { mode } }));
        ws.onerror = () => {
            // A connection that failed before it opened: browsers follow with
            // onclose (1006), some Node.js versions do not. Either way the
            // attempt is over.
            if (this.socket !== ws || ws.readyState === OPEN)
                return;
            clearTimeout(helloTimer);
            this.socket = null;
            try {
                ws.close();
            }
            catch {
                // already closing
            }
            this.closed(1006, "connection failed", false);
        };
        ws.onmessage = (m) => {
            if (this.socket !== ws)
                return;
            let p;
            try {
                p = JSON.parse(typeof m.data === "string" ? m.data : new TextDecoder().decode(m.data));
            }
            catch {
                return; // not ours to judge: the server speaks JSON
            }
            if (!p || typeof p.type !== "string")
                return;
            if (!welcomed) {
                if (p.type !== "welcome")
                    return;
                welcomed = true;
                clearTimeout(helloTimer);
                this.welcome(p, asked);
            }
            this.dispatch(p);
            if (p.type === "welcome")
                this.flush(ws);
        };
        ws.onclose = (e) => {
            clearTimeout(helloTimer);
            if (this.socket !== ws)
                return;
            this.socket = null;
            this.connected = false;
            this.closed(e.code, e.reason ?? "", welcomed);
        };
    }
    welcome(w, asked) {
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
        if (!asked || this.node === asked)
            this.bounce = 0;
        // Keep this server for later reconnects: a drop comes back to it, where
        // the player's room runs, through any server of the fleet.
        if (this.node) {
            this.hint = this.node;
            this.query = "";
        }
    }
    dispatch(p) {
        this.emit("packet", p);
        switch (p.type) {
            case "welcome":
                this.emit("welcome", p);
                break;
            case "room":
                this.room = String(p.room ?? "");
                this.emit("room", p);
                break;
            case "room_end":
                if (p.room === this.room || !p.room)
                    this.room = "";
                this.emit("roomEnd", p);
                break;
            case "state":
                this.emit("state", p);
                break;
            case "redirect":
                this.follow(p);
                break;
            case "server_draining":
                this.emit("draining", p);
                break;
            default:
                if (p.type.startsWith("queue.")) {
                    this.asking.delete("queue");
                    this.emit("queue", p);
                }
                else if (p.type.startsWith("lobby.")) {
                    this.asking.delete("lobby.create");
                    if (p.type === "lobby.error" && this.createdAgain) {
                        this.createdAgain = false;
                        if (p.error === "lobby: already in a lobby")
                            break;
                    }
                    this.emit("lobby", p);
                }
        }
    }
    // keep keeps an input sent between connections, as whileReconnecting
    // says.
    keep(frame) {
        switch (this.opts.whileReconnecting) {
            case "last":
                this.inputs = [frame];
                break;
            case "queue":
                this.inputs.push(frame);
                if (this.inputs.length > this.opts.inputQueueMax)
                    this.inputs.shift();
                break;
        }
    }
    flush(ws) {
        for (const [type, frame] of this.resend) {
            ws.send(frame);
            this.asking.set(type, frame);
        }
        this.resend.clear();
        const out = this.outbox.concat(this.inputs);
        this.outbox = [];
        this.inputs = [];
        for (const frame of out)
            ws.send(frame);
    }
    // follow takes a redirect: the next connection names the target (through
    // the same public address) with the ticket the redirect carries, if any.
    //
    // A drain redirect can cross a queue or lobby.create on the wire: the
    // draining server handles no request once it sends its last players
    // away. One that got no answer is sent again after the next welcome; if
    // it did go along, the second only restarts the wait of a place just
    // taken, or is told the lobby it made exists.
    follow(r) {
        this.redirects++;
        if (r.reason === "drain") {
            for (const [type, frame] of this.asking)
                this.resend.set(type, frame);
            this.createdAgain = this.resend.has("lobby.create");
        }
        this.asking.clear();
        this.redirected = r;
        this.hint = r.node ?? "";
        if (r.param)
            this.param = r.param;
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
    closed(code, reason, welcomed) {
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
        let delay;
        if (redirect) {
            delay = 0;
            if (redirect.node && redirect.node === this.unreachable) {
                // Sent back to a server the relay could not reach: it died and the
                // fleet has not noticed yet. Wait a little instead of bouncing.
                this.bounce = Math.min(Math.max(2 * this.bounce, this.opts.backoffInitial), this.opts.backoffMax);
                delay = Math.round(this.bounce * (0.5 + Math.random() / 2));
            }
        }
        else if (code === CloseCode.RateLimited) {
            delay = this.retryDelay(this.opts.backoffMax); // the limit counts per window: wait it out
        }
        else if (welcomed && Date.now() - this.welcomedAt >= stable) {
            // A drop: back at once, into the same seat. Only a connection that
            // lasted resets the backoff: a server that welcomes and closes at
            // once is not hammered.
            this.backoff = 0;
            delay = 0;
        }
        else {
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
function playURL(u) {
    const loc = globalThis.location?.href;
    const url = new URL(String(u), loc);
    if (url.protocol === "http:")
        url.protocol = "ws:";
    else if (url.protocol === "https:")
        url.protocol = "wss:";
    if (url.protocol !== "ws:" && url.protocol !== "wss:") {
        throw new Error(`muster: url ${url} is not ws:, wss:, http: or https:`);
    }
    url.hash = "";
    return url;
}
