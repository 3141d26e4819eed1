package room_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/muster-gg/muster/internal/testkit/hosttest"
	"github.com/muster-gg/muster/room"
)

// hookless is a module with no optional interface; the modules below
// embed it for their Attach.
type hookless struct{}

func (hookless) Attach(room.ModuleHost) error { return nil }

// everyHook is a module with every optional interface, each matching.
type everyHook struct{ hookless }

func (everyHook) Run(context.Context) error                                         { return nil }
func (everyHook) MessageTypes() []string                                            { return []string{"every"} }
func (everyHook) HandleMessage(context.Context, *room.Client, string, []byte) error { return nil }
func (everyHook) Arrived(context.Context, *room.Client, room.Handoff)               {}
func (everyHook) Disconnected(*room.Client)                                         {}
func (everyHook) RoomEnded(room.Info, string)                                       {}
func (everyHook) RoomChanged(room.RoomState)                                        {}
func (everyHook) Release(string) (*room.Handoff, bool)                              { return nil, false }
func (everyHook) Drain(context.Context) error                                       { return nil }
func (everyHook) DrainLast(context.Context)                                         {}

// Modules with a method named like an optional interface's, each with a
// signature (or a receiver, or a companion) the interface does not have.
type (
	drainerOnly     struct{ hookless } // Drain without DrainLast: a fleet.Drainer, fine
	runOnPointer    struct{ hookless } // Run on *runOnPointer
	runNoCtx        struct{ hookless } // Run without the context
	handleNoCtx     struct{ hookless } // HandleMessage without the context
	typesString     struct{ hookless } // MessageTypes returning one string
	handleOnly      struct{ hookless } // HandleMessage without MessageTypes
	typesOnly       struct{ hookless } // MessageTypes without HandleMessage
	arrivedNoHo     struct{ hookless } // Arrived without the handoff
	disconnectedID  struct{ hookless } // Disconnected with the player id
	endedNoReason   struct{ hookless } // RoomEnded without the reason
	changedPointer  struct{ hookless } // RoomChanged with a *RoomState
	releaseNoMoving struct{ hookless } // Release without moving
	drainNoErr      struct{ hookless } // Drain without the error
	drainLastErr    struct{ hookless } // DrainLast with an error
	drainLastOnly   struct{ hookless } // DrainLast without Drain
	handleOnPointer struct{ hookless } // MessageTypes on the value, HandleMessage on the pointer
	releaseBool     struct{ hookless } // Release reporting a bool, on *releaseBool
)

func (drainerOnly) Drain(context.Context) error                                       { return nil }
func (*runOnPointer) Run(context.Context) error                                       { return nil }
func (runNoCtx) Run() error                                                           { return nil }
func (handleNoCtx) MessageTypes() []string                                            { return nil }
func (handleNoCtx) HandleMessage(*room.Client, string, []byte) error                  { return nil }
func (typesString) MessageTypes() string                                              { return "" }
func (typesString) HandleMessage(context.Context, *room.Client, string, []byte) error { return nil }
func (handleOnly) HandleMessage(context.Context, *room.Client, string, []byte) error  { return nil }
func (typesOnly) MessageTypes() []string                                              { return nil }
func (arrivedNoHo) Arrived(context.Context, *room.Client)                             {}
func (disconnectedID) Disconnected(string)                                            {}
func (endedNoReason) RoomEnded(room.Info)                                             {}
func (changedPointer) RoomChanged(*room.RoomState)                                    {}
func (releaseNoMoving) Release(string) *room.Handoff                                  { return nil }
func (drainNoErr) Drain(context.Context)                                              {}
func (drainLastErr) Drain(context.Context) error                                      { return nil }
func (drainLastErr) DrainLast(context.Context) error                                  { return nil }
func (drainLastOnly) DrainLast(context.Context)                                       {}
func (handleOnPointer) MessageTypes() []string                                        { return nil }
func (*handleOnPointer) HandleMessage(context.Context, *room.Client, string, []byte) error {
	return nil
}
func (*releaseBool) Release(string) bool { return false }

