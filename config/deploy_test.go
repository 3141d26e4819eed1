package config_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/muster-gg/muster/config"
)

// TestComposeRequiresKey: docker-compose.yml has no default security key
// (a published default would be every copy's key): compose refuses to
// start until MUSTER_KEY is set, and with it the game's environment is a
// valid fleet configuration.
func TestComposeRequiresKey(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Services map[string]struct {
			Environment map[string]string `yaml:"environment"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	env := c.Services["game"].Environment
	required := regexp.MustCompile(`^\$\{MUSTER_KEY:\?[^${}]+\}$`)
	if v := env["MUSTER__SECURITY__KEY"]; !required.MatchString(v) {
		t.Fatalf("game's MUSTER__SECURITY__KEY = %q, want ${MUSTER_KEY:?message}: no default", v)
	}
	var environ []string
	for name, value := range env {
		if strings.Contains(value, ":-") && strings.Contains(strings.ToUpper(name), "KEY") {
			t.Errorf("%s has a default: %q", name, value)
		}
		value = required.ReplaceAllString(value, "0123456789abcdef0123456789abcdef")
		environ = append(environ, name+"="+value)
	}
	cfg, err := config.Load("", environ)
	if err != nil {
		t.Fatalf("the game's environment: %v", err)
	}
	if cfg.Server.Fleet.Redis == "" || len(cfg.Warnings()) != 0 {
		t.Errorf("the game's environment: redis %q, warnings %q", cfg.Server.Fleet.Redis, cfg.Warnings())
	}
	// Without the key, the same environment would not start.
	for i, kv := range environ {
		if strings.HasPrefix(kv, "MUSTER__SECURITY__KEY=") {
			environ[i] = "MUSTER__SECURITY__KEY="
		}
	}
	if _, err := config.Load("", environ); err == nil || !strings.Contains(err.Error(), "muster.security.key / MUSTER__SECURITY__KEY") {
		t.Errorf("without the key: %v", err)
	}
}
