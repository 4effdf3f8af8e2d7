// Command petstore serves the Pet Catalogue API: the categories pets are
// classified by, listed and created over HTTP with a bearer API key.
// Configuration comes from PETSTORE_* environment variables; see README.md.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"petstore/internal/accesslog"
	"petstore/internal/apikey"
	"petstore/internal/bodybudget"
	"petstore/internal/buildinfo"
	"petstore/internal/cpuprofile"
	"petstore/internal/envconf"
	"petstore/internal/filewatch"
	"petstore/internal/gcfloor"
	"petstore/internal/openapi"
	"petstore/internal/procs"
	"petstore/internal/ratelimit"

	"petstore/internal/connlimit"
	"petstore/internal/logsink"
	"petstore/internal/store"
	"petstore/internal/tlsreload"
)

func main() {
	// SIGINT and SIGTERM are caught from the start: the first stops run
	// (its context's cause says which signal, and where later ones
	// arrive: a second ends the shutdown delay).
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	ctx, stop := context.WithCancelCause(context.Background())
	go func() {
		sig := <-signals
		stop(&stopSignal{sig: sig, later: signals})
	}()
	stopProfile := cpuprofile.Start() // only in a build for default.pgo
	// The collector runs every 32 MiB of heap at most, not every 4 MiB,
	// unless the operator chose GOGC; a large catalogue is collected as
	// GOGC=100 would (see gcfloor).
	if os.Getenv("GOGC") == "" {
		defer gcfloor.Start(gcfloor.Floor).Stop()
	}
	err := run(ctx, os.Args, os.Environ(), os.Stdout, os.Stderr)
	stopProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "petstore:", err)
		os.Exit(1)
	}
}

// stopSignal is the cause of run's context when a signal stopped
// petstore: the signal, and the channel later stop signals arrive on.
type stopSignal struct {
	sig   os.Signal
	later <-chan os.Signal
}

func (s *stopSignal) Error() string { return "stopped by " + s.sig.String() }

// maxHeaderBlock bounds a request's line and header block: net/http answers
// a longer one 431 before petstore sees it. Its parser holds about 11 bytes
// of memory for every byte of a block of small headers, so the bound is
// what one connection can make the process hold (see connlimit.New).
const maxHeaderBlock = 16 << 10

// headerReadSlop is what net/http reads beyond http.Server.MaxHeaderBytes
// before it answers 431 (the size of its read buffer): MaxHeaderBytes is
// maxHeaderBlock less this, so that the bound in effect is maxHeaderBlock.
const headerReadSlop = 4096

// limits are the server's timeouts and bounds (docs/api.md, "Limits"). run
// serves with defaultLimits; tests shrink the times through runWithLimits so
// that they stay fast.
type limits struct {
	headerTimeout time.Duration // to read a request's headers; and a TLS handshake
	readTimeout   time.Duration // to read a whole request, body included
	idleTimeout   time.Duration // a keep-alive connection may wait for its next request
	bodyBudget    int64         // bytes that request bodies may hold at once
}

var defaultLimits = limits{
	headerTimeout: 5 * time.Second,
	readTimeout:   30 * time.Second,
	idleTimeout:   30 * time.Second,
	// 64 largest bodies at once: far more than the disk commits in the
	// time one takes to arrive, and a bound of its own on the memory
	// bodies take (docs/api.md, "Limits").
	bodyBudget: 64 * maxBodyBytes,
}

// commandsUsage is what -h says before the variables (see writeUsage).
const commandsUsage = `Usage: petstore [-h | -version | -openapi | -openapi-3.0 | -export [FILE] | -import FILE]

petstore serves the Pet Catalogue API. Without a flag it serves until it is
stopped (SIGINT or SIGTERM); SIGHUP reads the key file and the TLS pair
again. A flag runs one command instead and exits:

  -h                 print this help
  -version           print the version of this build (module version, VCS
                     revision and time when recorded) and the Go version
  -openapi           write the OpenAPI 3.1 document to stdout
  -openapi-3.0       write the same document in OpenAPI 3.0.3 to stdout
  -export [FILE]     write the categories of PETSTORE_DATA to FILE (all of
                     them, or no file at all) or to stdout, in the journal
                     format
  -import FILE       copy the journal FILE into the empty etcd prefix
                     PETSTORE_DATA names, keeping ids

Configuration comes from the environment:

`

