package config

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads the configuration: Default, overridden by the file at path
// ("" for none), overridden by the MUSTER__ variables of environ (pass
// os.Environ(); nil for none), then validated. Errors other than an
// unreadable file are *Error.
func Load(path string, environ []string) (Config, error) {
	l := newLoader(path)
	if path != "" {
		data, err := os.ReadFile(path)
		if err != nil {
			return Config{}, fmt.Errorf("config: %w", err)
		}
		if err := l.file(data); err != nil {
			return Config{}, err
		}
	}
	return l.finish(environ)
}

// Parse is Load for file content already in memory: Default, overridden by
// data (which must hold the root key muster), overridden by environ, then
// validated.
func Parse(data []byte, environ []string) (Config, error) {
	l := newLoader("")
	if err := l.file(data); err != nil {
		return Config{}, err
	}
	return l.finish(environ)
}

// A loader builds a Config and remembers where each key's value came from,
// so that Validate's errors can point there.
type loader struct {
	cfg     Config
	path    string
	origins map[string]origin // by dotted key path
}

func newLoader(path string) *loader {
	return &loader{cfg: Default(), path: path, origins: make(map[string]origin)}
}

func (l *loader) finish(environ []string) (Config, error) {
	if err := l.env(environ); err != nil {
		return Config{}, err
	}
	if err := l.cfg.Validate(); err != nil {
		var e *Error
		if errors.As(err, &e) {
			o := l.origins[e.Key]
			e.Var, e.File, e.Line = o.Var, o.File, o.Line
		}
		return Config{}, err
	}
	return l.cfg, nil
}

// file applies YAML file content.
func (l *loader) file(data []byte) error {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return l.syntaxError(err)
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
		return &Error{File: l.path, Problem: "missing root key muster", Err: ErrNoRoot}
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
			return keyAt.errorf(ErrUnknownKey, key, "unknown key")
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

// syntaxError turns a yaml.v3 error ("yaml: line 3: could not find
// expected ':'") into an *Error.
func (l *loader) syntaxError(err error) error {
	e := &Error{File: l.path, Problem: strings.TrimPrefix(err.Error(), "yaml: "), Err: ErrSyntax}
	if rest, ok := strings.CutPrefix(e.Problem, "line "); ok {
		num, problem, _ := strings.Cut(rest, ": ")
		if line, err := strconv.Atoi(num); err == nil && problem != "" {
			e.Line, e.Problem = line, problem
		}
	}
	return e
}

// field returns the field of v whose yaml tag is name, if v is a struct.
func field(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	t := v.Type()
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == name {
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
			return fmt.Errorf("want an integer, got %q", s)
		}
		*p = n
	case *Duration:
		d, err := parseDuration(s)
		if err != nil {
			return err
		}
		*p = d
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
	return strconv.Quote(n.Value)
}
