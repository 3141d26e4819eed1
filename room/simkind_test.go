package room

import (
	"errors"
	"strings"
	"testing"
)

// valueSim is a Sim passed by value: the changes hooks make are lost.
type valueSim struct{ n int }

// valueGame is a game whose Sim is a struct value.
type valueGame struct{}

func (valueGame) NewSim(Info) valueSim                                       { return valueSim{} }
func (valueGame) Join(*Room[valueSim, int, *cplayer], string) *cplayer       { return &cplayer{} }
func (valueGame) Leave(*Room[valueSim, int, *cplayer], *cplayer)             {}
func (valueGame) Input(r *Room[valueSim, int, *cplayer], _ *cplayer, in int) { s := r.Sim(); s.n += in }
func (valueGame) FixedStep(*Room[valueSim, int, *cplayer])                   {}

// intGame is a game whose Sim is a number.
type intGame struct{}

func (intGame) NewSim(Info) int                                 { return 0 }
func (intGame) Join(*Room[int, int, *cplayer], string) *cplayer { return &cplayer{} }
func (intGame) Leave(*Room[int, int, *cplayer], *cplayer)       {}
func (intGame) Input(*Room[int, int, *cplayer], *cplayer, int)  {}
func (intGame) FixedStep(*Room[int, int, *cplayer])             {}

// mapGame is a game whose Sim is a map, which hooks change in place.
type mapGame struct{}

func (mapGame) NewSim(Info) map[string]int                                 { return map[string]int{} }
func (mapGame) Join(*Room[map[string]int, int, *cplayer], string) *cplayer { return &cplayer{} }
func (mapGame) Leave(*Room[map[string]int, int, *cplayer], *cplayer)       {}
func (mapGame) Input(*Room[map[string]int, int, *cplayer], *cplayer, int)  {}
func (mapGame) FixedStep(*Room[map[string]int, int, *cplayer])             {}

// New refuses a Sim that Room.Sim would return as a copy, naming the fix;
// a pointer or a map is accepted.
func TestNewChecksSimKind(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, err error, want string) {
		t.Helper()
		if want == "" {
			if err != nil {
				t.Fatalf("New: %v; want accepted", err)
			}
			return
		}
		if !errors.Is(err, ErrSimKind) {
			t.Fatalf("New: %v; want ErrSimKind", err)
		}
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("New: %q; want it to contain %q", err, want)
		}
	}
	t.Run("struct value", func(t *testing.T) {
		_, err := New[valueSim, int, *cplayer](valueGame{}, Config{}, nil)
		check(t, err, "Sim is the struct room.valueSim, which Room.Sim returns as a copy: changes the hooks make to it are lost; make Sim a pointer (*room.valueSim, NewSim returning &room.valueSim{...}) or a map")
	})
	t.Run("number", func(t *testing.T) {
		_, err := New[int, int, *cplayer](intGame{}, Config{}, nil)
		check(t, err, "make Sim a pointer (*int) or a map")
	})
	t.Run("map", func(t *testing.T) {
		_, err := New[map[string]int, int, *cplayer](mapGame{}, Config{}, nil)
		check(t, err, "")
	})
	t.Run("pointer", func(t *testing.T) {
		_, err := New[*csim, int, *cplayer](plain{}, Config{}, nil)
		check(t, err, "")
	})
}
