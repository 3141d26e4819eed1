// Package defaults fills the zero fields of a package's Config from the
// package's documented defaults, so that each default is written once: in
// the package's DefaultConfig.
package defaults

import "reflect"

// Fill sets every zero field of *c to the same field of d, going into
// fields that are structs (nested sections such as room.Limits) field by
// field. Unexported fields are left alone. c must point to a struct.
func Fill[T any](c *T, d T) {
	fill(reflect.ValueOf(c).Elem(), reflect.ValueOf(d))
}

func fill(v, d reflect.Value) {
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case !f.CanSet():
		case f.Kind() == reflect.Struct:
			fill(f, d.Field(i))
		case f.IsZero():
			f.Set(d.Field(i))
		}
	}
}
