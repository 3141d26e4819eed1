// Package cputime is the CPU time of the process it runs in, user and
// system together, for the benchmarks that report what a run cost: read
// it before and after, and take the difference. It is safe for
// concurrent use.
package cputime
