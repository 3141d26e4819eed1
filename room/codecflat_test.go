package room

import (
	"encoding/json"
	"reflect"
	"testing"
)

// flatAll has a field of every kind the fast path takes.
type flatAll struct {
	I   int     `json:"i"`
	I8  int8    `json:"i8"`
	U16 uint16  `json:"u16"`
	U   uint64  `json:"u"`
	F32 float32 `json:"f32"`
	F   float64 `json:"f"`
	B   bool    `json:"b,omitempty"`
	S   string  `json:"s"`
	N   int     // no tag: its name
}

type notFlat struct {
	P *int `json:"p"`
}

type foldAlike struct {
	A int `json:"a"`
	B int `json:"A"`
}

func TestUnmarshalFlat(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		fast bool // the fast path takes it
	}{
		{"input", `{"i":-3,"u16":7,"f":1.5e-3,"b":true,"s":"ab","N":4}`, true},
		{"empty", `{}`, true},
		{"all", `{"i":1,"i8":-128,"u16":65535,"u":18446744073709551615,"f32":0.25,"f":-0,"b":false,"s":"","N":0}`, true},
		{"duplicate", `{"i":1,"i":2}`, true},
		{"space", `{"i": 1}`, false},
		{"folded key", `{"I":1}`, false},
		{"unknown key", `{"z":1}`, false},
		{"overflow", `{"i8":128}`, false},
		{"negative uint", `{"u16":-1}`, false},
		{"float into int", `{"i":1.0}`, false},
		{"leading zero", `{"i":01}`, false},
		{"null", `{"i":null}`, false},
		{"escape", `{"s":"a\nb"}`, false},
		{"comma in string", `{"s":"a,b"}`, false},
		{"string number", `{"i":"1"}`, false},
		{"trailing comma", `{"i":1,}`, false},
		{"not an object", `[1]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast := flatAll{S: "before", N: 9}
			slow := fast
			took := unmarshalFlat([]byte(tc.body), &fast)
			if took != tc.fast {
				t.Fatalf("fast path took %s: %v, want %v", tc.body, took, tc.fast)
			}
			if !took && !reflect.DeepEqual(fast, flatAll{S: "before", N: 9}) {
				t.Fatalf("fast path refused %s but changed the value: %+v", tc.body, fast)
			}
			if took {
				if err := json.Unmarshal([]byte(tc.body), &slow); err != nil {
					t.Fatalf("encoding/json refuses what the fast path took: %v", err)
				}
				if !reflect.DeepEqual(fast, slow) {
					t.Fatalf("fast path %+v, encoding/json %+v", fast, slow)
				}
			}
		})
	}
	if planFor(reflect.TypeFor[notFlat]()) != nil || planFor(reflect.TypeFor[foldAlike]()) != nil {
		t.Fatal("a plan for a struct that is not flat, or whose names fold alike")
	}
	var n int
	if unmarshalFlat([]byte(`{}`), &n) {
		t.Fatal("fast path took a non-struct")
	}
}

// FuzzUnmarshalFlat checks the fast path against encoding/json: a body it
// takes decodes to the same value, and one it refuses leaves the value as
// it was.
func FuzzUnmarshalFlat(f *testing.F) {
	for _, s := range []string{
		`{"i":-3,"u16":7,"f":1.5e-3,"b":true,"s":"ab","N":4}`, `{"f32":3.4e39}`, `{"u":18446744073709551616}`,
		`{"i":1,"i":2}`, `{"s":"é"}`, `{"i":-0}`, `{"f":1E+2}`, `{"b":tru}`, `{"i":1}}`, `{"":1}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		before := flatAll{S: "before", N: 9}
		fast, slow := before, before
		if !unmarshalFlat(body, &fast) {
			if fast != before {
				t.Fatalf("refused %q but changed the value: %+v", body, fast)
			}
			return
		}
		if err := json.Unmarshal(body, &slow); err != nil {
			t.Fatalf("took %q, which encoding/json refuses: %v", body, err)
		}
		if fast != slow {
			t.Fatalf("%q: fast path %+v, encoding/json %+v", body, fast, slow)
		}
	})
}

// BenchmarkDecodeInput decodes an input frame as the read loop does:
// "fast" through JSON's fast paths, "encoding/json" as before them.
func BenchmarkDecodeInput(b *testing.B) {
	frame := []byte(`{"type":"input","data":{"x":6553601,"y":6553601}}`)
	type input struct {
		X uint32 `json:"x"`
		Y uint32 `json:"y"`
	}
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, body, err := JSON{}.Decode(frame)
			var in input
			if err != nil || (JSON{}).Unmarshal(body, &in) != nil {
				b.Fatal("decode")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, body, _ := slowDecode(frame)
			var in input
			if json.Unmarshal(body, &in) != nil {
				b.Fatal("decode")
			}
		}
	})
}
