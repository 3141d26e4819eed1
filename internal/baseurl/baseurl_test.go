package baseurl

import (
	"net/url"
	"testing"
)

func TestValid(t *testing.T) {
	for s, want := range map[string]bool{
		"https://home.example.org":      true,
		"http://127.0.0.1:8080/muster/": true,
		"ftp://x":                       false,
		"https://":                      false,
		"https:x":                       false,
		"https://u:pw@x/":               false,
		"https://x/?a=b":                false,
		"https://x/?":                   false,
		"https://x/#a":                  false,
		"home.example.org":              false,
	} {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		if got := Valid(u); got != want {
			t.Errorf("Valid(%q) = %v, want %v", s, got, want)
		}
	}
}
