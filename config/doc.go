// Package config reads Muster's settings: the keys under the root key muster
// of config.yml, overridden by MUSTER__ environment variables, into one
// Config that a server's start-up code hands to the packages it wires.
//
// Load (or Parse, for file content already in memory) starts from Default,
// applies the file, then the environment, then Validate. The environment
// names a key by its path in capitals: a double underscore between levels
// and a single underscore for a dash inside a key, matched without regard to
// case:
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
// at least MinKeyLen bytes. Validate holds every rule; muster config check
// and start-up both run it. No message shows a key, and a Redis URL's
// password is hidden (RedactURL).
//
// Beside muster.server and muster.security, the sections muster.room,
// muster.matchmaking (with its playlists) and muster.lobby configure the
// room host and the built-in modules: RoomConfig, MatchmakingConfig and
// LobbyConfig return the packages' Configs. A list's items are set from
// the environment by number: MUSTER__MATCHMAKING__PLAYLISTS__0__NAME=duel.
//
// What loading lets pass but a server should log at start, such as a
// MUSTER_SERVER_HTTP_PORT variable with single underscores (ignored), is in
// Config.Warnings.
//
// Loading has no side effects beyond reading the file; a Config is a plain
// value, safe to copy and to read from many goroutines.
package config
