package muster

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/muster-gg/muster/config"
)

// TestRedisDeployments checks that every deployment form validates, and
// that what validation passes is what the backplane is opened with.
func TestRedisDeployments(t *testing.T) {
	t.Parallel()
	for name, addr := range map[string]string{
		"host:port":  "redis:6379",
		"acl user":   "redis://app:pw@redis:6379/2",
		"tls":        "rediss://app:pw@cache.example.com:6380",
		"sentinel":   "redis://app:pw@s1:26379/0?master_name=mymaster&addr=s2:26379&addr=s3:26379&sentinel_username=sen&sentinel_password=spw",
		"cluster":    "rediss://app:pw@clustercfg.example.com:6379?cluster=true",
		"seeds":      "redis://n1:7000?addr=n2:7001&addr=n3:7002",
		"options":    "redis://redis:6379?dial_timeout=2s&read_timeout=1s&max_retries=1",
		"host lists": "n1:7000,n2:7001",
	} {
		t.Run(name, func(t *testing.T) {
			c, err := loadConfig("", []string{"MUSTER__SERVER__FLEET__REDIS=" + addr, "MUSTER__SECURITY__KEY=" + key16})
			if err != nil {
				t.Fatal(err)
			}
			if err := redisConfig(c).Check(); err != nil {
				t.Fatalf("validation passed, the backplane refuses: %v", err)
			}
		})
	}
}

func TestRedisSettingsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := "MUSTER__SECURITY__KEY=" + key16
	for _, tt := range []struct {
		name    string
		environ []string
		want    string
	}{
		{"unknown parameter", []string{"MUSTER__SERVER__FLEET__REDIS=redis://u:S3cret@h:1?master_name=m&bogus=1"},
			`config: muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: unknown parameter bogus for a sentinel address`},
		{"password as a parameter", []string{"MUSTER__SERVER__FLEET__REDIS=h1:1,h2:2?master=m&password=S3cret"},
			`muster.server.fleet.redis / MUSTER__SERVER__FLEET__REDIS: parameter password: a host:port list takes only ?master=name`},
		{"ca file missing", []string{"MUSTER__SERVER__FLEET__REDIS=rediss://h:1", "MUSTER__SERVER__FLEET__REDIS_TLS_CA_FILE=" + filepath.Join(dir, "none.pem")},
			`config: muster.server.fleet.redis-tls-ca-file / MUSTER__SERVER__FLEET__REDIS_TLS_CA_FILE: no such file or directory`},
		{"ca file not PEM", []string{"MUSTER__SERVER__FLEET__REDIS=rediss://h:1", "MUSTER__SERVER__FLEET__REDIS_TLS_CA_FILE=" + notPEM},
			`muster.server.fleet.redis-tls-ca-file / MUSTER__SERVER__FLEET__REDIS_TLS_CA_FILE: no PEM certificate in it`},
		{"cert without key", []string{"MUSTER__SERVER__FLEET__REDIS=rediss://h:1", "MUSTER__SERVER__FLEET__REDIS_TLS_CERT_FILE=" + notPEM},
			`muster.server.fleet.redis-tls-cert-file / MUSTER__SERVER__FLEET__REDIS_TLS_CERT_FILE: given without a key file`},
		{"tls files without tls", []string{"MUSTER__SERVER__FLEET__REDIS=redis://h:1", "MUSTER__SERVER__FLEET__REDIS_TLS_CA_FILE=" + notPEM},
			`muster.server.fleet.redis-tls-ca-file / MUSTER__SERVER__FLEET__REDIS_TLS_CA_FILE: given, but the address does not use TLS: write rediss://`},
		{"tls files without redis", []string{"MUSTER__SERVER__FLEET__REDIS_TLS_KEY_FILE=" + notPEM},
			`muster.server.fleet.redis-tls-key-file / MUSTER__SERVER__FLEET__REDIS_TLS_KEY_FILE: given, but muster.server.fleet.redis is empty`},
		{"timeout", []string{"MUSTER__SERVER__FLEET__REDIS_TIMEOUT=0"},
			`muster.server.fleet.redis-timeout / MUSTER__SERVER__FLEET__REDIS_TIMEOUT: want a positive duration, got 0s`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig("", append(tt.environ, key))
			if !errors.Is(err, config.ErrInvalid) {
				t.Fatalf("error %v, want ErrInvalid", err)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "S3cret") || strings.Contains(msg, "\n") {
				t.Errorf("error\n got %s\nwant %s in it, on one line, without the password", msg, tt.want)
			}
		})
	}
}

func TestRedisConfig(t *testing.T) {
	t.Parallel()
	c, err := loadConfig("", []string{"MUSTER__SERVER__FLEET__REDIS=rediss://h:1", "MUSTER__SERVER__FLEET__REDIS_TIMEOUT=1.5",
		"MUSTER__SERVER__FLEET__CLUSTER=eu", "MUSTER__SECURITY__KEY=" + key16})
	if err != nil {
		t.Fatal(err)
	}
	rc := redisConfig(c)
	if rc.URL != "rediss://h:1" || rc.Cluster != "eu" || rc.Timeout != 1500*time.Millisecond {
		t.Errorf("redisConfig = %+v", rc)
	}
}

// TestRedisPasswordNeverShown: a Redis URL's password appears in no error,
// whatever is wrong with the URL and wherever it was written.
func TestRedisPasswordNeverShown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, file string
		environ    []string
		want       string // a part of the message
	}{
		{name: "bad scheme from the environment", environ: []string{"MUSTER__SERVER__FLEET__REDIS=http://user:S3cret@redis:6379"},
			want: `got "http://user:xxxxx@redis:6379" (from the environment)`},
		{name: "no host in the file", file: "muster:\n  server:\n    fleet:\n      redis: \"redis://:S3cret@\"\n",
			want: `got "redis://:xxxxx@"`},
		{name: "unparseable", environ: []string{"MUSTER__SERVER__FLEET__REDIS=redis://user:S3c@ret@h:1:2"},
			want: `got "redis://user:xxxxx@h:1:2"`},
		{name: "in another key", environ: []string{"MUSTER__SERVER__CAPACITY__MAX_LOAD=redis://u:S3cret@h:1"},
			want: `want an integer, got "redis://u:xxxxx@h:1"`},
		{name: "for a section", file: "muster:\n  server:\n    fleet: \"redis://u:S3cret@h:1\"\n",
			want: `want a mapping, got "redis://u:xxxxx@h:1"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadConfig(tt.file, tt.environ)
			if err == nil {
				t.Fatal("no error")
			}
			if msg := err.Error(); strings.Contains(msg, "S3c") || !strings.Contains(msg, tt.want) {
				t.Errorf("error %q: want %q in it and no password", msg, tt.want)
			}
		})
	}
}
