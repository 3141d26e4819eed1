package room

import (
	"errors"
	"testing"
)

// plain is a game with no optional hook.
type plain struct{}

func (plain) NewSim(Info) *csim                                 { return &csim{} }
func (plain) Join(*Room[*csim, int, *cplayer], string) *cplayer { return &cplayer{} }
func (plain) Leave(*Room[*csim, int, *cplayer], *cplayer)       {}
func (plain) Input(*Room[*csim, int, *cplayer], *cplayer, int)  {}
func (plain) FixedStep(*Room[*csim, int, *cplayer])             {}

// Games with a method named like an optional hook, each with a signature
// the hook does not have.
type (
	afterOtherInput struct{ plain } // AfterSteps for rooms of string inputs
	enderNoReason   struct{ plain } // RoomEnded without the reason
	admitBool       struct{ plain } // Admit reporting a bool
	loadInt64       struct{ plain } // LoadOf weighing in int64
	redirectMap     struct{ plain } // Redirect returning a map, not a Packet
	drainingArg     struct{ plain } // ServerDraining taking the reason
	afterOnPointer  struct{ plain } // AfterSteps on *afterOnPointer
)

func (afterOtherInput) AfterSteps(*Room[*csim, string, *cplayer]) {}
func (enderNoReason) RoomEnded(*Room[*csim, int, *cplayer])       {}
func (admitBool) Admit(*Room[*csim, int, *cplayer], string) bool  { return true }
func (loadInt64) LoadOf(*csim) int64                              { return 1 }
func (redirectMap) Redirect(Redirect) map[string]any              { return nil }
func (drainingArg) ServerDraining(string) Packet                  { return nil }
func (*afterOnPointer) AfterSteps(*Room[*csim, int, *cplayer])    {}

// New refuses a game with a method named like an optional hook whose
// signature is not the hook's: the host would never call it.
func TestNewChecksOptionalHooks(t *testing.T) {
	t.Parallel()
	const r = "*room.Room[*room.csim,int,*room.cplayer]"
	for _, tc := range []struct {
		name string
		game Game[*csim, int, *cplayer]
		want string // the error's text after ErrHook's; "": accepted
	}{
		{name: "no hooks", game: plain{}},
		{name: "matching hooks", game: &ender{counter: newCounter()}},
		{name: "matching loader on a value", game: weighty{newCounter()}},
		{name: "matching hook on the pointer passed", game: &afterOnPointer{}},
		{name: "AfterSteps with other type arguments", game: afterOtherInput{},
			want: "game method AfterSteps has signature func(*room.Room[*room.csim,string,*room.cplayer]); want func(" + r + ") to be called as the AfterSteps hook"},
		{name: "RoomEnded without the reason", game: enderNoReason{},
			want: "game method RoomEnded has signature func(" + r + "); want func(" + r + ", string) to be called as the RoomEnded hook"},
		{name: "Admit reporting a bool", game: admitBool{},
			want: "game method Admit has signature func(" + r + ", string) bool; want func(" + r + ", string) error to be called as the Admit hook"},
		{name: "LoadOf in int64", game: loadInt64{},
			want: "game method LoadOf has signature func(*room.csim) int64; want func(*room.csim) int to be called as the LoadOf hook"},
		{name: "Redirect returning a map", game: redirectMap{},
			want: "game method Redirect has signature func(room.Redirect) map[string]interface {}; want func(room.Redirect) interface {} to be called as the Redirect hook"},
		{name: "ServerDraining with a parameter", game: drainingArg{},
			want: "game method ServerDraining has signature func(string) interface {}; want func() interface {} to be called as the ServerDraining hook"},
		{name: "hook on the pointer of a value passed", game: afterOnPointer{},
			want: "game method AfterSteps is declared on *room.afterOnPointer, but New was given a room.afterOnPointer, whose method set lacks it; pass a *room.afterOnPointer to have it called as the AfterSteps hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.game, Config{}, quietLog)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrHook) {
				t.Fatalf("New: %v, want ErrHook", err)
			}
			if want := ErrHook.Error() + ": " + tc.want; err.Error() != want {
				t.Errorf("New: %v\nwant %s", err, want)
			}
		})
	}
}
