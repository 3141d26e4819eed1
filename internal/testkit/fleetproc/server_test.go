package fleetproc

import "testing"

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		name  string
		s     string
		lines int
		want  string
	}{
		{"whole log", "a\nb\nc\n", 0, "a\nb\nc\n"},
		{"short log", "a\nb\n", 3, "a\nb"},
		{"cut", "a\nb\nc\nd\n", 2, "… 2 lines\nc\nd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Tail(tc.s, tc.lines); got != tc.want {
				t.Errorf("Tail(%q, %d) = %q, want %q", tc.s, tc.lines, got, tc.want)
			}
		})
	}
}

func TestForbidden(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  string
		want string
	}{
		{"clean", "listening\nstopped\n", ""},
		{"panic", "listening\npanic: oops\n", "panic:"},
		{"first listed wins", "WARNING: DATA RACE\npanic: oops\n", "panic:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Forbidden(tc.log, []string{"panic:", "WARNING: DATA RACE"}); got != tc.want {
				t.Errorf("Forbidden(%q) = %q, want %q", tc.log, got, tc.want)
			}
		})
	}
}
