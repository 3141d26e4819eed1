// Package testrun is test support for the parts of a server a test runs:
// GoRun runs a part's Run until the test ends and reports its error,
// WaitFor polls a condition with a deadline (a bound on a hung test, never
// a measurement), Clock is a manual clock for stores and homes that take
// a Now function, and Logger writes their logs to the test's log.
//
// It imports nothing of this module, so that any package's own tests,
// internal ones included, can use it. Clock is safe for concurrent use.
package testrun