// writeUsage writes what -h prints: the commands, then every variable of
// configVars.
func writeUsage(w io.Writer) error {
	var b strings.Builder
	b.WriteString(commandsUsage)
	envconf.Usage(&b, configVars)
	_, err := io.WriteString(w, b.String())
	return err
}

// run starts the service and serves until ctx is done, then shuts down
// gracefully; or, given a flag, runs that one command (see writeUsage). It reads
// configuration only from environ (NAME=value entries, as os.Environ gives
// them).
func run(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer) error {
	return runWithLimits(ctx, args, environ, stdout, stderr, defaultLimits)
}

// runWithLimits is run with the server's timeouts and bounds given.
func runWithLimits(ctx context.Context, args []string, environ []string, stdout, stderr io.Writer, lim limits) error {
	getenv := envconf.Getenv(environ)
	if len(args) > 1 {
		return runTool(args[1:], environ, getenv, stdout, stderr)
	}
	// SIGHUP reloads the key file; without one it is only logged, never
	// the end of the process that it is by default. It is caught from the
	// start, so one sent while petstore starts is not fatal either.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	cfg, err := configure(environ, getenv, stderr)
	if err != nil {
		return err
	}
	sink := logsink.New(stderr, logsink.FlushSize, logsink.FlushDelay)
	defer sink.Close()
	log := accesslog.NewJSONLogger(sink.Direct())

	commits := newCommitMetrics()
	store, closeStore, err := openStoreFor(cfg, getenv, log, commits)
	if err != nil {
		return err
	}
	defer closeStore()
	ln, conns, maxConns, err := listen(cfg, lim.idleTimeout)
	if err != nil {
		return err
	}
	defer ln.Close() // on the ways out before Serve, which closes it otherwise
	keys := apikey.NewRing(cfg.keys)
	ready := &readiness{}
	// Work beside the requests (key and certificate reloads, the rate
	// limiter's sweep) goes on while petstore serves, the shutdown delay
	// included, which outlasts ctx.
	serving, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	defer stopServing()
	handler, _, err := newServer(deps{
		store:     store,
		keys:      keys,
		log:       log,
		access:    sink,
		now:       time.Now,
		pets:      cfg.pets,
		bodies:    bodybudget.New(lim.bodyBudget, maxBodyBytes, lim.readTimeout),
		commits:   commits,
		rateLimit: startRateLimit(serving, cfg.rateLimit),
		cors:      cfg.cors,
		ready:     ready,
	})
	if err != nil {
		return err
	}
	srv := newHTTPServer(handler, lim, conns, log)
	startReloads(serving, hup, cfg, keys, srv, log)
	if err := logStart(ctx, cfg, store, ln.Addr(), maxConns, log, sink.Direct()); err != nil {
		return err
	}
	return serve(ctx, srv, conns.Listen(ln), store, conns, stopping{ready: ready, delay: cfg.drainDelay, grace: cfg.grace}, log)
}

// configure reads the configuration from getenv, having named on stderr
// the variables of environ that petstore does not read: before, since a
// misspelt name may be why the configuration is refused.
func configure(environ []string, getenv func(string) string, stderr io.Writer) (config, error) {
	unknownVars := warnUnknownVars(environ, getenv, accesslog.NewJSONLogger(stderr))
	cfg, err := loadConfig(getenv)
	cfg.unknownVars = unknownVars
	return cfg, err
}

