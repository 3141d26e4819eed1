package backplane_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/backplane/memory"
)

// hidden is a backplane without the optional interfaces of the one it
// embeds.
type hidden struct{ backplane.Backplane }

// TestWrapOptional: a wrapped backplane is a RecordSwapper exactly when
// the one it wraps is.
func TestWrapOptional(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		inner backplane.Backplane
		want  bool
	}{
		{"swapper", memory.New(), true},
		{"no swapper", hidden{memory.New()}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, inner := c.inner.(backplane.RecordSwapper)
			_, got := backplane.Wrap(c.inner, backplane.Hooks{}).(backplane.RecordSwapper)
			if inner != c.want || got != c.want {
				t.Fatalf("inner is a RecordSwapper: %v, wrapped: %v; want %v", inner, got, c.want)
			}
		})
	}
}

// methods returns the methods a wrapped backplane hooks: those of
// Backplane but Close, and of the optional interfaces.
func methods() []reflect.Method {
	var ms []reflect.Method
	for _, typ := range []reflect.Type{reflect.TypeFor[backplane.Backplane](), reflect.TypeFor[backplane.RecordSwapper]()} {
		for m := range typ.Methods() {
			if m.Name != "Close" {
				ms = append(ms, m)
			}
		}
	}
	return ms
}

// call calls method name of bp with ctx and zero arguments, and returns
// its results.
func call(ctx context.Context, bp backplane.Backplane, name string) []reflect.Value {
	m := reflect.ValueOf(bp).MethodByName(name)
	args := []reflect.Value{reflect.ValueOf(ctx)}
	for i := 1; i < m.Type().NumIn(); i++ {
		args = append(args, reflect.Zero(m.Type().In(i)))
	}
	if m.Type().IsVariadic() {
		return m.CallSlice(args)
	}
	return m.Call(args)
}

// TestWrapHooks calls every hooked method: Before sees the call's
// operation, named after the method, and the error it returns ends the
// call with zero results and that error (nil for SkipCall), without
// reaching the wrapped backplane; After sees what a call let through
// returned.
func TestWrapHooks(t *testing.T) {
	t.Parallel()
	if got, want := len(backplane.Ops()), len(methods()); got != want {
		t.Fatalf("%d operations for %d hooked methods", got, want)
	}
	ctx := context.Background()
	injected := errors.New("injected")
	var seen []backplane.Op
	var stop error // what Before returns
	var afterErr error
	inner := memory.New()
	bp := backplane.Wrap(inner, backplane.Hooks{
		Before: func(_ context.Context, op backplane.Op) error { seen = append(seen, op); return stop },
		After:  func(_ backplane.Op, _ time.Time, err error) { afterErr = err },
	})
	for _, m := range methods() {
		for _, c := range []struct {
			stop, want error
		}{{injected, injected}, {backplane.SkipCall, nil}} {
			seen, stop = nil, c.stop
			out := call(ctx, bp, m.Name)
			if len(seen) != 1 || seen[0].String() != m.Name {
				t.Errorf("%s: Before saw %v", m.Name, seen)
			}
			for _, v := range out[:len(out)-1] {
				if !v.IsZero() {
					t.Errorf("%s stopped by %v: result %v, want zero", m.Name, c.stop, v)
				}
			}
			if err, _ := out[len(out)-1].Interface().(error); err != c.want {
				t.Errorf("%s stopped by %v: error %v, want %v", m.Name, c.stop, err, c.want)
			}
		}
	}
	// A call let through reaches the store, and After sees its error.
	stop = nil
	if _, err := bp.Locate(ctx, backplane.Key{Kind: "player", ID: "alice"}); !errors.Is(err, backplane.ErrNotFound) || afterErr != err {
		t.Fatalf("Locate = %v, After saw %v; want ErrNotFound for both", err, afterErr)
	}
	if err := bp.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := inner.Nodes(ctx); !errors.Is(err, backplane.ErrClosed) {
		t.Fatalf("inner Nodes after the wrapped Close = %v, want ErrClosed", err)
	}
}

// TestWrapAllocations: hooks that allocate nothing make a call allocate
// no more than a call of the wrapped backplane through its interface
// (hidden, so that the compiler cannot call memory's methods directly).
func TestWrapAllocations(t *testing.T) {
	ctx := context.Background()
	key := backplane.Key{Kind: "player", ID: "alice"}
	inner := hidden{memory.New()}
	bp := backplane.Wrap(inner, backplane.Hooks{
		Before: func(context.Context, backplane.Op) error { return nil },
		After:  func(backplane.Op, time.Time, error) {},
	})
	for _, c := range []struct {
		name string
		call func(bp backplane.Backplane)
	}{
		{"Heartbeat", func(bp backplane.Backplane) { bp.Heartbeat(ctx, backplane.Node{ID: "a"}, time.Minute) }},
		{"Claim", func(bp backplane.Backplane) { bp.Claim(ctx, "a", key) }},
		{"Locate", func(bp backplane.Backplane) { bp.Locate(ctx, key) }},
	} {
		own := testing.AllocsPerRun(100, func() { c.call(inner) })
		if got := testing.AllocsPerRun(100, func() { c.call(bp) }); got > own {
			t.Errorf("wrapped %s allocates %v times, the backplane's own %v", c.name, got, own)
		}
	}
}
