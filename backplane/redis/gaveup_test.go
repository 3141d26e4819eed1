package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/muster-gg/muster/backplane"
	"github.com/muster-gg/muster/internal/testkit/testbin"
	"github.com/muster-gg/muster/internal/testkit/testrun"
)

// TestTakeThatGaveUpLosesNothing: a take of a handoff is sent to a Redis
// that stalls, and its caller gives up at its deadline; Redis then
// resumes and runs the take it had been sent. The handoff (a player's
// queue place) must still reach the next take, as it did not reach the
// caller: it used to be removed for nobody.
func TestTakeThatGaveUpLosesNothing(t *testing.T) {
	testbin.Need(t, "redis-server")
	rd := testbin.StartRedis(t)
	px := testbin.StartSlowProxy(t, rd.Addr)
	px.KeepRequests() // a request sent before its client gave up still runs
	slow := open(t, px.Addr, "gaveup")
	direct := open(t, rd.Addr, "gaveup")
	raw := goredis.NewClient(&goredis.Options{Addr: rd.Addr})
	t.Cleanup(func() { raw.Close() })
	const hold = 300 * time.Millisecond // the take's, should it be run
	key := backplane.Key{Kind: "player", ID: "p"}

	for _, c := range []struct {
		name string
		take func(ctx context.Context, b backplane.Backplane, id string) (backplane.Taken, error)
	}{
		{"TakeHandoff", func(ctx context.Context, b backplane.Backplane, id string) (backplane.Taken, error) {
			return b.TakeHandoff(ctx, "a", id, hold)
		}},
		{"Arrive", func(ctx context.Context, b backplane.Backplane, id string) (backplane.Taken, error) {
			_, taken, err := b.Arrive(ctx, key, "a", id, hold)
			if err == nil && taken.Data == nil {
				err = backplane.ErrNotFound
			}
			return taken, err
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			id := "p-" + c.name
			// The slow client's connection is open and its script loaded,
			// so that the stalled call is the take itself.
			if err := direct.PutHandoff(ctx, "a", "warm-"+id, []byte("x"), time.Minute); err != nil {
				t.Fatal(err)
			}
			if _, err := c.take(ctx, slow, "warm-"+id); err != nil {
				t.Fatal(err)
			}
			if err := direct.PutHandoff(ctx, "a", id, []byte("queue place"), time.Minute); err != nil {
				t.Fatal(err)
			}

			px.Stall()
			gaveUp, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err := c.take(gaveUp, slow, id)
			cancel()
			if err == nil || errors.Is(err, backplane.ErrNotFound) {
				t.Fatalf("a take while Redis stalls = %v, want it to give up", err)
			}
			px.Pass()
			// Redis runs the take it was sent: its token is stored.
			tokenKey := "muster:{gaveup}:ht:a:" + id
			testrun.WaitFor(t, "Redis to run the take that gave up", func() bool {
				n, err := raw.Exists(ctx, tokenKey).Result()
				return err == nil && n == 1
			})

			var taken backplane.Taken
			testrun.WaitFor(t, "a later take to get the handoff", func() bool {
				taken, err = c.take(ctx, direct, id)
				if err != nil && !errors.Is(err, backplane.ErrNotFound) {
					t.Fatal(err)
				}
				return err == nil
			})
			if string(taken.Data) != "queue place" {
				t.Fatalf("the later take got %q, want the queue place", taken.Data)
			}
			if err := direct.ConfirmHandoff(ctx, "a", id, taken.Token); err != nil {
				t.Fatal(err)
			}
			if n, err := raw.Exists(ctx, "muster:{gaveup}:h:"+"a:"+id, tokenKey, "muster:{gaveup}:hh:a:"+id).Result(); err != nil || n != 0 {
				t.Fatalf("%d of the handoff's keys left after its confirm (%v), want none", n, err)
			}
		})
	}
}
