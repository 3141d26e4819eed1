package federation

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/muster-gg/muster/backplane"
)

// Home is the register of regional nodes and the doors they use: join,
// announce, self-test and room reports, the public regions list, and the
// admin API. It keeps nothing of its own between requests: everything is
// in the backplane's records, so any number of Home values on one Redis
// serve the same register.
//
// A Home is safe for concurrent use. It starts no goroutine and needs no
// Close; the caller owns the backplane.
type Home struct {
	cfg       HomeConfig
	bp        backplane.Backplane
	log       *slog.Logger
	limiter   *limiter
	adminHash string
	handler   http.Handler

	swapMu  sync.Mutex  // serialises commits on a backplane without RecordSwapper
	cacheMu sync.Mutex  // guards the regions cache and sweptAt
	cache   *RegionList // nil: nothing cached
	cacheAt time.Time   // when cache was computed
	sweptAt time.Time   // when this Home last swept every room report
}

// NewHome returns a Home over bp, which must be durable in production (the
// Redis backplane); the memory backplane serves development and tests.
// It starts nothing.
func NewHome(cfg HomeConfig, bp backplane.Backplane, logger *slog.Logger) (*Home, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if bp == nil {
		return nil, fmt.Errorf("%w: backplane is nil", ErrInvalidConfig)
	}
	log := componentLogger(logger)
	if _, ok := bp.(backplane.RecordSwapper); !ok {
		log.Warn("federation: the backplane has no compare-and-set (backplane.RecordSwapper): run one Home on this register only")
	}
	h := &Home{cfg: cfg, bp: bp, log: log, limiter: newLimiter(bp, cfg.Now, log)}
	if cfg.AdminToken != "" {
		sum := sha256.Sum256([]byte(cfg.AdminToken))
		h.adminHash = hex.EncodeToString(sum[:])
	}
	h.handler = h.routes()
	return h, nil
}

func (h *Home) now() time.Time { return h.cfg.Now() }

// invalidate drops the cached regions list after a change made here.
func (h *Home) invalidate() {
	h.cacheMu.Lock()
	h.cache = nil
	h.cacheMu.Unlock()
}
