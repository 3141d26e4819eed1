// Package config reads Muster's settings: the keys under the root key muster
// of config.yml, overridden by MUSTER__ environment variables, into one
// Config of plain fields. It imports no other package of Muster's: the
// root package muster holds the defaults (muster.DefaultConfig, each
// package's own), checks what only those packages can decide
// (muster.CheckConfig) and builds a server from a Config.
//
// Load (or Parse, for file content already in memory) starts from a base
// Config (the defaults), applies the file, then the environment, then any
// Checks it is given, then Validate. The environment names a key by its
// path in capitals: a double underscore between levels and a single
// underscore for a dash inside a key, matched without regard to case:
//
//	MUSTER__SERVER__FLEET__REDIS=redis:6379
//	MUSTER__SERVER__CAPACITY__MAX_LOAD=300
//
// A key left empty in the file (null) keeps its default; an empty variable
// sets the empty string. Durations are seconds (2, 0.5) or Go duration
// strings ("1500ms").
//
// Any bad setting (malformed YAML, an unknown key under muster, a value of the
// wrong type or out of range) is an *Error whose message is one line naming
// the key both as config.yml and as the environment write it, the problem
// (with "did you mean" for a near miss) and where the value came from, fit
// to stop start-up with. Keys of the file outside muster are left to the
// game. A fleet (muster.server.fleet.redis set) needs muster.security.key,
// at least MinKeyLen bytes. Validate holds every rule that needs no other
// package; a Check given to Load adds the rest (Invalid makes its errors),
// and Load names where the value it blames came from. No message shows a
// key, and a Redis URL's password is hidden (RedactURL).
//
// Beside muster.server and muster.security, the sections muster.room,
// muster.matchmaking (with its playlists), muster.lobby and
// muster.federation configure the room host, the built-in modules and a
// federation node's server. A list's items are set from the environment by
// number: MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duel.
//
// What loading lets pass but a server should log at start, such as a
// MUSTER_SERVER_HTTP_PORT variable with single underscores (ignored), is in
// Config.Warnings.
//
// Loading does no I/O beyond reading the file Load is given (and what the
// checks it is given read); a Config is a plain value, safe to copy and to
// read from many goroutines.
package config
