// Package dockertest runs the Docker recipes (docker-compose.yml, the
// Dockerfile) for real, for the tests of deploy: a Docker engine, the base
// images the recipes name, and compose projects that a test owns.
//
// NeedEngine checks for the docker CLI and its compose plugin and for an
// engine that answers; when none answers and dockerd can be started (root,
// dockerd on PATH), it starts one for the test and stops it when the test
// ends. What is missing skips the test with one line, or fails it under
// CI (testbin.Unavailable).
//
// BaseImages builds, once per machine, local stand-ins for the official
// images the recipes pull (golang, redis, nginx), from Debian packages: a
// debootstrap root file system brought in with docker import, Debian's
// redis-server and nginx, and this machine's Go toolchain. They are tagged
// by a hash of their recipe, so a machine keeps them between runs and a
// changed recipe builds new ones.
//
// A Project is one compose project (its own name, network and
// containers) that a test runs the recipe's commands in, removed with
// docker compose down -v when the test ends, also on failure. Events
// records what the engine reports about a project's containers (their
// exits and exit codes), including containers compose removes.
package dockertest
