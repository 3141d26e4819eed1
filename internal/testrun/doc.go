// Package testrun is test support for the time a test runs: GoRun runs a
// part's Run until the test ends and reports its error, WaitFor polls a
// condition with a deadline (a bound on a hung test, never a
// measurement), and Clock is a manual clock for stores and homes that
// take a Now function.
//
// It imports nothing of this module, so that any package's own tests,
// internal ones included, can use it. Clock is safe for concurrent use.
package testrun
