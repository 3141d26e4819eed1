package fleet

import (
	"bytes"
	"context"
	"log/slog"
	"reflect"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

func FuzzVerify(f *testing.F) {
	key := recordKey([]byte("0123456789abcdef"))
	rec := Node{ID: "a", InternalAddress: "10.0.0.1:7000", State: StateReady}.encode()
	f.Add(sign(key, rec))
	f.Add(rec)
	f.Add([]byte(`{"id":"a","sig":"00"}`))
	f.Add(sign(recordKey([]byte("another key, 16b")), rec))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := verify(key, data)
		if ok && !bytes.Equal(sign(key, got), data) {
			t.Fatalf("verify took %q, which is not what signing %q gives", data, got)
		}
		if _, ok := verify(nil, data); !ok {
			t.Fatalf("without a key %q is refused", data)
		}
		if len(data) > 1 && data[len(data)-1] == '}' {
			if got, ok := verify(key, sign(key, data)); !ok || !bytes.Equal(got, data) {
				t.Fatalf("signed %q does not verify: %q, %v", data, got, ok)
			}
		}
	})
}

// FuzzRecords files an arbitrary record under an arbitrary id beside this
// server's: a heartbeat keeps it only as the node it is filed under, and,
// with a key, only when it is signed.
func FuzzRecords(f *testing.F) {
	key := []byte("0123456789abcdef")
	rec := Node{ID: "b", InternalAddress: "10.0.0.2:7000", State: StateReady, MaxLoad: 5}.encode()
	f.Add("b", rec, false)
	f.Add("b", sign(recordKey(key), rec), true)
	f.Add("b", sign(recordKey(key), []byte(`{"id":"b","load":-9,"max_load":-1,"stats":{"x":1}}`)), true)
	f.Add("a", []byte(`{"id":"a","state":"draining"}`), false)
	f.Fuzz(func(t *testing.T, id string, data []byte, keyed bool) {
		cfg := Config{NodeID: "a"}
		if keyed {
			cfg.Key = key
		}
		ctx, bp := context.Background(), memory.New()
		defer bp.Close()
		if _, _, err := bp.Heartbeat(ctx, backplane.Node{ID: id, Data: data}, time.Minute); err != nil || id == "a" {
			return // the backplane refuses the id, or this server writes over it
		}
		fl, err := New(cfg, bp, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		if err := fl.step(ctx); err != nil {
			t.Fatal(err)
		}
		rec, signed := verify(recordKey(cfg.Key), data)
		want, ok := decodeNode(id, rec)
		got, in := fl.Node(id)
		if in != (signed && ok) || in && !reflect.DeepEqual(got, want) {
			t.Fatalf("record %q under %q: in view %v as %+v; signed %v, decodes %v", data, id, in, got, signed, ok)
		}
		Ranked(id, fl.Nodes(), Node.HasRoom)
		fl.InternalAddress(id)
	})
}
