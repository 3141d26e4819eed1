package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// configFile writes body to a file name of the test's, and returns its
// path.
func configFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// unsetenv unsets the variable name until the test ends.
func unsetenv(t *testing.T, name string) {
	t.Setenv(name, "") // restores it when the test ends
	os.Unsetenv(name)
}

func TestConfigCheck(t *testing.T) {
	unsetenv(t, "MUSTER__SERVER__HTTP__PORT")
	good := configFile(t, "good.yml", "muster:\n  server:\n    http:\n      port: 9000\n")
	bad := configFile(t, "bad.yml", "muster:\n  server:\n    http:\n      port: 0\n")

	code, out, errOut := cli(t, "config", "check", good)
	if code != 0 || out != good+": ok\n" || errOut != "" {
		t.Fatalf("good: exit %d, %q, %q", code, out, errOut)
	}
	code, out, errOut = cli(t, "config", "check", bad)
	oneFailureLine(t, code, out, errOut, "muster.server.http.port", "bad.yml line 4")
	code, out, errOut = cli(t, "config", "check", filepath.Join(t.TempDir(), "missing.yml"))
	oneFailureLine(t, code, out, errOut, "missing.yml")

	// The environment counts, as it does for a server.
	t.Setenv("MUSTER__SERVER__HTTP__PORT", "abc")
	code, out, errOut = cli(t, "config", "check", good)
	oneFailureLine(t, code, out, errOut, "MUSTER__SERVER__HTTP__PORT")
	os.Unsetenv("MUSTER__SERVER__HTTP__PORT")

	for _, tc := range []struct {
		file string
		code int
		ok   bool
	}{{good, 0, true}, {bad, 1, false}} {
		code, out, _ := cli(t, "config", "check", "--json", tc.file)
		var got checked
		if err := json.Unmarshal([]byte(out), &got); err != nil || code != tc.code || got.OK != tc.ok || got.File != tc.file ||
			(got.Error == "") == !tc.ok {
			t.Errorf("%s --json: exit %d, %+v, %v", tc.file, code, got, err)
		}
	}
}

// TestConfigCheckAgreesWithStart: config check refuses what a server
// refuses at start (a fleet without a security key), and prints the
// warnings a server logs.
func TestConfigCheckAgreesWithStart(t *testing.T) {
	file := configFile(t, "config.yml", "muster:\n  server:\n    fleet:\n      redis: \"redis://:S3cret@redis:6379\"\n")
	unsetenv(t, "MUSTER__SECURITY__KEY")
	code, out, errOut := cli(t, "config", "check", file)
	oneFailureLine(t, code, out, errOut, "muster.security.key / MUSTER__SECURITY__KEY: a fleet")

	t.Setenv("MUSTER__SECURITY__KEY", "0123456789abcdef")
	t.Setenv("MUSTER_SERVER_HTTP_PORT", "9000")
	code, out, errOut = cli(t, "config", "check", file)
	if code != 0 || out != file+": ok\n" ||
		errOut != "muster: warning: config: MUSTER_SERVER_HTTP_PORT is ignored: did you mean MUSTER__SERVER__HTTP__PORT (muster.server.http.port)? A setting's variable has a double underscore between levels\n" {
		t.Errorf("config check: exit %d, %q, %q", code, out, errOut)
	}
}
