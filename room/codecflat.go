package room

import (
	"bytes"
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// JSON.Unmarshal's fast path for the message a game most often defines:
// a flat struct of numbers, booleans and plain strings, such as an input
// ({"dx":1,"dy":0}). encoding/json finds each field by reflection and
// case-folding on every message; a flatPlan is found once per type and
// then reads a body written the plain way (no white space, keys spelled
// as the fields' names, no escapes, no null) field by field. Any other
// body, and any other type, goes to encoding/json, so what a message
// decodes to, and which messages are refused, is unchanged.

// flatField is one field of a flat struct: its JSON name and index.
type flatField struct {
	name  string
	index int
	kind  reflect.Kind
}

// flatPlan is how to decode one struct type; nil when the type is not
// flat and goes to encoding/json.
type flatPlan struct{ fields []flatField }

var flatPlans sync.Map // reflect.Type -> *flatPlan (nil for a type that is not flat)

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// planFor returns t's plan, made on first use.
func planFor(t reflect.Type) *flatPlan {
	if p, ok := flatPlans.Load(t); ok {
		return p.(*flatPlan)
	}
	p := makePlan(t)
	flatPlans.Store(t, p)
	return p
}

func makePlan(t reflect.Type) *flatPlan {
	if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	p := &flatPlan{}
	seen := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || f.Anonymous {
			return nil
		}
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
			reflect.Float32, reflect.Float64, reflect.Bool, reflect.String:
		default:
			return nil
		}
		if f.Type.Name() != f.Type.Kind().String() || f.Type.PkgPath() != "" {
			return nil // a named type may have methods of its own
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, opts, _ := strings.Cut(tag, ",")
			if n == "-" || (opts != "" && opts != "omitempty" && opts != "omitzero") {
				return nil
			}
			if n != "" {
				name = n
			}
		}
		lower := strings.ToLower(name)
		if seen[lower] || !plainKey(name) {
			return nil // names that fold alike: encoding/json's rules decide
		}
		seen[lower] = true
		p.fields = append(p.fields, flatField{name: name, index: i, kind: f.Type.Kind()})
	}
	return p
}

// plainKey reports whether a name is printable ASCII without a quote or
// backslash: the keys the fast path compares byte for byte.
func plainKey(s string) bool {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x7F || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// decode reads body and reports whether it is plain; with set, it also
// sets v's fields. A body is read once without set first, so that v is
// left as it was when encoding/json is to take the body instead.
func (p *flatPlan) decode(body []byte, v reflect.Value, set bool) bool {
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' {
		return false
	}
	b := body[1 : len(body)-1]
	for len(b) > 0 {
		if b[0] != '"' {
			return false
		}
		q := bytes.IndexByte(b[1:], '"')
		if q < 0 || len(b) < q+3 || b[q+2] != ':' {
			return false
		}
		key := b[1 : q+1]
		b = b[q+3:]
		var f *flatField
		for i := range p.fields {
			if p.fields[i].name == string(key) {
				f = &p.fields[i]
				break
			}
		}
		if f == nil {
			return false // unknown, or spelled otherwise: encoding/json's matching decides
		}
		end := bytes.IndexByte(b, ',')
		if end < 0 {
			end = len(b)
		}
		if !setFlat(v.Field(f.index), f.kind, b[:end], set) {
			return false
		}
		b = b[end:]
		if len(b) > 0 {
			b = b[1:] // the comma
			if len(b) == 0 {
				return false // a trailing comma
			}
		}
	}
	return true
}

// setFlat sets one field from its JSON literal, written the plain way.
func setFlat(fv reflect.Value, kind reflect.Kind, lit []byte, set bool) bool {
	switch kind {
	case reflect.Bool:
		switch string(lit) {
		case "true", "false":
			if set {
				fv.SetBool(lit[0] == 't')
			}
		default:
			return false
		}
	case reflect.String:
		if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
			return false
		}
		s := lit[1 : len(lit)-1]
		for _, c := range s {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				return false
			}
		}
		if set {
			fv.SetString(string(s))
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if !plainInteger(lit) {
			return false
		}
		n, err := strconv.ParseInt(string(lit), 10, 64)
		if err != nil || fv.OverflowInt(n) {
			return false
		}
		if set {
			fv.SetInt(n)
		}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if !plainInteger(lit) || lit[0] == '-' {
			return false
		}
		n, err := strconv.ParseUint(string(lit), 10, 64)
		if err != nil || fv.OverflowUint(n) {
			return false
		}
		if set {
			fv.SetUint(n)
		}
	case reflect.Float32, reflect.Float64:
		if !plainNumber(lit) {
			return false
		}
		bits := 64
		if kind == reflect.Float32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(string(lit), bits)
		if err != nil || fv.OverflowFloat(f) {
			return false
		}
		if set {
			fv.SetFloat(f)
		}
	default:
		return false
	}
	return true
}

// plainInteger reports whether lit is -?(0|[1-9][0-9]*).
func plainInteger(lit []byte) bool {
	s := lit
	if len(s) > 0 && s[0] == '-' {
		s = s[1:]
	}
	if len(s) == 0 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// plainNumber reports whether lit is a JSON number: an integer part as
// plainInteger's, then an optional fraction and exponent.
func plainNumber(lit []byte) bool {
	i := 0
	if i < len(lit) && lit[i] == '-' {
		i++
	}
	digits := func() int {
		j := i
		for i < len(lit) && lit[i] >= '0' && lit[i] <= '9' {
			i++
		}
		return i - j
	}
	start := i
	if n := digits(); n == 0 || (n > 1 && lit[start] == '0') {
		return false
	}
	if i < len(lit) && lit[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(lit)
}

// unmarshalFlat decodes body into v by its type's plan, and reports
// whether it did.
func unmarshalFlat(body []byte, v any) bool {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return false
	}
	e := rv.Elem()
	p := planFor(e.Type())
	if p == nil {
		return false
	}
	if !p.decode(body, e, false) {
		return false
	}
	return p.decode(body, e, true)
}
