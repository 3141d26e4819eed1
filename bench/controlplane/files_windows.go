package main

// checkFiles has nothing to check on Windows: a socket is a handle, and a
// process may hold millions, with no limit like RLIMIT_NOFILE to raise.
func checkFiles([]int) error { return nil }
