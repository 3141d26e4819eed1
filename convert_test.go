package muster

import (
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/config"
)

func TestCopyFields(t *testing.T) {
	type inner struct{ N int }
	type from struct {
		D     config.Duration
		Limit int
		In    inner
		Name  string
	}
	type to struct {
		D      time.Duration
		Limit  int64
		In     struct{ N int64 }
		Name   string
		Secret string
	}
	var got to
	copyFields(&got, from{D: config.Duration(time.Second), Limit: 7, In: inner{N: 3}, Name: "x"}, "Secret")
	if got.D != time.Second || got.Limit != 7 || got.In.N != 3 || got.Name != "x" || got.Secret != "" {
		t.Fatalf("copyFields = %+v", got)
	}

	for _, tc := range []struct {
		name string
		copy func()
		want string
	}{
		{"field of dst missing in src", func() { copyFields(&got, from{}) }, "to.Secret has no counterpart"},
		{"field of src missing in dst", func() {
			var d struct{ D time.Duration }
			copyFields(&d, from{})
		}, "from.Limit has no counterpart"},
		{"kinds that do not convert", func() {
			var d struct{ Name int }
			copyFields(&d, struct{ Name string }{})
		}, "Name is a int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if r, _ := recover().(string); !strings.Contains(r, tc.want) {
					t.Errorf("panic %q, want one naming %q", r, tc.want)
				}
			}()
			tc.copy()
		})
	}
}
