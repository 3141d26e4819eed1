// Package baseurl checks the base URL of a service whose API paths are
// joined to it, such as a federation home's.
package baseurl

import "net/url"

// Valid reports whether u is an http or https URL with a host and nothing
// that the API paths would land in or after, or that would put a secret in
// a log: no user, query (not even a bare "?") or fragment.
func Valid(u *url.URL) bool {
	return (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && u.Opaque == "" &&
		u.User == nil && u.RawQuery == "" && !u.ForceQuery && u.Fragment == ""
}
