package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/foliolog/folio/transport"
)

// shutdownGrace is how long serve lets in-flight requests finish after
// SIGINT or SIGTERM before it closes their connections.
const shutdownGrace = 30 * time.Second

// runServe runs the Kafka endpoint on a data directory until SIGINT or
// SIGTERM: it prints "listening on ADDR" on stdout once it accepts
// connections (the real port with -listen HOST:0), logs with slog on
// stderr, and at the signal stops accepting, lets requests finish and
// closes the Broker (checkpoint, clean-shutdown marker).
func runServe(e env, args []string) (err error) {
	fs, dir := newFlags(e, "serve", "serve [-dir D] [-listen HOST:PORT] [-advertise HOST:PORT]")
	listen := fs.String("listen", "localhost:9092", "the address to accept Kafka clients on (port 0: any free port, printed)")
	advertise := fs.String("advertise", "", "the host:port clients are told to connect to (default: the listening address)")
	partitions := fs.Int("partitions", transport.DefaultAutoCreatePartitions, "partitions of a topic a client creates by naming it (Kafka's num.partitions)")
	noAuto := fs.Bool("no-auto-create", false, "do not create topics that clients name (Kafka's auto.create.topics.enable=false)")
	verbose := fs.Bool("v", false, "log connection events and auto-created topics (level debug)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *advertise != "" {
		if _, _, err := net.SplitHostPort(*advertise); err != nil {
			return usagef("-advertise %q: %v", *advertise, err)
		}
	}
	if *partitions < 1 || *partitions > 1<<20 {
		return usagef("-partitions %d: want at least 1", *partitions)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	defer l.Close()
	b, err := openBroker(e, *dir, true)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	s, err := transport.NewServer(b, &transport.Options{
		Logger: logger, Advertise: *advertise,
		DisableAutoCreate: *noAuto, AutoCreatePartitions: int32(*partitions),
	})
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), l) }()
	fmt.Fprintf(e.stdout, "listening on %s\n", l.Addr())
	logger.Info("folio serve: serving", "dir", *dir, "addr", l.Addr().String())
	select {
	case <-e.ctx.Done():
		logger.Info("folio serve: shutting down")
	case err := <-served:
		return err // the listener failed
	}
	ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	serr := s.Shutdown(ctx)
	if err := <-served; !errors.Is(err, transport.ErrServerClosed) {
		return err
	}
	if serr != nil {
		return fmt.Errorf("requests still in flight after %v were cut off: %w", shutdownGrace, serr)
	}
	return nil
}
