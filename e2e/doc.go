// Package e2e holds the end-to-end tests of the duel example run as a
// fleet with real processes: a redis-server, three game servers on
// distinct loopback addresses (127.0.0.2, 127.0.0.3, 127.0.0.4) with their
// own node ids, and nginx balancing round robin in front of them on
// 127.0.0.1, with deploy/nginx-local.conf. Bots (examples/duel/bot) and
// headless Chromium play through nginx only. The package also checks the
// deployment recipes (Dockerfile, docker-compose.yml, deploy/) against the
// configuration and probe names the code accepts.
//
// The tests start every program on free ports and stop it when they end;
// they skip with a one-line reason when a program is missing, and fail
// instead when CI=true. They have no non-test code.
package e2e
