package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/foliolog/folio"
	"github.com/foliolog/folio/console"
	folioprom "github.com/foliolog/folio/metrics/prometheus"
	"github.com/foliolog/folio/transport"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	fs, dir := newFlags(e, "serve", "serve [-dir D] [-listen HOST:PORT] [-advertise HOST:PORT] [-http HOST:PORT] [-tls-cert F -tls-key F [-tls-client-ca F]]")
	listen := fs.String("listen", "localhost:9092", "the address to accept Kafka clients on (port 0: any free port, printed)")
	advertise := fs.String("advertise", "", "the host:port clients are told to connect to (default: the listening address)")
	partitions := fs.Int("partitions", transport.DefaultAutoCreatePartitions, "partitions of a topic a client creates by naming it (Kafka's num.partitions)")
	noAuto := fs.Bool("no-auto-create", false, "do not create topics that clients name (Kafka's auto.create.topics.enable=false)")
	verbose := fs.Bool("v", false, "log connection events and auto-created topics (level debug)")
	certFile := fs.String("tls-cert", "", "serve TLS with this PEM certificate (chain) file; needs -tls-key")
	keyFile := fs.String("tls-key", "", "the PEM private key of -tls-cert")
	clientCA := fs.String("tls-client-ca", "", "require client certificates signed by a CA in this PEM file")
	saslUsers := fs.String("sasl-users", "", "require SASL (PLAIN, SCRAM-SHA-256/512) with the users of this file (lines from folio sasl-user)")
	httpAddr := fs.String("http", "", "also serve the read-only web console and Prometheus /metrics on this address (port 0: any free port, printed)")
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
	tlsConfig, err := serveTLS(*certFile, *keyFile, *clientCA)
	if err != nil {
		return err
	}
	var sasl *transport.SASL
	if *saslUsers != "" {
		creds, err := transport.LoadCredentials(*saslUsers)
		if err != nil {
			return err
		}
		sasl = &transport.SASL{Credentials: creds, DisablePlain: tlsConfig == nil}
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
	var hl net.Listener
	if *httpAddr != "" {
		if hl, err = net.Listen("tcp", *httpAddr); err != nil {
			return err
		}
		defer hl.Close()
	}
	// With -http, the Broker reports to a Prometheus collector that
	// /metrics serves; without it, no hook costs anything.
	var metrics *folioprom.Collector
	var hook folio.Metrics
	if hl != nil {
		metrics = folioprom.New(nil)
		hook = metrics
	}
	b, err := openBrokerMetrics(e, *dir, true, hook)
	if err != nil {
		return err
	}
	defer closeBroker(b, &err)
	s, err := transport.NewServer(b, &transport.Options{
		Logger: logger, Advertise: *advertise,
		DisableAutoCreate: *noAuto, AutoCreatePartitions: int32(*partitions), TLS: tlsConfig, SASL: sasl,
	})
	if err != nil {
		return err
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(context.Background(), l) }()
	fmt.Fprintf(e.stdout, "listening on %s\n", l.Addr())
	logger.Info("folio serve: serving", "dir", *dir, "addr", l.Addr().String())
	if hl != nil {
		mh, err := metricsHandler(b, metrics)
		if err != nil {
			return err
		}
		// The console reads the serving Broker; it never writes.
		hs := &http.Server{Handler: console.New(b, &console.Options{Metrics: mh}), ReadHeaderTimeout: 10 * time.Second}
		hdone := make(chan struct{})
		go func() {
			defer close(hdone)
			if err := hs.Serve(hl); !errors.Is(err, http.ErrServerClosed) {
				logger.Error("folio serve: console", "err", err)
			}
		}()
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = hs.Shutdown(ctx)
			<-hdone
		}()
		fmt.Fprintf(e.stdout, "console on http://%s/\n", hl.Addr())
		fmt.Fprintf(e.stdout, "metrics on http://%s/metrics\n", hl.Addr())
	}
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

// metricsHandler returns the /metrics handler of serve -http: the Broker's
// collector (attached to b, so each scrape reads its Stats) with the Go
// runtime's and the process's collectors, on a registry of its own, never
// the global one.
func metricsHandler(b *folio.Broker, m *folioprom.Collector) (http.Handler, error) {
	m.Attach(b)
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// serveTLS builds the endpoint's TLS configuration from the flags: nil
// without -tls-cert.
func serveTLS(certFile, keyFile, clientCA string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "" && clientCA == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, usagef("-tls-cert and -tls-key go together")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS certificate: %w", err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if clientCA != "" {
		pem, err := os.ReadFile(clientCA)
		if err != nil {
			return nil, fmt.Errorf("TLS client CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("TLS client CA: no PEM certificate in %s", clientCA)
		}
		cfg.ClientAuth, cfg.ClientCAs = tls.RequireAndVerifyClientCert, pool
	}
	return cfg, nil
}

// runSASLUser prints a credentials line for folio serve -sasl-users: the
// password (the first line of stdin) salted and hashed for the mechanism,
// never the password itself.
func runSASLUser(e env, args []string) error {
	fs, _ := newFlags(e, "sasl-user", "sasl-user -user U [-mechanism SCRAM-SHA-256|SCRAM-SHA-512] < password")
	user := fs.String("user", "", "the user name (required)")
	mech := fs.String("mechanism", transport.MechanismSCRAMSHA256, "the SCRAM mechanism (PLAIN logins are checked against it too)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *user == "" {
		return usagef("-user is required")
	}
	line, err := bufio.NewReader(e.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return usagef("no password on stdin")
	}
	c, err := transport.NewCredential(*user, password, *mech)
	if err != nil {
		return err
	}
	out, err := json.Marshal(c)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "%s\n", out)
	return err
}