// newModuleHost is a host to Use modules on.
func newModuleHost(t *testing.T) *room.Host[*hosttest.Sim, int, string] {
	t.Helper()
	h, err := room.New(&hosttest.Game{}, room.Config{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return h
}

// Use refuses a module with a method named like one of an optional module
// interface's that does not implement it: the host would never call it.
func TestUseChecksModuleHooks(t *testing.T) {
	t.Parallel()
	const (
		ctx    = "context.Context"
		handle = "func(" + ctx + ", *room.Client, string, []uint8) error"
	)
	for _, tc := range []struct {
		name   string
		module room.Module
		want   string // the error's text after ErrModuleHook's; "": accepted
	}{
		{name: "no hooks", module: hookless{}},
		{name: "every hook matching", module: everyHook{}},
		{name: "Drainer without DrainLast", module: drainerOnly{}},
		{name: "hook on the pointer passed", module: &runOnPointer{}},
		{name: "Run without the context", module: runNoCtx{},
			want: "module room_test.runNoCtx method Run has signature func() error; want func(" + ctx + ") error to be called as the room.Runner hook"},
		{name: "HandleMessage without the context", module: handleNoCtx{},
			want: "module room_test.handleNoCtx method HandleMessage has signature func(*room.Client, string, []uint8) error; want " + handle + " to be called as the room.MessageHandler hook"},
		{name: "MessageTypes returning a string", module: typesString{},
			want: "module room_test.typesString method MessageTypes has signature func() string; want func() []string to be called as the room.MessageHandler hook"},
		{name: "HandleMessage without MessageTypes", module: handleOnly{},
			want: "module room_test.handleOnly has method HandleMessage but no MessageTypes; want MessageTypes func() []string too to be called as the room.MessageHandler hook"},
		{name: "MessageTypes without HandleMessage", module: typesOnly{},
			want: "module room_test.typesOnly has method MessageTypes but no HandleMessage; want HandleMessage " + handle + " too to be called as the room.MessageHandler hook"},
		{name: "Arrived without the handoff", module: arrivedNoHo{},
			want: "module room_test.arrivedNoHo method Arrived has signature func(" + ctx + ", *room.Client); want func(" + ctx + ", *room.Client, room.Handoff) to be called as the room.ArrivalHandler hook"},
		{name: "Disconnected with the player id", module: disconnectedID{},
			want: "module room_test.disconnectedID method Disconnected has signature func(string); want func(*room.Client) to be called as the room.DisconnectHandler hook"},
		{name: "RoomEnded without the reason", module: endedNoReason{},
			want: "module room_test.endedNoReason method RoomEnded has signature func(room.Info); want func(room.Info, string) to be called as the room.RoomEndHandler hook"},
		{name: "RoomChanged with a pointer", module: changedPointer{},
			want: "module room_test.changedPointer method RoomChanged has signature func(*room.RoomState); want func(room.RoomState) to be called as the room.RoomWatcher hook"},
		{name: "Release without moving", module: releaseNoMoving{},
			want: "module room_test.releaseNoMoving method Release has signature func(string) *room.Handoff; want func(string) (*room.Handoff, bool) to be called as the room.Releaser hook"},
		{name: "Drain without the error", module: drainNoErr{},
			want: "module room_test.drainNoErr method Drain has signature func(" + ctx + "); want func(" + ctx + ") error to be called as the fleet.Drainer hook"},
		{name: "DrainLast with an error", module: drainLastErr{},
			want: "module room_test.drainLastErr method DrainLast has signature func(" + ctx + ") error; want func(" + ctx + ") to be called as the fleet.LastDrainer hook"},
		{name: "DrainLast without Drain", module: drainLastOnly{},
			want: "module room_test.drainLastOnly has method DrainLast but no Drain; want Drain func(" + ctx + ") error too to be called as the fleet.LastDrainer hook"},
		{name: "Run on the pointer of a value passed", module: runOnPointer{},
			want: "module room_test.runOnPointer method Run is declared on *room_test.runOnPointer, but Use was given a room_test.runOnPointer, whose method set lacks it; pass a *room_test.runOnPointer to have it called as the room.Runner hook"},
		{name: "HandleMessage on the pointer of a value passed", module: handleOnPointer{},
			want: "module room_test.handleOnPointer method HandleMessage is declared on *room_test.handleOnPointer, but Use was given a room_test.handleOnPointer, whose method set lacks it; pass a *room_test.handleOnPointer to have it called as the room.MessageHandler hook"},
		{name: "pointer module with a mismatch", module: &releaseBool{},
			want: "module *room_test.releaseBool method Release has signature func(string) bool; want func(string) (*room.Handoff, bool) to be called as the room.Releaser hook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := newModuleHost(t).Use(tc.module)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Use: %v", err)
				}
				return
			}
			if !errors.Is(err, room.ErrModuleHook) {
				t.Fatalf("Use: %v, want ErrModuleHook", err)
			}
			if want := room.ErrModuleHook.Error() + ": " + tc.want; err.Error() != want {
				t.Errorf("Use: %v\nwant %s", err, want)
			}
		})
	}
}

// attachCounter is a MessageHandler of "every" whose Run lacks the
// context, counting its Attach calls.
type attachCounter struct {
	everyHook
	attached *int
}

func (m attachCounter) Attach(room.ModuleHost) error { *m.attached++; return nil }
func (attachCounter) Run() error                     { return nil }

// Use refuses a module before it attaches it or routes its message types:
// the host is left as if Use had not been called.
func TestUseRefusesBeforeAttach(t *testing.T) {
	t.Parallel()
	h := newModuleHost(t)
	var attached int
	if err := h.Use(attachCounter{attached: &attached}); !errors.Is(err, room.ErrModuleHook) {
		t.Fatalf("Use: %v, want ErrModuleHook", err)
	}
	if attached != 0 {
		t.Errorf("Attach called %d times on a refused module", attached)
	}
	if err := h.Use(everyHook{}); err != nil { // its message type "every" is free
		t.Fatalf("Use after a refusal: %v", err)
	}
}
