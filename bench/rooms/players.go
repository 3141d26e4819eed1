package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/muster-gg/muster/internal/testkit/benchgame"
)

// playerBytes serves a host on loopback, has a child process connect n
// players that say hello, and returns the server's heap growth per player,
// and that growth with the goroutine stacks' growth added.
func playerBytes(n int) (heapPer, withStacks float64, err error) {
	h, stop, err := benchgame.Start(rate, 0)
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	srv := &http.Server{Handler: h.Handler()}
	go srv.Serve(l)
	defer srv.Close()

	// Tickets for every player, passed to the child on its stdin.
	before, stacks0 := heap(), stacks()
	child := exec.Command(os.Args[0], "-role", "client", "-players", strconv.Itoa(n), "-url", "ws://"+l.Addr().String())
	stdin, err := child.StdinPipe()
	if err != nil {
		return 0, 0, err
	}
	stdout, err := child.StdoutPipe()
	if err != nil {
		return 0, 0, err
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		return 0, 0, err
	}
	defer child.Wait()
	defer child.Process.Kill()
	w := bufio.NewWriter(stdin)
	for i := range n {
		tk, err := h.Tickets().Issue(fmt.Sprintf("p%d", i))
		if err != nil {
			return 0, 0, err
		}
		fmt.Fprintln(w, tk)
	}
	w.Flush()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "connected\n" {
		return 0, 0, fmt.Errorf("clients: %q, %v", line, err)
	}
	after, stacks1 := heap(), stacks()
	stdin.Close() // the child closes its connections and exits
	runtime.KeepAlive(h)
	return float64(after-before) / float64(n), (float64(after-before) + float64(stacks1) - float64(stacks0)) / float64(n), nil
}

// stacks returns the bytes of goroutine stacks in use: a connection's
// goroutines cost memory the heap figure does not show.
func stacks() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse
}

// runClients connects one player per ticket read from stdin, waits for
// every welcome, prints "connected", and holds the connections until stdin
// closes (bounded by a minute).
func runClients(url string, n int) {
	in := bufio.NewScanner(os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conns := make([]*websocket.Conn, 0, n)
	for range n {
		if !in.Scan() {
			break
		}
		c, _, err := websocket.Dial(ctx, url+"/?ticket="+in.Text(), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, "dial:", err)
			os.Exit(1)
		}
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","data":{"mode":"new"}}`))
		if _, _, err := c.Read(ctx); err != nil { // the welcome
			fmt.Fprintln(os.Stderr, "welcome:", err)
			os.Exit(1)
		}
		conns = append(conns, c)
	}
	fmt.Println("connected")
	for in.Scan() {
	}
	for _, c := range conns {
		c.CloseNow()
	}
}
