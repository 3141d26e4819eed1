package defaults

import (
	"testing"
	"time"
)

type inner struct {
	N int
	S string
}

type config struct {
	A      int
	D      time.Duration
	F      func() int
	In     inner
	hidden int
}

func TestFill(t *testing.T) {
	f := func() int { return 1 }
	d := config{A: 5, D: time.Second, F: f, In: inner{N: 7, S: "x"}, hidden: 9}
	tests := []struct {
		name    string
		give    config
		wantA   int
		wantD   time.Duration
		wantIn  inner
		wantF   bool
		wantHid int
	}{
		{name: "zero takes every default", give: config{}, wantA: 5, wantD: time.Second, wantIn: inner{7, "x"}, wantF: true},
		{name: "set fields stay", give: config{A: -1, D: time.Minute, In: inner{N: 2}}, wantA: -1, wantD: time.Minute, wantIn: inner{2, "x"}, wantF: true},
		{name: "unexported fields are left alone", give: config{hidden: 3}, wantA: 5, wantD: time.Second, wantIn: inner{7, "x"}, wantF: true, wantHid: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.give
			Fill(&c, d)
			if c.A != tt.wantA || c.D != tt.wantD || c.In != tt.wantIn || (c.F != nil) != tt.wantF || c.hidden != tt.wantHid {
				t.Errorf("Fill = %+v", c)
			}
		})
	}
}
