package fleet

import (
	"bytes"
	"testing"
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
