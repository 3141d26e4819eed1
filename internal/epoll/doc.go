// Package epoll holds the system calls the event loops of the room host
// (room/loop_linux.go) and the relay (relay/loop_linux.go) share: a
// descriptor of a TCP connection duplicated to serve it off Go's poller,
// an epoll instance duplicated into an *os.File to wait for it in Go's
// poller, and a wait for the events ready. It is Linux only.
package epoll
