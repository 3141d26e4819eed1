package room

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/internal/testkit/playtest"
)

// A close reason is valid UTF-8 and fits a close frame, whatever the text
// it was made from: RFC 6455 fails a connection whose close reason is not
// UTF-8 (browsers do, and so does the relay), and the player then loses
// the close code that says why it was cut.
func TestCloseReasonIsValidUTF8(t *testing.T) {
	h, srv := startHost(t, Config{})
	c := playtest.DialPlayer(t, srv.URL, h.Tickets(), "p1", "")
	c.Welcome("new")
	// The reason names the type: cut by bytes, it would end inside an é.
	c.SendText(`{"type":"a` + strings.Repeat("é", 60) + `","data":{}}`)
	var ce websocket.CloseError
	for {
		_, err := c.Receive()
		if err == nil {
			continue
		}
		if !errors.As(err, &ce) {
			t.Fatalf("read: %v, want a close frame", err)
		}
		break
	}
	if ce.Code != StatusUnknownType || !utf8.ValidString(ce.Reason) || len(ce.Reason) > 123 {
		t.Fatalf("close %d %q, want %d with a valid UTF-8 reason of at most 123 bytes", ce.Code, ce.Reason, StatusUnknownType)
	}

	for _, s := range []string{"a" + strings.Repeat("é", 60), strings.Repeat("€", 50), "\xff\xfeabc", strings.Repeat("x", 200)} {
		if got := closeReason(s); !utf8.ValidString(got) || len(got) > 123 {
			t.Errorf("closeReason(%q) = %q", s, got)
		}
	}
	if got := truncate("a"+strings.Repeat("é", 60), 120); !utf8.ValidString(got) || len(got) > 120 {
		t.Errorf("truncate cut inside a rune: %q", got)
	}
}
