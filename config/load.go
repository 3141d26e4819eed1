package config

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// A Check is a rule on a whole Config beyond Validate's, such as one that
// only the package a setting configures can decide. It returns an *Error
// naming the key (see Invalid), or nil.
type Check func(Config) error

// Load reads the configuration: base (a server's defaults, such as
// muster.DefaultConfig()), overridden by the file at path ("" for none),
// overridden by the MUSTER__ variables of environ (pass os.Environ(); nil
// for none), then checked by each of checks in order and by Validate. An
// *Error from any of them names where its key's value came from. Errors
// other than an unreadable file are *Error, unless a check returns
// another.
func Load(path string, environ []string, base Config, checks ...Check) (Config, error) {
	l := newLoader(path, base)
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		if err := l.file(data); err != nil {
			return Config{}, err
		}
	}
	return l.finish(environ, checks)
}

// Parse is Load for file content already in memory: base, overridden by
// data (which must hold the root key muster), overridden by environ, then
// checked by checks and Validate.
func Parse(data []byte, environ []string, base Config, checks ...Check) (Config, error) {
	l := newLoader("", base)
	if err := l.file(data); err != nil {
		return Config{}, err
	}
	return l.finish(environ, checks)
}

// A loader builds a Config and remembers where each key's value came from,
// so that the checks' errors can point there.
type loader struct {
	cfg      Config
	path     string
	origins  map[string]origin // by dotted key path
	warnings []string
}

func newLoader(path string, base Config) *loader {
	base.warnings = nil
	return &loader{cfg: base, path: path, origins: make(map[string]origin)}
}

func (l *loader) finish(environ []string, checks []Check) (Config, error) {
	if err := l.env(environ); err != nil {
		return Config{}, err
	}
	for _, check := range append(checks[:len(checks):len(checks)], Config.Validate) {
		if err := check(l.cfg); err != nil {
			var e *Error
			if errors.As(err, &e) {
				o := l.origins[e.Key]
				e.Var, e.File, e.Line = o.Var, o.File, o.Line
			}
			return Config{}, err
		}
	}
	l.cfg.warnings = l.warnings
	return l.cfg, nil
}

// file applies YAML file content.
func (l *loader) file(data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return l.syntaxError(data, err)
	}
	root := struct {
		Muster Config `yaml:"muster"`
	}{l.cfg}
	if len(doc.Content) > 0 && doc.Content[0].Kind == yaml.MappingNode {
		if err := l.decode(reflect.ValueOf(&root).Elem(), doc.Content[0], ""); err != nil {
			return err
		}
	}
	if _, ok := l.origins["muster"]; !ok {
		e := &Error{File: l.path, Problem: "missing root key muster", Err: ErrNoRoot}
		if k := nearRoot(&doc); k != nil {
			e.Line, e.Problem = k.Line, fmt.Sprintf("missing root key muster; did you mean muster, not %s?", quote(k.Value))
		}
		return e
	}
	l.cfg = root.Muster
	return nil
}

// decode sets v, a struct of settings or one setting, from the YAML node n
// at the dotted key path. The top level (path "") ignores unknown keys: they
// belong to the game.
func (l *loader) decode(v reflect.Value, n *yaml.Node, path string) error {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	at := origin{File: l.path, Line: n.Line}
	l.origins[path] = at
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return nil // an empty value keeps the default
	case v.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		return l.decodeList(v, n, path)
	case v.Kind() == reflect.Slice:
		return at.errorf(ErrInvalid, path, "want a list, got %s", describe(n))
	case v.Kind() != reflect.Struct && n.Kind == yaml.ScalarNode:
		if err := set(v, n.Value); err != nil {
			return at.errorf(ErrInvalid, path, "%v", err)
		}
		return nil
	case v.Kind() != reflect.Struct:
		return at.errorf(ErrInvalid, path, "want a value, got %s", describe(n))
	case n.Kind != yaml.MappingNode:
		return at.errorf(ErrInvalid, path, "want a mapping, got %s", describe(n))
	}
	seen := make(map[string]bool)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		key := strings.TrimPrefix(path+"."+k.Value, ".")
		keyAt := origin{File: l.path, Line: k.Line}
		f, ok := field(v, k.Value)
		switch {
		case !ok || k.Kind != yaml.ScalarNode:
			if path == "" {
				continue
			}
			return keyAt.errorf(ErrUnknownKey, key, "unknown key%s", didYouMean(key, false))
		case seen[k.Value]:
			return keyAt.errorf(ErrSyntax, key, "key written twice")
		}
		seen[k.Value] = true
		if err := l.decode(f, n.Content[i+1], key); err != nil {
			return err
		}
	}
	return nil
}

