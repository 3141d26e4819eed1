package federation

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode"
	"unicode/utf8"
)

// newHomeClient returns the default client of requests to home. It follows
// no redirect: home's API answers in place, and a redirect would carry a
// key to another port or from https to plain http on the same host, which
// Go's client keeps the Authorization header for.
func newHomeClient() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// postJSON POSTs body as JSON to home's path with key, bounded by
// Timeout, and decodes the answer into out.
func (n *Node) postJSON(ctx context.Context, path, key string, body, out any) error {
	data, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.Timeout)
	defer cancel()
	return n.call(ctx, path, key, "application/json", bytes.NewReader(data), int64(len(data)), out)
}

// call POSTs body to home and decodes the JSON answer into out; an error
// answer becomes a *HomeError.
func (n *Node) call(ctx context.Context, path, key, contentType string, body io.Reader, size int64, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.base.JoinPath(path).String(), body)
	if err != nil {
		return err
	}
	req.ContentLength = size
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", contentType)
	return doJSON(n.cfg.HTTPClient, req, out)
}

// The bounds on the code and the message of home's error answers, which
// a HomeError carries into errors and log lines.
const (
	maxErrorCode    = 64
	maxErrorMessage = 256
)

// printable returns s as one line of valid UTF-8 of at most max bytes:
// invalid bytes and control characters become U+FFFD, and a longer s is
// cut at a rune boundary and ends with "…".
func printable(s string, max int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '\uFFFD'
		}
		return r
	}, s)
	if len(s) <= max {
		return s
	}
	const ellipsis = "…"
	cut := max - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}

// maxAnswer bounds the answers of home that doJSON reads.
const maxAnswer = 1 << 20

// doJSON sends req and decodes a JSON answer of at most maxAnswer bytes;
// a longer one is an error, read no further.
func doJSON(c *http.Client, req *http.Request, out any) error {
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	// The read ends with req's context even when the body does not heed
	// it: after 101 Switching Protocols the body is the connection itself.
	stop := context.AfterFunc(req.Context(), func() { resp.Body.Close() })
	defer stop()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		if cerr := req.Context().Err(); cerr != nil {
			err = cerr
		}
		return fmt.Errorf("read answer: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		he := &HomeError{Status: resp.StatusCode}
		var eb errorBody
		if json.Unmarshal(data, &eb) == nil {
			// Home's words go into errors and logs: bounded, one line.
			he.Code, he.Message = printable(eb.Code, maxErrorCode), printable(eb.Error, maxErrorMessage)
		}
		return he
	}
	if len(data) > maxAnswer {
		return fmt.Errorf("read answer: over %d bytes", maxAnswer)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("decode answer: %w", err)
	}
	return nil
}
