package muster

import (
	"fmt"
	"reflect"
	"slices"
)

// copyFields sets each field of *dst from the field of the same name of
// src, converting between the ways the two spell a value (config.Duration
// and time.Duration, int and int64), and going into the fields that are
// structs on both sides (muster.room.limits and room.Limits). It is how a
// section of config.yml becomes a package's Config and back, so that the
// mapping is written once. A field on one side only must be named in
// only; any other field without a counterpart panics, as a setting would
// otherwise be dropped without a word: the tests of each translation
// catch it.
func copyFields(dst, src any, only ...string) {
	copyStruct(reflect.ValueOf(dst).Elem(), reflect.ValueOf(src), only)
}

func copyStruct(d, s reflect.Value, only []string) {
	for _, name := range fieldNames(s.Type(), only) {
		if _, ok := d.Type().FieldByName(name); !ok {
			panic(fmt.Sprintf("muster: %s.%s has no counterpart in %s", s.Type(), name, d.Type()))
		}
	}
	for _, name := range fieldNames(d.Type(), only) {
		dv, sv := d.FieldByName(name), s.FieldByName(name)
		switch {
		case !sv.IsValid():
			panic(fmt.Sprintf("muster: %s.%s has no counterpart in %s", d.Type(), name, s.Type()))
		case dv.Kind() == reflect.Struct && sv.Kind() == reflect.Struct:
			copyStruct(dv, sv, nil)
		case dv.Kind() == sv.Kind() || isInt(dv.Kind()) && isInt(sv.Kind()):
			dv.Set(sv.Convert(dv.Type()))
		default:
			panic(fmt.Sprintf("muster: %s.%s is a %s, %s's a %s", d.Type(), name, dv.Type(), s.Type(), sv.Type()))
		}
	}
}

// fieldNames returns the exported fields of struct type t but those in
// only.
func fieldNames(t reflect.Type, only []string) []string {
	var names []string
	for f := range t.Fields() {
		if f.IsExported() && !slices.Contains(only, f.Name) {
			names = append(names, f.Name)
		}
	}
	return names
}

func isInt(k reflect.Kind) bool { return k >= reflect.Int && k <= reflect.Int64 }
