package room

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"testing"

	"github.com/coder/websocket"
)

// TestBrokeProtocol: of the errors a read on the portable path gives,
// only coder/websocket's for a frame that broke RFC 6455 fail the
// connection; the end of the connection, however it came, and a message
// too big do not.
func TestBrokeProtocol(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("failed to get reader: failed to read frame header: %w", err) }
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"reserved bits", wrap(errors.New("received header with unexpected rsv bits set: true:false:false")), true},
		{"an unknown opcode", wrap(errors.New("received unknown opcode opcode(3)")), true},
		{"an unmasked frame", wrap(errors.New("received unmasked frame from client")), true},
		{"the client's close", wrap(fmt.Errorf("received close frame: %w", websocket.CloseError{Code: websocket.StatusNormalClosure})), false},
		{"too big", wrap(websocket.CloseError{Code: websocket.StatusMessageTooBig, Reason: "read limited at 65 bytes"}), false},
		{"the end of the stream", wrap(io.EOF), false},
		{"the end within a frame", wrap(io.ErrUnexpectedEOF), false},
		{"a reset", wrap(&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errors.New("connection reset by peer"))}), false},
		{"closed", wrap(net.ErrClosed), false},
		{"ctx done", wrap(context.Canceled), false},
		{"ctx past its deadline", wrap(context.DeadlineExceeded), false},
	}
	for _, tc := range cases {
		if got := brokeProtocol(tc.err); got != tc.want {
			t.Errorf("%s: brokeProtocol(%q) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
