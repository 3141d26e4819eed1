package room

import (
	"fmt"
	"reflect"
	"regexp"
)

// A game's and a module's optional hooks are interfaces the host finds by
// type assertion: a method named like a hook's but of another signature,
// or declared on *T for a T, or missing its companion (MessageHandler has
// two methods) makes the assertion fail, and the hook is never called.
// checkHooks finds those methods, so New and Use can refuse them.

// hookSubject is what checkHooks checks, as its errors name it.
type hookSubject struct {
	err   error  // the sentinel the errors wrap
	name  string // whose methods: "game", "module *lobby.Module"
	taker string // the function that was given the value
	// byInterface names a hook by its interface (room.Runner) rather than
	// by its method (AfterSteps): a module's hooks have several methods,
	// or methods whose names say little on their own (Run, Release).
	byInterface bool
}

// gameSubject is the game given to New.
var gameSubject = hookSubject{err: ErrHook, name: "game", taker: "New"}

// moduleSubject is module m given to Use.
func moduleSubject(m Module) hookSubject {
	return hookSubject{err: ErrModuleHook, name: "module " + typeName(reflect.TypeOf(m)), taker: "Use", byInterface: true}
}

// checkHooks returns an error wrapping s.err for the first of hooks (the
// optional interfaces, of one method or more) that v claims but does not
// implement. v claims a hook when its type or its pointer type has a
// method named like one of the hook's own: those it does not take from
// another of hooks that it extends (fleet.LastDrainer is claimed by
// DrainLast, not by the Drain of fleet.Drainer). v does not implement it
// when that method or another of the hook's has another signature, is
// missing, or is declared on *T and v is a T, whose method set lacks it.
func checkHooks(v any, s hookSubject, hooks []reflect.Type) error {
	t := reflect.TypeOf(v)
	if t == nil {
		return nil
	}
	set := t // the methods v would have as a pointer
	if t.Kind() != reflect.Pointer {
		set = reflect.PointerTo(t)
	}
	for _, hook := range hooks {
		if t.Implements(hook) {
			continue
		}
		if by := claimedBy(set, hook, hooks); by != "" {
			return s.unmatched(t, set, hook, by)
		}
	}
	return nil
}

// claimedBy returns the name of the first method of set that claims hook
// (one of hook's own, see checkHooks), or "".
func claimedBy(set, hook reflect.Type, hooks []reflect.Type) string {
	for i := range hook.NumMethod() {
		name := hook.Method(i).Name
		if _, ok := set.MethodByName(name); ok && !inherited(name, hook, hooks) {
			return name
		}
	}
	return ""
}

// inherited reports whether hook has method name from another of hooks
// that it extends.
func inherited(name string, hook reflect.Type, hooks []reflect.Type) bool {
	for _, other := range hooks {
		if other == hook || !hook.Implements(other) {
			continue
		}
		if _, ok := other.MethodByName(name); ok {
			return true
		}
	}
	return false
}

// unmatched is the error for hook, which t (whose pointer's method set is
// set) claims by its method by but does not implement.
func (s hookSubject) unmatched(t, set, hook reflect.Type, by string) error {
	for i := range hook.NumMethod() {
		want := hook.Method(i)
		got, ok := set.MethodByName(want.Name)
		if !ok {
			return fmt.Errorf("%w: %s has method %s but no %s; want %s %s too to be called as the %s hook",
				s.err, s.name, by, want.Name, want.Name, typeName(want.Type), s.hookName(hook, want))
		}
		if sig := methodSignature(got); sig != want.Type {
			return fmt.Errorf("%w: %s method %s has signature %s; want %s to be called as the %s hook",
				s.err, s.name, want.Name, typeName(sig), typeName(want.Type), s.hookName(hook, want))
		}
	}
	// set implements hook and t does not: t is a T, with a method of the
	// hook declared on *T.
	for i := range hook.NumMethod() {
		want := hook.Method(i)
		if _, ok := t.MethodByName(want.Name); !ok {
			return fmt.Errorf("%w: %s method %s is declared on %s, but %s was given a %s, whose method set lacks it; pass a %s to have it called as the %s hook",
				s.err, s.name, want.Name, typeName(set), s.taker, typeName(t), typeName(set), s.hookName(hook, want))
		}
	}
	return fmt.Errorf("%w: %s does not implement the %s hook", s.err, s.name, typeName(hook)) // not reached
}

// hookName is how errors name hook, whose method m is in question.
func (s hookSubject) hookName(hook reflect.Type, m reflect.Method) string {
	if s.byInterface {
		return typeName(hook)
	}
	return m.Name
}

// methodSignature is the signature of method m of a concrete type, as it
// is called: without its receiver.
func methodSignature(m reflect.Method) reflect.Type {
	ft := m.Type
	in := make([]reflect.Type, 0, ft.NumIn()-1)
	for i := 1; i < ft.NumIn(); i++ {
		in = append(in, ft.In(i))
	}
	out := make([]reflect.Type, ft.NumOut())
	for i := range out {
		out[i] = ft.Out(i)
	}
	return reflect.FuncOf(in, out, ft.IsVariadic())
}

// importPath matches the import path before a package name in a type's
// name: reflect spells the type arguments of a generic type with theirs
// (room.Room[*example.com/game.Sim,...]).
var importPath = regexp.MustCompile(`(?:[\w.~-]+/)+(\w+\.)`)

// typeName is t's name with package names in place of import paths.
func typeName(t reflect.Type) string {
	return importPath.ReplaceAllString(t.String(), "$1")
}
