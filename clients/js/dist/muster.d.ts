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
export type QueuePacket = {
    type: "queue.waiting";
    playlist: string;
    waited_ms: number;
    node?: string;
} | {
    type: "queue.left";
    playlist: string;
} | {
    type: "queue.error";
    error: string;
};
/** A packet of the lobby module. */
export type LobbyPacket = {
    type: "lobby.state";
    code: string;
    host: string;
    members: string[];
    playing: boolean;
    room?: string;
    node?: string;
} | {
    type: "lobby.left";
    code: string;
} | {
    type: "lobby.error";
    error: string;
};
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
    onmessage: ((ev: {
        data: any;
    }) => void) | null;
    onclose: ((ev: {
        code: number;
        reason: string;
    }) => void) | null;
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
export declare const CloseCode: {
    /** A redirect: the session follows it. */
    readonly Normal: 1000;
    /** The server stops, or cut a client that did not answer its ping. */
    readonly GoingAway: 1001;
    /** A frame above the server's read limit. */
    readonly MessageTooBig: 1009;
    /** The ticket could not be checked now. */
    readonly TryAgainLater: 1013;
    readonly BadHello: 4000;
    readonly BadTicket: 4001;
    readonly BadPacket: 4002;
    readonly UnknownType: 4003;
    readonly Replaced: 4004;
    readonly RateLimited: 4005;
    readonly TooSlow: 4006;
};
type Listener<T> = (ev: T) => void;
/**
 * connect starts a session and returns it at once; it connects in the
 * background and keeps connecting until close is called or the server
 * closes with a code that retrying cannot help (closed with reconnecting
 * false).
 */
export declare function connect<State extends Packet = Packet>(opts: ConnectOptions): Session<State>;
/**
 * A Session is one player's presence on the fleet, across connections:
 * redirects, drops and rejoins. Its methods never throw for a connection
 * that is down: messages other than inputs wait for the next welcome.
 */
export declare class Session<State extends Packet = Packet> {
    /** The player id: the option's until the first welcome, the server's after. */
    player: string;
    /** The server that welcomed the current or last connection ("" before). */
    node: string;
    /** The room the player is seated in, or "". */
    room: string;
    /** How many redirects the session followed. */
    redirects: number;
    /** Whether the current connection is welcomed. */
    connected: boolean;
    private readonly base;
    private readonly opts;
    private readonly WS;
    private listeners;
    private socket;
    private outbox;
    private inputs;
    private asking;
    private resend;
    private createdAgain;
    private mode;
    private hint;
    private param;
    private query;
    private nextTicket;
    private redirected;
    private unreachable;
    private backoff;
    private bounce;
    private welcomedAt;
    private last;
    private timer;
    private stopped;
    private ended;
    private end;
    constructor(opts: ConnectOptions);
    /** Adds a listener for an event and returns a function that removes it. */
    on<K extends keyof SessionEvents<State>>(event: K, fn: Listener<SessionEvents<State>[K]>): () => void;
    /** Resolves with the current connection's welcome, or the next one. */
    welcomed(): Promise<Welcome>;
    /**
     * Sends a message {type, data}. While the session is between
     * connections an input is dropped (it would be stale), or kept as
     * ConnectOptions.whileReconnecting says, and any other message is sent
     * after the next welcome.
     */
    send(type: string, data?: unknown): void;
    /** Queues the player on a playlist; rating is optional. */
    queue(playlist: string, rating?: number): void;
    /** Takes the player out of its queue. */
    unqueue(): void;
    /** Creates a lobby with the player as its host; its code comes with the lobby event. */
    createLobby(): void;
    /** Joins the lobby of a code, on whichever server holds it. */
    joinLobby(code: string): void;
    /** Leaves the player's lobby. */
    leaveLobby(): void;
    /** As the lobby's host, opens a room for its members. */
    startLobby(): void;
    /** Gives up the player's seat for good: its room ends for it ("left"). */
    leave(): void;
    /**
     * Closes the session: no reconnect. The seat stays until the room ends
     * (call leave first to give it up). Resolves when the connection is
     * closed.
     */
    close(): Promise<void>;
    /** Resolves when the session has stopped for good. */
    done(): Promise<void>;
    private emit;
    private finish;
    private schedule;
    private retryDelay;
    private open;
    private welcome;
    private dispatch;
    private keep;
    private flush;
    private follow;
    private closed;
}
export {};