// startReloads serves srv with the TLS pair of cfg, if any, and reloads the
// pair and the key file on SIGHUP and when they change, until serving is
// done.
func startReloads(serving context.Context, hup <-chan os.Signal, cfg config, keys *apikey.Ring, srv *http.Server, log *slog.Logger) {
	var reloads []*filewatch.Reloader
	if cfg.tls != nil {
		pair := tlsreload.New(cfg.tls, cfg.filePoll, log)
		srv.TLSConfig = pair.ServerConfig()
		reloads = append(reloads, pair.Reloader())
	}
	if cfg.keyFile != nil {
		reloads = append(reloads, cfg.keyFile.Rotation(keys, cfg.envKeys, cfg.filePoll, log))
	}
	if len(reloads) == 0 {
		go logHangups(serving, hup, log)
		return
	}
	go filewatch.Serve(serving, hup, cfg.filePoll, reloads...)
}

// logHangups logs each signal on hup until ctx is done: with no key file
// and no TLS pair, a SIGHUP has nothing to reload.
func logHangups(ctx context.Context, hup <-chan os.Signal, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			log.Info("SIGHUP: no PETSTORE_API_KEYS_FILE and no TLS certificate to reload; nothing changes")
		}
	}
}

// runTool runs the one command args names (see writeUsage) instead of
// serving; getenv reads environ.
func runTool(args []string, environ []string, getenv func(string) string, stdout, stderr io.Writer) error {
	switch args[0] {
	case "-h", "-help", "--help":
		err := writeUsage(stdout)
		return err
	case "-version", "--version":
		_, err := fmt.Fprintln(stdout, buildinfo.Read())
		return err
	case "-openapi":
		return writeOpenAPI(getenv, stdout, false)
	case "-openapi-3.0":
		return writeOpenAPI(getenv, stdout, true)
	case "-import", "-export":
		cfg, err := configure(environ, getenv, stderr)
		if err != nil {
			return err
		}
		log := accesslog.NewJSONLogger(stderr)
		switch {
		case args[0] == "-export" && len(args) == 1:
			return exportToStdout(cfg, log, stdout, stderr)
		case args[0] == "-export" && len(args) == 2:
			return exportToFile(cfg, log, args[1], stderr)
		case args[0] == "-import" && len(args) == 2:
			return importJournal(cfg, log, args[1], stderr)
		}
		return fmt.Errorf("usage: petstore -import JOURNAL_FILE, or petstore -export [FILE] (see -help)")
	}
	return fmt.Errorf("unexpected argument %q: petstore is configured through PETSTORE_* environment variables (see -help)", args[0])
}

// openStoreFor opens the store PETSTORE_DATA names, reporting its commits to
// commits. The returned func closes it (again, if serve closed it already).
func openStoreFor(cfg config, getenv func(string) string, log *slog.Logger, commits *commitMetrics) (Store, func(), error) {
	opts := store.Options{Log: log, OnCommit: commits.observe, IdempotencyTTL: cfg.idemTTL, MaxCategories: cfg.maxCats}
	stopBoost := func() {}
	// An explicit GOMAXPROCS in the environment is left alone. With etcd
	// there is no local disk sync for a second P to overlap.
	if cfg.dataPath != store.MemoryPath && !store.IsEtcdURL(cfg.dataPath) && getenv("GOMAXPROCS") == "" {
		if boost := procs.New(runtime.GOMAXPROCS(0), log); boost != nil {
			opts.OnBatch = boost.Batch
			stopBoost = boost.Stop
		}
	}
	s, err := openStore(cfg.dataPath, cfg.etcd, opts)
	if err != nil {
		stopBoost()
		return nil, nil, storeError(err)
	}
	return s, func() {
		s.Close()
		stopBoost()
	}, nil
}

// listen opens the listening socket of PETSTORE_ADDR, synchronously so that
// a bad address fails the start, and the limiter that caps its connections
// at maxConns and closes those idle for idle.
func listen(cfg config, idle time.Duration) (ln net.Listener, conns *connlimit.Limiter, maxConns int, err error) {
	maxConns, err = connlimit.Cap(cfg.maxConns)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("PETSTORE_MAX_CONNS: %w", err)
	}
	ln, err = net.Listen("tcp", cfg.addr)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("PETSTORE_ADDR: %w", err)
	}
	return ln, connlimit.New(maxConns, idle), maxConns, nil
}

