package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"testing"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/message"
)

// TestFolioBackend runs the service on the embedded Folio back end (the
// one CI can run; -kafka needs a cluster) and checks that every order got
// its receipt from the handler, in order: one partition, one subscriber.
func TestFolioBackend(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-dir", t.TempDir(), "-n", "5"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	for i := range 5 {
		fmt.Fprintf(&want, "receipt for order %d: billed order %d\n", i, i)
	}
	if out.String() != want.String() {
		t.Fatalf("output:\n%s\nwant:\n%s", out.String(), want.String())
	}
}

func TestUsage(t *testing.T) {
	if err := run(context.Background(), []string{"-h"}, io.Discard, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	if err := run(context.Background(), []string{"-n", "0"}, io.Discard, io.Discard); err == nil {
		t.Fatal("-n 0 accepted")
	}
}

// TestBillOrder: the handler refuses an order without an id and answers
// one with a receipt that carries it.
func TestBillOrder(t *testing.T) {
	msg := newMessage("order 7")
	if _, err := billOrder(msg); err == nil {
		t.Fatal("an order without an id was billed")
	}
	msg.Metadata.Set("order", "7")
	out, err := billOrder(msg)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Metadata.Get("order") != "7" || string(out[0].Payload) != "billed order 7" {
		t.Fatalf("receipt %+v", out)
	}
}

func newMessage(payload string) *message.Message {
	return message.NewMessage(watermill.NewUUID(), []byte(payload))
}
