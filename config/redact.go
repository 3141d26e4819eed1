package config

import (
	"net/url"
	"strings"
)

// RedactURL returns s with the password of a URL in it hidden, as
// url.URL.Redacted does, for logs and error messages: redis://u:pw@host
// gives redis://u:xxxxx@host. Query parameters that look like secrets
// (password, secret, token, key) are hidden too. A value that does not parse
// as a URL has everything between "://" (or its start) and its last "@"
// after the first ":" hidden.
func RedactURL(s string) string {
	if !strings.ContainsAny(s, "@?") {
		return s
	}
	start := 0
	if i := strings.Index(s, "://"); i >= 0 {
		start = i + 3
	}
	// An "@" that url.Parse did not take for the end of the user
	// information (a password holding "/", "?" or "#") is hidden below.
	if u, err := url.Parse(s); err == nil && (u.User != nil || !strings.Contains(s[start:], "@")) {
		if q := u.Query(); u.RawQuery != "" {
			hid := false
			for k := range q {
				if secretParam(k) {
					q.Set(k, "xxxxx")
					hid = true
				}
			}
			if hid {
				u.RawQuery = q.Encode()
			}
		}
		return u.Redacted()
	}
	at := strings.LastIndex(s, "@")
	if at < start {
		return s
	}
	user, _, ok := strings.Cut(s[start:at], ":")
	if !ok {
		return s[:start] + "xxxxx" + s[at:]
	}
	return s[:start] + user + ":xxxxx" + s[at:]
}

// secretParam reports whether a query parameter's name suggests a secret.
func secretParam(name string) bool {
	name = strings.ToLower(name)
	for _, w := range []string{"pass", "secret", "token", "key", "auth"} {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}
