package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/console"
)

// runConsole serves the read-only web console of package console over a
// read-only Broker, which takes no lock: it runs beside the application
// that holds the directory, and sees what it appends (refreshed at most
// once a second).
func runConsole(e env, args []string) error {
	fs, dir := newFlags(e, "console", "console [-dir DIR] [-http HOST:PORT]")
	addr := fs.String("http", "localhost:8080", "the address to serve on (port 0 picks a free one)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	b, err := folio.OpenReadOnly(*dir, nil)
	if err != nil {
		return err
	}
	defer b.Close()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: console.New(b, nil), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-e.ctx.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fmt.Fprintf(e.stdout, "console of %s on http://%s/ (read-only; interrupt to stop)\n", *dir, ln.Addr())
	err = srv.Serve(ln)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