// maxItems bounds a list setting, in the file and the environment.
const maxItems = 100

// decodeList sets the list v from the YAML sequence n, replacing the
// default: item i is decoded at path.i over a zero item.
func (l *loader) decodeList(v reflect.Value, n *yaml.Node, path string) error {
	if len(n.Content) > maxItems {
		return origin{File: l.path, Line: n.Line}.errorf(ErrInvalid, path, "want at most %d items, got %d", maxItems, len(n.Content))
	}
	var list reflect.Value
	if len(n.Content) > 0 {
		list = reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	} else {
		list = reflect.Zero(v.Type())
	}
	for i, item := range n.Content {
		if err := l.decode(list.Index(i), item, path+"."+strconv.Itoa(i)); err != nil {
			return err
		}
	}
	v.Set(list)
	return nil
}

// syntaxError turns a yaml.v3 error ("yaml: line 3: could not find
// expected ':'") into an *Error. yaml.v3 often names the line where the
// enclosing mapping began rather than the bad one, so the line is found
// again: it is the one after the longest run of leading lines that still
// parses.
func (l *loader) syntaxError(data []byte, err error) error {
	e := &Error{File: l.path, Problem: strings.TrimPrefix(err.Error(), "yaml: "), Err: ErrSyntax}
	if rest, ok := strings.CutPrefix(e.Problem, "line "); ok {
		num, problem, _ := strings.Cut(rest, ": ")
		if line, err := strconv.Atoi(num); err == nil && problem != "" {
			e.Line, e.Problem = line, problem
			if bad := badLine(data); bad > 0 {
				e.Line = bad
			}
		}
	}
	return e
}

// maxSearchLines bounds badLine's work, which is quadratic in the lines.
const maxSearchLines = 2000

// badLine returns the first line of data after its longest prefix of whole
// lines that parses as YAML, or 0 when it cannot tell.
func badLine(data []byte) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxSearchLines {
		return 0
	}
	end := len(data)
	for n := len(lines) - 1; n >= 0; n-- {
		end -= len(lines[n])
		var doc yaml.Node
		if yaml.Unmarshal(data[:end], &doc) == nil {
			return n + 1
		}
	}
	return 0
}

// field returns the field of v whose yaml tag is name, if v is a struct.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && name != "" && f.Tag.Get("yaml") == name {
			return v.Field(i), true
		}
	}
	return reflect.Value{}, false
}

// set parses s into the setting v.
func set(v reflect.Value, s string) error {
	switch p := v.Addr().Interface().(type) {
	case *string:
		*p = s
	case *int:
		n, err := strconv.Atoi(s)
		if err != nil {
			return fmt.Errorf("want an integer, got %s", quote(s))
		}
		*p = n
	case *Duration:
		d, err := parseDuration(s)
		if err != nil {
			return err
		}
		*p = d
	case *bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return fmt.Errorf("want true or false, got %s", quote(s))
		}
		*p = b
	case *float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("want a number, got %s", quote(s))
		}
		*p = f
	}
	return nil
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	return quote(n.Value)
}

// nearRoot returns a top-level key that looks like a misspelt muster, or
// nil.
func nearRoot(doc *yaml.Node) *yaml.Node {
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil
	}
	m := doc.Content[0]
	for i := 0; i < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && len(k.Value) < 20 && editDistance(strings.ToLower(k.Value), "muster") <= 2 {
			return k
		}
	}
	return nil
}