// startRateLimit returns the buckets of the request budget rl, swept of
// idle buckets until ctx is done, or nil when there is no budget.
func startRateLimit(ctx context.Context, rl *ratelimit.Budget) *ratelimit.Buckets {
	if rl == nil {
		return nil
	}
	b := ratelimit.New(*rl, time.Now)
	go b.Sweep(ctx)
	return b
}

// newHTTPServer returns the server of handler, with the timeouts and header
// bound of lim, its connections counted by conns. It speaks HTTP/1.1, and
// HTTP/2 when served over TLS (offered by ALPN).
func newHTTPServer(handler http.Handler, lim limits, conns *connlimit.Limiter, log *slog.Logger) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: lim.headerTimeout,
		ReadTimeout:       lim.readTimeout,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       connlimit.NoServerIdleTimeout, // conns closes idle connections after lim.idleTimeout
		MaxHeaderBytes:    maxHeaderBlock - headerReadSlop,
		ConnState:         conns.ConnState,
		ConnContext:       conns.ConnContext,
		ErrorLog:          accesslog.ServerErrorLog(log, time.Now),
		Protocols:         &protocols,
		// What one HTTP/2 connection may make the server hold
		// (docs/security.md, "HTTP/2"): maxStreams streams at once (more
		// are refused, each with its own RST_STREAM); frames of 16 KiB,
		// the smallest allowed, since the server takes a frame's whole
		// buffer when its header arrives; and 64 KiB of request body not
		// yet read by a handler, per connection and per stream, which
		// flow control holds the client to. The header block is bounded
		// by MaxHeaderBytes, as over HTTP/1.1.
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams:          maxStreams,
			MaxReadFrameSize:              16 << 10,
			MaxReceiveBufferPerConnection: 64 << 10,
			MaxReceiveBufferPerStream:     64 << 10,
		},
	}
}

// maxStreams is how many streams an HTTP/2 connection may have open at
// once: the least RFC 9113 advises, and 100 handlers of one connection
// waiting for bodies fit the body budget (64 of the largest at once).
const maxStreams = 100

// logStart logs the "listening" line (which tests and operators wait for)
// and, when the key was generated, prints it once to direct, outside the
// JSON log, so that `go run .` just works.
func logStart(ctx context.Context, cfg config, store Store, addr net.Addr, maxConns int, log *slog.Logger, direct io.Writer) error {
	snap, err := store.List(ctx)
	if err != nil {
		return fmt.Errorf("PETSTORE_DATA: %w", err)
	}
	log.Info("listening", "addr", addr.String(), "tls", cfg.tls != nil, "data", cfg.dataPath, "categories", snap.Len(), "api_keys", len(cfg.keys), apikey.ScopeCounts(cfg.keys), "max_conns", maxConns, "rate_limit", cfg.rateLimit.String(), "cors_origins", cfg.cors.String(), "shutdown_delay", cfg.drainDelay.String(), "shutdown_grace", cfg.grace.String(), unknownVarsAttr(cfg.unknownVars))
	if cfg.generatedKey {
		fmt.Fprintf(direct, "petstore: no API key configured; generated one for this run. To use it:\n  export PETSTORE_API_KEYS=%s\n", cfg.keys[0].Secret)
	}
	return nil
}

// stopping is how serve stops once its context is done.
type stopping struct {
	ready *readiness
	delay time.Duration // served on, not ready, for this long (docs/operations.md, "Readiness and draining")
	grace time.Duration // then in-flight requests get this long to finish
}

