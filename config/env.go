package config

import (
	"reflect"
	"strings"
)

const envPrefix = "MUSTER__"

// ApplyEnv overrides c with the MUSTER__ variables of environ (as
// os.Environ returns it), such as MUSTER__SERVER__FLEET__REDIS=redis:6379:
// a double underscore between levels, a single underscore for a dash inside
// a key, names matched without regard to case. Other variables are ignored.
// An unknown MUSTER__ variable, a value of the wrong type, or a key set by
// two variables is an *Error naming the variable, and leaves c unchanged.
// ApplyEnv does not validate: call Validate after it.
func ApplyEnv(c *Config, environ []string) error {
	l := &loader{cfg: *c, origins: make(map[string]origin)}
	if err := l.env(environ); err != nil {
		return err
	}
	*c = l.cfg
	return nil
}

func (l *loader) env(environ []string) error {
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || len(name) < len(envPrefix) || !strings.EqualFold(name[:len(envPrefix)], envPrefix) {
			continue
		}
		keys := strings.Split(strings.ToLower(name[len(envPrefix):]), "__")
		for i, k := range keys {
			keys[i] = strings.ReplaceAll(k, "_", "-")
		}
		path := "muster." + strings.Join(keys, ".")
		at := origin{Var: name}
		v := reflect.ValueOf(&l.cfg).Elem()
		for _, k := range keys {
			f, ok := field(v, k)
			if !ok {
				return at.errorf(ErrUnknownKey, path, "unknown key")
			}
			v = f
		}
		if v.Kind() == reflect.Struct {
			return at.errorf(ErrUnknownKey, path, "names a section, not a setting")
		}
		if prev := l.origins[path].Var; prev != "" {
			return at.errorf(ErrInvalid, path, "also set by %s", oneLine(prev))
		}
		l.origins[path] = at
		if err := set(v, value); err != nil {
			return at.errorf(ErrInvalid, path, "%v", err)
		}
	}
	return nil
}
