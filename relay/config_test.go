package relay

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestNewFillsDefaults(t *testing.T) {
	t.Parallel()
	rl, err := New(Config{NodeID: "a"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Config{
		NodeID:      "a",
		NodeParam:   "node",
		DialTimeout: time.Second,
		MaxSkew:     30 * time.Second,
		ReadLimit:   32 << 20,
	}
	if rl.cfg != want {
		t.Errorf("config = %+v, want %+v", rl.cfg, want)
	}
	if rl.key != nil {
		t.Error("a relay without a secret has a signing key")
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no node id", Config{}, "NodeID"},
		{"blank node id", Config{NodeID: " "}, "NodeID"},
		{"param with =", Config{NodeID: "a", NodeParam: "n=1"}, "NodeParam"},
		{"param with space", Config{NodeID: "a", NodeParam: "my node"}, "NodeParam"},
		{"short secret", Config{NodeID: "a", Secret: "hunter2"}, "Secret"},
		{"negative dial timeout", Config{NodeID: "a", DialTimeout: -time.Second}, "DialTimeout"},
		{"negative skew", Config{NodeID: "a", MaxSkew: -1}, "MaxSkew"},
		{"read limit below -1", Config{NodeID: "a", ReadLimit: -2}, "ReadLimit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg, nil, nil)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("New = %v, want ErrInvalidConfig naming %s", err, tc.field)
			}
		})
	}
}

func TestNewAcceptsNoLimit(t *testing.T) {
	t.Parallel()
	rl, err := New(Config{NodeID: "a", ReadLimit: -1, Secret: testSecret}, nil, nil)
	if err != nil || rl.cfg.ReadLimit != -1 || rl.key == nil {
		t.Fatalf("New = %+v, %v", rl, err)
	}
}
