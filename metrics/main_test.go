package metrics_test

import (
	"bufio"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// waitFor bounds every wait in these tests; it is a failure deadline, never
// a measurement.
const waitFor = 10 * time.Second

// scrape GETs url and returns every sample of the text exposition, keyed
// by the series as printed: `name` or `name{label="value",…}`.
func scrape(t *testing.T, url string) map[string]float64 {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		t.Fatalf("scrape: %s\n%s", res.Status, body)
	}
	out := make(map[string]float64)
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("scrape: bad sample %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("scrape: %v", err)
	}
	return out
}

// eventually scrapes url until every check passes, and fails the test with
// the last failure when waitFor passes first.
func eventually(t *testing.T, url, what string, check func(m map[string]float64) string) map[string]float64 {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		m := scrape(t, url)
		problem := check(m)
		if problem == "" {
			return m
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s after %v", what, problem, waitFor)
		}
		time.Sleep(10 * time.Millisecond) // poll interval, not a guess at timing
	}
}

// want returns a check that every series has its value (NaN matches NaN).
func want(series map[string]float64) func(map[string]float64) string {
	return expect(series, "", func(got, v float64) bool { return got == v || math.IsNaN(v) && math.IsNaN(got) })
}

// atLeast returns a check that every series is at least its value.
func atLeast(series map[string]float64) func(map[string]float64) string {
	return expect(series, "at least ", func(got, v float64) bool { return got >= v })
}

// expect returns a check that every series is there and that ok holds of
// its value and the one in series; a failure says "want <how><value>".
func expect(series map[string]float64, how string, ok func(got, v float64) bool) func(map[string]float64) string {
	return func(m map[string]float64) string {
		for name, v := range series {
			got, found := m[name]
			switch {
			case !found:
				return name + " is missing"
			case !ok(got, v):
				return name + " = " + strconv.FormatFloat(got, 'g', -1, 64) + ", want " + how + strconv.FormatFloat(v, 'g', -1, 64)
			}
		}
		return ""
	}
}
