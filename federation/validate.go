package federation

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Bounds on what a request may carry.
const (
	maxLabel        = 64
	maxServices     = 16
	maxServiceValue = 256
	maxRoomID       = 128
	maxMembers      = 1024
	maxMemberID     = 128
	maxProperties   = 64
	maxPropertyKey  = 64
	maxPropertyVal  = 1024
	maxHardwareText = 128
)

// validID reports whether s is a node or server id: 1-63 characters of
// a-z, 0-9 and '-', not starting with '-'.
func validID(s string) bool {
	if s == "" || len(s) > 63 || s[0] == '-' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

func checkID(field, s string) error {
	if !validID(s) {
		return fmt.Errorf("%w: %s %q must be 1-63 characters of a-z, 0-9 and '-'", ErrInvalid, field, s)
	}
	return nil
}

// normCountry returns s as an upper-case ISO 3166-1 alpha-2 code, or false.
func normCountry(s string) (string, bool) {
	if len(s) != 2 {
		return "", false
	}
	u := strings.ToUpper(s)
	for i := 0; i < 2; i++ {
		if u[i] < 'A' || u[i] > 'Z' {
			return "", false
		}
	}
	return u, true
}

// checkText checks a free-text field: valid UTF-8, no control characters,
// at most max bytes, and not empty when required.
func checkText(field, s string, max int, required bool) error {
	switch {
	case s == "" && required:
		return fmt.Errorf("%w: %s is required", ErrInvalid, field)
	case len(s) > max:
		return fmt.Errorf("%w: %s is longer than %d bytes", ErrInvalid, field, max)
	case !utf8.ValidString(s):
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrInvalid, field)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("%w: %s contains a control character", ErrInvalid, field)
	}
	return nil
}

func checkLabel(field, s string) error { return checkText(field, s, maxLabel, true) }

// validServiceName: 1-32 characters of a-z, 0-9 and '-'.
func validServiceName(s string) bool { return len(s) <= 32 && validID(s) }

// validateServices checks a services map: names as validServiceName, values
// 1-256 printable ASCII characters without spaces.
func validateServices(m map[string]string) error {
	if len(m) > maxServices {
		return fmt.Errorf("%w: services: more than %d", ErrInvalid, maxServices)
	}
	for name, addr := range m {
		if !validServiceName(name) {
			return fmt.Errorf("%w: services: name %q must be 1-32 characters of a-z, 0-9 and '-'", ErrInvalid, name)
		}
		if addr == "" || len(addr) > maxServiceValue {
			return fmt.Errorf("%w: services.%s: address must be 1-%d bytes", ErrInvalid, name, maxServiceValue)
		}
		for i := 0; i < len(addr); i++ {
			if addr[i] <= ' ' || addr[i] > '~' {
				return fmt.Errorf("%w: services.%s: address must be printable ASCII without spaces", ErrInvalid, name)
			}
		}
	}
	return nil
}

func (h Hardware) validate() error {
	for _, f := range []struct{ name, v string }{
		{"hardware.os", h.OS}, {"hardware.arch", h.Arch}, {"hardware.hostname", h.Hostname},
		{"hardware.go_version", h.GoVersion}, {"hardware.kernel", h.Kernel},
	} {
		if err := checkText(f.name, f.v, maxHardwareText, false); err != nil {
			return err
		}
	}
	if h.CPUs < 0 || h.CPUs > 1<<20 {
		return fmt.Errorf("%w: hardware.cpus out of range", ErrInvalid)
	}
	return nil
}

// validate checks a room report as home receives it.
func (r RoomReport) validate() error {
	if err := checkText("room_id", r.RoomID, maxRoomID, true); err != nil {
		return err
	}
	if len(r.Members) > maxMembers {
		return fmt.Errorf("%w: members: more than %d", ErrInvalid, maxMembers)
	}
	for _, m := range r.Members {
		if err := checkText("members[]", m, maxMemberID, true); err != nil {
			return err
		}
	}
	if len(r.Properties) > maxProperties {
		return fmt.Errorf("%w: properties: more than %d", ErrInvalid, maxProperties)
	}
	for k, v := range r.Properties {
		if err := checkText("properties key", k, maxPropertyKey, true); err != nil {
			return err
		}
		if err := checkText("properties."+k, v, maxPropertyVal, false); err != nil {
			return err
		}
	}
	if r.Closed && (len(r.Members) > 0) {
		return fmt.Errorf("%w: a closed room has no members", ErrInvalid)
	}
	return nil
}

// validate checks and normalises a node spec.
func (s NodeSpec) validate() (NodeSpec, error) {
	if err := checkID("id", s.ID); err != nil {
		return s, err
	}
	c, ok := normCountry(s.Country)
	if !ok {
		return s, fmt.Errorf("%w: country %q must be an ISO 3166-1 alpha-2 code such as AU", ErrInvalid, s.Country)
	}
	s.Country = c
	if s.Name == "" {
		s.Name = s.ID
	}
	if err := checkLabel("name", s.Name); err != nil {
		return s, err
	}
	if err := checkText("region", s.Region, maxLabel, false); err != nil {
		return s, err
	}
	return s, nil
}
