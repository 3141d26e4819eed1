package room

import (
	"fmt"
	"reflect"
)

// Room.Sim returns the room's Sim by value, and the hooks receive it from
// there: with a Sim that is a plain value (a struct, an array, a number, a
// string or a slice), each hook changes a copy and the change is lost
// without a word. New refuses such a Sim (checkSim); a pointer, a map, a
// channel, a function or an interface keep what the hooks write.

// checkSim returns an error wrapping ErrSimKind when values of Sim are
// copies that the game's hooks cannot change through Room.Sim.
func checkSim[Sim any]() error {
	t := reflect.TypeFor[Sim]()
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface, reflect.UnsafePointer:
		return nil
	}
	fix := "*" + typeName(t)
	if t.Kind() == reflect.Struct || t.Kind() == reflect.Array {
		return fmt.Errorf("%w: Sim is the %s %s, which Room.Sim returns as a copy: changes the hooks make to it are lost; make Sim a pointer (%s, NewSim returning &%s{...}) or a map",
			ErrSimKind, t.Kind(), typeName(t), fix, typeName(t))
	}
	return fmt.Errorf("%w: Sim is the %s %s, which Room.Sim returns as a copy: changes the hooks make to it are lost; make Sim a pointer (%s) or a map",
		ErrSimKind, t.Kind(), typeName(t), fix)
}
