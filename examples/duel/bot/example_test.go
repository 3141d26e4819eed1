package bot_test

import (
	"context"
	"fmt"
	"time"

	"github.com/muster-gg/muster/examples/duel/bot"
)

// A bot queues for a duel through the fleet's public address, plays one
// match to its end and reports where it played and how long it queued.
func ExampleBot() {
	b, err := bot.New(bot.Config{URL: "http://127.0.0.1:8000/", Player: "ada", Matches: 1})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()

	b.Queue("duel")
	if err := <-done; err != nil {
		fmt.Println("stopped:", err)
	}
	r := b.Report()
	for _, rm := range r.Rooms {
		fmt.Printf("%s on %s after %v in the queue: %s\n", rm.ID, rm.Node, rm.Queued, rm.Reason)
	}
	for _, rd := range r.Redirects {
		fmt.Printf("sent from %s to %s (%s)\n", rd.From, rd.To, rd.Reason)
	}
	fmt.Println("always connected:", r.AlwaysConnected())
}
