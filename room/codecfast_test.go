package room

import (
	"bytes"
	"encoding/json"
	"testing"
)

// slowDecode is JSON.Decode without its fast path: the envelope decoded
// through encoding/json.
func slowDecode(frame []byte) (string, []byte, bool) {
	var env struct {
		Type string          `json:"type"`
		Data json.RawMessage `json:"data"`
	}
	if json.Unmarshal(frame, &env) != nil || env.Type == "" {
		return "", nil, false
	}
	return env.Type, env.Data, true
}

func TestSplitEnvelope(t *testing.T) {
	for _, tc := range []struct {
		name  string
		frame string
		fast  bool // the fast path takes it
	}{
		{"input", `{"type":"input","data":{"x":1,"y":2}}`, true},
		{"no data", `{"type":"leave"}`, true},
		{"array body", `{"type":"t","data":[1,2]}`, true},
		{"number body", `{"type":"input","data":3}`, false},
		{"null body", `{"type":"input","data":null}`, false},
		{"spaces", `{ "type":"input","data":{}}`, false},
		{"escaped type", `{"type":"in\u0070ut","data":{}}`, false},
		{"empty type", `{"type":"","data":{}}`, false},
		{"second key", `{"type":"a","data":{},"type":"b"}`, false},
		{"bad body", `{"type":"a","data":{"x":}}`, false},
		{"trailing", `{"type":"a","data":{}}}`, false},
		{"key order", `{"data":{},"type":"a"}`, false},
		{"not ASCII", `{"type":"é","data":{}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, body, ok := splitEnvelope([]byte(tc.frame))
			if ok != tc.fast {
				t.Fatalf("fast path took %q: %v, want %v", tc.frame, ok, tc.fast)
			}
			if ok {
				st, sb, sok := slowDecode([]byte(tc.frame))
				if !sok || st != typ || !bytes.Equal(sb, body) {
					t.Fatalf("fast path: %q %q; encoding/json: %q %q %v", typ, body, st, sb, sok)
				}
			}
		})
	}
}

// FuzzSplitEnvelope checks the fast path against encoding/json: a frame
// it takes decodes to the same type and body through the envelope.
func FuzzSplitEnvelope(f *testing.F) {
	for _, s := range []string{
		`{"type":"input","data":{"dx":1,"dy":0}}`, `{"type":"leave"}`, `{"type":"a","data":[]}`,
		`{"type":"a","data":{},"x":1}`, `{"type":"a","data":{}} `, `{"type":"\"","data":{}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		typ, body, ok := splitEnvelope(frame)
		if !ok {
			return
		}
		st, sb, sok := slowDecode(frame)
		if !sok || st != typ || !bytes.Equal(sb, body) {
			t.Fatalf("frame %q: fast path %q %q; encoding/json %q %q %v", frame, typ, body, st, sb, sok)
		}
	})
}