// serve serves srv on ln until it fails or ctx is done; then it stops:
// /readyz turns 503 and everything else is served on for stop.delay, or
// until a second stop signal; then in-flight requests get stop.grace to
// finish, and the store is closed, which makes what it accepted durable.
func serve(ctx context.Context, srv *http.Server, ln net.Listener, store Store, conns *connlimit.Limiter, stop stopping, log *slog.Logger) error {
	serveErr := make(chan error, 1)
	go func() {
		if srv.TLSConfig != nil {
			serveErr <- srv.ServeTLS(ln, "", "") // the certificate comes from TLSConfig
			return
		}
		serveErr <- srv.Serve(ln)
	}()
	select {
	case err := <-serveErr:
		return err
	case <-ctx.Done():
	}
	if err := drain(ctx, srv, conns, stop, serveErr, log); err != nil {
		return err
	}
	grace := stop.grace
	log.Info("shutting down", "grace", grace.String())
	shutdownCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	finishInFlight(shutdownCtx, conns)
	if err := srv.Shutdown(shutdownCtx); err != nil {
		// The grace is over: what is left is a client too slow to finish
		// (a body sent byte by byte, say). Closing its connection ends its
		// request; that is the stop working as designed, not a failure.
		log.Warn("grace over; closing the connections left", "open", conns.Open(), "cause", err.Error())
		srv.Close()
	}
	if err := <-serveErr; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	if err := store.Close(); err != nil {
		return fmt.Errorf("closing the journal: %w", err)
	}
	log.Info("stopped")
	return nil
}

// finishInFlight stops accepting connections and waits, until ctx is
// done, for the requests under way on those accepted to be answered. The
// server's Shutdown comes after: it drops a request it reads once it has
// begun, so a client whose connection was accepted just before would have
// it closed under its request.
func finishInFlight(ctx context.Context, conns *connlimit.Limiter) {
	conns.StopAccepting()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for conns.InFlight() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// drain marks petstore not ready and serves on for stop.delay, unless a
// second SIGINT or SIGTERM ends the delay first (when a signal stopped
// serve: see stopSignal), or the server fails, which it returns. Meanwhile
// keep-alive clients are sent on, so that none is left with a connection
// the stop closes under a request (docs/operations.md, "Readiness and
// draining"): HTTP/1.1 answers carry Connection: close at once (see
// closeWhileDraining), and once the busy connections have had time to end
// that way, HTTP/2 connections get GOAWAY when their streams are done and
// the connections still idle are closed: not while a request has come on
// one of them and waits to be read (by a server short of CPU, say), which
// closing it would lose.
func drain(ctx context.Context, srv *http.Server, conns *connlimit.Limiter, stop stopping, serveErr <-chan error, log *slog.Logger) error {
	stop.ready.draining.Store(true)
	if stop.delay <= 0 {
		return nil
	}
	var again <-chan os.Signal // nil, which never receives, unless a signal stopped serve
	if s, ok := context.Cause(ctx).(*stopSignal); ok {
		again = s.later
	}
	log.Info("draining: not ready, serving on", "delay", stop.delay.String())
	delay := time.NewTimer(stop.delay)
	defer delay.Stop()
	goAway := time.NewTimer(min(stop.delay/2, time.Second))
	defer goAway.Stop()
	for {
		select {
		case <-goAway.C:
			if conns.Arriving() > 0 {
				goAway.Reset(5 * time.Millisecond)
				continue
			}
			srv.SetKeepAlivesEnabled(false)
			continue
		case <-delay.C:
		case sig := <-again:
			log.Info("a second stop signal ends the delay", "signal", sig.String())
		case err := <-serveErr:
			return err
		}
		return nil
	}
}

// writeOpenAPI writes the OpenAPI document that the service would serve with
// this configuration (its 3.0.3 form when v30), so that it can be checked
// without starting a server.
func writeOpenAPI(getenv func(string) string, stdout io.Writer, v30 bool) error {
	pets, err := loadPetsDeprecation(getenv) // the document needs nothing else
	if err != nil {
		return err
	}
	_, doc, err := newServer(deps{pets: pets})
	if err != nil {
		return err
	}
	if v30 {
		if doc, err = openapi.Convert30(doc); err != nil {
			return err
		}
	}
	_, err = stdout.Write(append(doc, '\n'))
	return err
}
