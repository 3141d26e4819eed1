package config

import (
	"fmt"
	"reflect"
	"strconv"
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
	c.warnings = append(c.warnings[:len(c.warnings):len(c.warnings)], l.warnings...)
	return nil
}

// ownVars are MUSTER_ variables that are not settings: the muster
// command's own.
var ownVars = map[string]bool{"MUSTER_DRAIN_TOKEN": true}

// singleUnderscore warns of a MUSTER_ variable that looks like a setting
// written with single underscores, which is ignored.
func (l *loader) singleUnderscore(name string) {
	const single = "MUSTER_"
	if len(name) <= len(single) || !strings.EqualFold(name[:len(single)], single) || ownVars[strings.ToUpper(name)] {
		return
	}
	// muster-home's and muster-node's own variables.
	// (MUSTER_HOME alone, an install directory, is not muster.federation.home.)
	if up := strings.ToUpper(name); strings.HasPrefix(up, "MUSTER_HOME") || strings.HasPrefix(up, "MUSTER_NODE_") {
		return
	}
	if k := nearestVar(name); k != "" {
		l.warnings = append(l.warnings, fmt.Sprintf("config: %s is ignored: did you mean %s (%s)? A setting's variable has a double underscore between levels",
			oneLine(name), EnvName(k), k))
	}
}

func (l *loader) env(environ []string) error {
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if len(name) < len(envPrefix) || !strings.EqualFold(name[:len(envPrefix)], envPrefix) {
			l.singleUnderscore(name)
			continue
		}
		keys := strings.Split(strings.ToLower(name[len(envPrefix):]), "__")
		for i, k := range keys {
			keys[i] = strings.ReplaceAll(k, "_", "-")
		}
		path := "muster." + strings.Join(keys, ".")
		at := origin{Var: name}
		v := reflect.ValueOf(&l.cfg).Elem()
		for j, k := range keys {
			if v.Kind() == reflect.Slice {
				i, err := strconv.Atoi(k)
				if err != nil || i < 0 || i >= maxItems || k != strconv.Itoa(i) {
					return at.errorf(ErrUnknownKey, path, "want an item number 0-%d after %s, got %s", maxItems-1, EnvName("muster."+strings.Join(keys[:j], ".")), quote(k))
				}
				v = item(v, i)
				continue
			}
			f, ok := field(v, k)
			if !ok {
				return at.errorf(ErrUnknownKey, path, "unknown key%s", didYouMean(path, true))
			}
			v = f
		}
		switch v.Kind() {
		case reflect.Struct:
			return at.errorf(ErrUnknownKey, path, "names a section, not a setting")
		case reflect.Slice:
			return at.errorf(ErrUnknownKey, path, "names a list; set its items' keys, such as %s__0__%s", oneLine(name), EnvName(firstKey(v.Type().Elem())))
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

// item returns item i of the list v, which it lengthens to hold it. The
// list is copied first, so that a Config that shares it is left as it was.
func item(v reflect.Value, i int) reflect.Value {
	n := max(v.Len(), i+1)
	list := reflect.MakeSlice(v.Type(), n, n)
	reflect.Copy(list, v)
	v.Set(list)
	return list.Index(i)
}

// firstKey returns the yaml name of the first field of the struct type t.
func firstKey(t reflect.Type) string {
	if t.Kind() == reflect.Struct && t.NumField() > 0 {
		return t.Field(0).Tag.Get("yaml")
	}
	return ""
}
