package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// player is a bot of the load, its Run goroutine and the goroutine that
// queues it again whenever a room of its ended.
type player struct {
	name   string
	bot    *bot.Bot
	cancel context.CancelFunc
	done   chan struct{}
	err    error // Run's, valid once done is closed
}

// botPatience is how long a bot of the load gives one connection attempt
// (ticket, handshake, hello, welcome), and a moved queue place its
// confirmation, instead of the bot's 5 s and 2 s. The bots run in the
// test process, under the race detector in CI, and a hundred of them need
// more than a core there: beside a CPU hog the process is starved, and a
// bot waited seconds to be scheduled between each step of an attempt
// (nginx's access log: the ticket answered in 3 ms, the handshake request
// arriving 2-4 s later, the hello never sent before the bot's own 5 s ran
// out), so a bot that was moved failed every attempt for 40 s while the
// servers answered at once. The servers' own deadlines (a hello within
// 10 s of the handshake) still apply.
const botPatience = 20 * time.Second

// crowd is the bots of the load.
type crowd struct {
	players []*player
	wg      sync.WaitGroup
}

// startCrowd starts n bots through nginx, each from its own loopback
// address, in batches so that the ramp does not look like a flood. Each
// queues for duel, steers at random (matches last: rooms are there when
// the faults come), and queues again whenever its room ended.
func startCrowd(t *testing.T, c *cluster, n int) *crowd {
	t.Helper()
	cr := &crowd{}
	for i := range n {
		name := fmt.Sprintf("soak-%05d", i)
		b, err := bot.New(bot.Config{
			URL: c.URL, Player: name, Style: bot.StyleRandom,
			HTTPClient: clientHTTP(clientAddr(1, i)),
			Logger:     quiet,
			// The bots' own deadlines, for a starved test process: see
			// botPatience.
			ConnectTimeout: botPatience,
			Confirm:        botPatience,
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		p := &player{name: name, bot: b, cancel: cancel, done: make(chan struct{})}
		cr.players = append(cr.players, p)
		cr.wg.Go(func() {
			defer close(p.done)
			p.err = b.Run(ctx)
		})
		cr.wg.Go(func() {
			ended := 0
			b.Queue("duel")
			for {
				err := b.Wait(ctx, func(r bot.Report) bool {
					_, seated := r.Room()
					return !seated && r.Ended() > ended
				})
				if err != nil {
					return
				}
				ended = b.Report().Ended()
				b.Queue("duel")
			}
		})
		if i%100 == 99 {
			time.Sleep(50 * time.Millisecond) // a ramp, not a correctness wait
		}
	}
	t.Cleanup(cr.stop)
	return cr
}

// stop stops every bot (each leaves its room) and waits for them.
func (cr *crowd) stop() {
	for _, p := range cr.players {
		p.cancel()
	}
	cr.wg.Wait()
}

// state is where a bot is, as its report says.
type state int

const (
	unsettled state = iota // connecting, or connected and not yet queued
	seated                 // in a room
	waiting                // in a queue
	told                   // told why it is neither: an error packet or a close code that ended its run
)

func (s state) String() string {
	return [...]string{"unsettled", "seated", "waiting", "told"}[s]
}

// stateOf classifies a bot by its report and whether Run has ended.
func stateOf(r bot.Report, ended bool) state {
	if _, ok := r.Room(); ok {
		return seated
	}
	if ended {
		return told
	}
	for i := len(r.Events) - 1; i >= 0; i-- {
		switch r.Events[i].Kind {
		case "waiting":
			return waiting
		case "error", "draining":
			return told
		case "welcome", "room_end", "dropped", "failure", "redirect", "unqueued", "stop":
			return unsettled
		}
	}
	return unsettled
}

func (p *player) ended() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// quiet discards the bots' debug lines.
var quiet = slog.New(slog.DiscardHandler)

// probes are extra connections, through nginx from their own addresses,
// that say hello and then only ping: the round trip of a WebSocket ping
// to a server under load.
type probes struct {
	mu     sync.Mutex
	rtts   []time.Duration
	errs   int
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func startProbes(t *testing.T, c *cluster, n int) *probes {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr := &probes{cancel: cancel}
	for i := range n {
		hc := clientHTTP(clientAddr(2, i))
		pr.wg.Go(func() {
			defer hc.CloseIdleConnections()
			for ctx.Err() == nil {
				ws, _, err := connect(ctx, c.URL, hc, fmt.Sprintf("probe-%03d", i), "")
				if err != nil {
					if ctx.Err() == nil {
						pr.count(0, true)
						sleepCtx(ctx, 200*time.Millisecond)
					}
					continue
				}
				rctx, rcancel := context.WithCancel(ctx)
				go func() {
					for {
						if _, _, err := ws.Read(rctx); err != nil {
							rcancel()
							return
						}
					}
				}()
				for rctx.Err() == nil {
					pctx, pcancel := context.WithTimeout(rctx, botPatience)
					start := time.Now()
					err := ws.Ping(pctx)
					pcancel()
					if err != nil {
						if ctx.Err() == nil {
							pr.count(0, true)
						}
						break
					}
					pr.count(time.Since(start), false)
					sleepCtx(rctx, 100*time.Millisecond)
				}
				rcancel()
				ws.CloseNow()
			}
		})
	}
	t.Cleanup(pr.stop)
	return pr
}

func (pr *probes) count(d time.Duration, failed bool) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if failed {
		pr.errs++
		return
	}
	pr.rtts = append(pr.rtts, d)
}

// take returns the round trips and failures since the last take.
func (pr *probes) take() ([]time.Duration, int) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	r, e := pr.rtts, pr.errs
	pr.rtts, pr.errs = nil, 0
	return r, e
}

func (pr *probes) stop() {
	pr.cancel()
	pr.wg.Wait()
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// ticket gets a connection ticket for player through base.
func ticket(ctx context.Context, base string, hc *http.Client, player string) (string, error) {
	body := strings.NewReader(fmt.Sprintf(`{"player":%q}`, player))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"ticket", body)
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("ticket: %d %s", resp.StatusCode, data)
	}
	var out struct{ Ticket string }
	if err := json.Unmarshal(data, &out); err != nil {
		return "", err
	}
	return out.Ticket, nil
}

