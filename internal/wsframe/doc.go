// Package wsframe reads and writes the frame headers of WebSocket (RFC
// 6455 section 5.2), for the parts of Muster that handle frames
// themselves on their hot paths: the room's event loop, the relay's
// pumps, the load generator.
//
// It holds only what every endpoint shares: the opcodes, the header's
// layout, the rules of RFC 6455 that hold whoever sends a frame (no
// reserved bit set, as no extension is negotiated; a known opcode; a
// control frame final and short) and masking. What depends on the
// endpoint stays with its caller: whether frames must be masked, the
// order of a message's frames, a read limit.
//
// Everything here is a pure function of its arguments, safe for
// concurrent use, and allocates nothing.
package wsframe
