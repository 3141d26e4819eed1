package config

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// keys returns every dotted key path of Config, sections and settings,
// in the order of the struct fields.
var keys = sync.OnceValue(func() []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("yaml")
			if name == "" || name == "-" {
				continue
			}
			p := path + "." + name
			out = append(out, p)
			switch {
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, p)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				walk(f.Type.Elem(), p+".0") // the items' keys, as item 0
			}
		}
	}
	walk(reflect.TypeFor[Config](), "muster")
	return out
})

// nearestKey returns the known key path nearest to the unknown one, or ""
// when none is near: one a few edits away, or the only one that ends in the
// same name (muster.server.redis for muster.server.fleet.redis).
func nearestKey(unknown string) string {
	// An item's keys are known as item 0's: compare as item 0, and name
	// the item asked about.
	segs := strings.Split(strings.ToLower(unknown), ".")
	var items []int // positions of item numbers
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			items = append(items, i)
		}
	}
	if len(items) == 0 {
		return nearestPath(strings.Join(segs, "."))
	}
	orig := slices.Clone(segs)
	for _, i := range items {
		segs[i] = "0"
	}
	best := strings.Split(nearestPath(strings.Join(segs, ".")), ".")
	for _, i := range items {
		if i < len(best) && best[i] == "0" {
			best[i] = orig[i]
		}
	}
	return strings.Join(best, ".")
}

// nearestPath is nearestKey for a path without item numbers.
func nearestPath(unknown string) string {
	best, bestDist := "", 3+len(unknown)/10
	for _, k := range keys() {
		if d := editDistance(unknown, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	if bestDist <= 1 {
		return best // a typo
	}
	_, last := cutLast(unknown)
	var same []string
	for _, k := range keys() {
		if _, l := cutLast(k); l == last {
			same = append(same, k)
		}
	}
	if len(same) == 1 {
		return same[0] // the right name at the wrong level
	}
	return best
}

// nearestVar returns the setting a MUSTER_ variable with single
// underscores probably meant (MUSTER_SERVER_HTTP_PORT:
// muster.server.http.port), or "".
func nearestVar(name string) string {
	flat := func(k string) string { return strings.ReplaceAll(EnvName(k), "__", "_") }
	name = strings.ToUpper(name)
	best, bestDist := "", 3
	var tail []string
	for _, k := range keys() {
		f := flat(k)
		if d := editDistance(name, f); d < bestDist {
			best, bestDist = k, d
		}
		if rest := strings.TrimPrefix(name, "MUSTER_"); strings.HasSuffix(f, "_"+rest) {
			tail = append(tail, k)
		}
	}
	if best == "" && len(tail) == 1 {
		best = tail[0]
	}
	return best
}

// cutLast splits a dotted path at its last dot.
func cutLast(path string) (string, string) {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i], path[i+1:]
	}
	return "", path
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	if len(a) > 256 || len(b) > 256 {
		return max(len(a), len(b)) // not a near miss; keep the work bounded
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// didYouMean returns "; did you mean KEY?" for an unknown key path, with
// the key as the environment writes it when env is set, or "".
func didYouMean(unknown string, env bool) string {
	k := nearestKey(unknown)
	switch {
	case k == "":
		return ""
	case env:
		return "; did you mean " + EnvName(k) + "?"
	}
	return "; did you mean " + k + "?"
}