// connect gets a ticket, dials base's /play with query extra, says hello
// new and reads the welcome.
func connect(ctx context.Context, base string, hc *http.Client, player, extra string) (*websocket.Conn, bot.Welcome, error) {
	cctx, cancel := context.WithTimeout(ctx, botPatience)
	defer cancel()
	tk, err := ticket(cctx, base, hc, player)
	if err != nil {
		return nil, bot.Welcome{}, err
	}
	ws, _, err := dialPlay(cctx, base, hc, "ticket="+tk+extra, nil)
	if err != nil {
		return nil, bot.Welcome{}, err
	}
	w, err := hello(cctx, ws)
	if err != nil {
		ws.CloseNow()
		return nil, bot.Welcome{}, err
	}
	return ws, w, nil
}

func dialPlay(ctx context.Context, base string, hc *http.Client, query string, h http.Header) (*websocket.Conn, *http.Response, error) {
	u := "ws" + strings.TrimPrefix(base, "http") + "play?" + query
	ws, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h})
	if err == nil {
		ws.SetReadLimit(1 << 20)
	}
	return ws, resp, err
}

// hello says hello new and reads the welcome.
func hello(ctx context.Context, ws *websocket.Conn) (bot.Welcome, error) {
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","data":{"mode":"new"}}`)); err != nil {
		return bot.Welcome{}, err
	}
	return bot.ReadWelcome(ctx, ws)
}

// quantile returns the q quantile of ds (sorted in place).
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[int(q*float64(len(ds)-1))]
}
