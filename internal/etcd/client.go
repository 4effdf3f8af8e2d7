package etcd

import (
	"bytes"
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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"petstore/internal/filewatch"
)

// Config is what a Client needs: where etcd is and who to be there.
// Its String and LogValue leave the password out.
type Config struct {
	Endpoints []string // base URLs: "http://127.0.0.1:2379"
	CAFile    string   // PEM CA certificates for https endpoints; "" for the system roots
	User      string   // "" when etcd's auth is off
	Password  string   // never logged
}

// String describes cfg without its password.
func (cfg Config) String() string {
	s := "etcd " + strings.Join(cfg.Endpoints, ",")
	if cfg.User != "" {
		s += " as " + cfg.User
	}
	if cfg.CAFile != "" {
		s += " (CA " + cfg.CAFile + ")"
	}
	return s
}

// GoString is String, so that %#v shows no password either.
func (cfg Config) GoString() string { return cfg.String() }

// LogValue logs cfg without its password.
func (cfg Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("endpoints", strings.Join(cfg.Endpoints, ",")),
		slog.String("ca_file", cfg.CAFile),
		slog.String("user", cfg.User),
	)
}

const (
	// MaxAnswer bounds what the client reads of one gateway answer.
	// Callers that read ranges size their pages to fit well below it.
	MaxAnswer = 8 << 20
	// defaultTimeout bounds one unary request to one endpoint. etcd's own
	// is 7 s: waiting that long on a dead leader would hold every create.
	defaultTimeout = 2 * time.Second
	// roundFirst and roundMax bound the pause after a round of endpoints
	// that all failed, so that a call does not spin on a cluster that is
	// down.
	roundFirst = 20 * time.Millisecond
	roundMax   = 80 * time.Millisecond
)

// Client speaks etcd v3's JSON gateway. It is safe for concurrent use.
type Client struct {
	endpoints []string
	preferred atomic.Int32
	unary     *http.Client // every call but the watch; each call sets its own deadline
	stream    *http.Client // the watch: no overall timeout
	timeout   time.Duration

	user, password string // password: never logged
	authMu         sync.Mutex
	token          atomic.Pointer[string]
}

// New returns a client of the endpoints of cfg. It reads the CA file, if
// any, and does not connect yet.
func New(cfg Config) (*Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("etcd: no endpoints")
	}
	var tlsConfig *tls.Config
	if cfg.CAFile != "" {
		pem, err := filewatch.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrCAFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrCAFile, cfg.CAFile)
		}
		tlsConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &Client{
		endpoints: cfg.Endpoints,
		unary:     &http.Client{Transport: newTransport(tlsConfig)},
		stream:    &http.Client{Transport: newTransport(tlsConfig)},
		timeout:   defaultTimeout,
		user:      cfg.User,
		password:  cfg.Password,
	}, nil
}

func newTransport(tlsConfig *tls.Config) *http.Transport {
	return &http.Transport{
		Proxy:               nil, // etcd is reached directly, whatever HTTP_PROXY says
		DialContext:         (&net.Dialer{Timeout: time.Second, KeepAlive: 15 * time.Second}).DialContext,
		TLSClientConfig:     tlsConfig,
		TLSHandshakeTimeout: 2 * time.Second,
		// Every concurrent create batch, read-through and probe may hold a
		// connection; Go's default of 2 idle ones per host would make most
		// of them dial anew.
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}

// Close closes the idle connections.
func (c *Client) Close() {
	c.unary.CloseIdleConnections()
	c.stream.CloseIdleConnections()
}

// Timeout is the deadline of one unary request to one endpoint.
func (c *Client) Timeout() time.Duration { return c.timeout }

// endpoint returns the endpoint to try first.
func (c *Client) endpoint() (int, string) {
	i := int(c.preferred.Load()) % len(c.endpoints)
	return i, c.endpoints[i]
}

// rotate makes the endpoint after i the preferred one, unless another
// goroutine has moved on already.
func (c *Client) rotate(i int) {
	c.preferred.CompareAndSwap(int32(i), int32((i+1)%len(c.endpoints)))
}

// call sends one unary request. A read (write false) is retried on the
// other endpoints; a write is retried only where it cannot have been
// applied, and otherwise fails with ErrUnknownOutcome. It returns
// ErrUnreachable, wrapped with the last failure, when no endpoint
// answered before ctx's deadline or after two rounds of them.
func (c *Client) call(ctx context.Context, path string, in, out any, write bool) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	var last error
	reauthenticated := false
	pause := Backoff{First: roundFirst, Max: roundMax}
	for attempt := 0; attempt < 2*len(c.endpoints); attempt++ {
		if attempt > 0 && attempt%len(c.endpoints) == 0 {
			// A whole round failed: do not spin on a cluster that is down.
			if pause.Wait(ctx) != nil {
				return fmt.Errorf("%w: %w", ErrUnreachable, last)
			}
		}
		if ctx.Err() != nil {
			break
		}
		i, ep := c.endpoint()
		status, respBody, err := c.post(ctx, ep, path, body)
		if err != nil {
			if errors.Is(err, ErrAnswerTooLarge) {
				return fmt.Errorf("etcd %s %s: %w", ep, path, err)
			}
			last = fmt.Errorf("%s: %w", ep, err)
			c.rotate(i)
			if write && !notSent(err) {
				return fmt.Errorf("%w: %w", ErrUnknownOutcome, last)
			}
			continue
		}
		if status == http.StatusOK {
			return decodeAnswer(ep, path, respBody, out)
		}
		ge := decodeGatewayError(status, respBody)
		switch {
		case ge.unauthenticated() && c.user != "" && !reauthenticated:
			// The token expired (default TTL 5 minutes) or the member
			// restarted: a request refused for its token was not applied.
			reauthenticated = true
			if err := c.Authenticate(ctx); err != nil {
				return err
			}
			attempt--
		case ge.Transient():
			last = fmt.Errorf("%s: %w", ep, ge)
			c.rotate(i)
			if write {
				return fmt.Errorf("%w: %w", ErrUnknownOutcome, last)
			}
		default:
			return fmt.Errorf("etcd %s %s: %w", ep, path, ge)
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, last)
}

// decodeAnswer decodes the 200 answer of ep to path into out.
func decodeAnswer(ep, path string, body []byte, out any) error {
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("etcd %s %s: decoding the answer: %w", ep, path, err)
	}
	return nil
}

// post sends one request to one endpoint, bounded by c.timeout, and
// returns the status and the whole body.
func (c *Client) post(ctx context.Context, endpoint, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := c.newRequest(ctx, endpoint+path, body)
	if err != nil {
		return 0, nil, err
	}
	resp, err := c.unary.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	// An answer longer than MaxAnswer says so rather than leaving a cut
	// answer to fail decoding.
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return 0, nil, err
	}
	if len(respBody) > MaxAnswer {
		return 0, nil, fmt.Errorf("%w: more than %d bytes", ErrAnswerTooLarge, MaxAnswer)
	}
	return resp.StatusCode, respBody, nil
}

// newRequest makes a POST of body to url with the current token.
func (c *Client) newRequest(ctx context.Context, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t := c.token.Load(); t != nil {
		req.Header.Set("Authorization", *t) // the raw token: 3.4 refuses "Bearer …"
	}
	return req, nil
}

// Authenticate gets a token for the configured user, if any. Concurrent
// callers that all saw a 401 share one authentication. Its error names the
// user, never the password.
func (c *Client) Authenticate(ctx context.Context) error {
	if c.user == "" {
		return nil
	}
	before := c.token.Load()
	c.authMu.Lock()
	defer c.authMu.Unlock()
	if now := c.token.Load(); now != nil && now != before {
		return nil // another goroutine has just authenticated
	}
	c.token.Store(nil)
	var out struct {
		Token string `json:"token"`
	}
	in := map[string]string{"name": c.user, "password": c.password}
	if err := c.call(ctx, "/v3/auth/authenticate", in, &out, false); err != nil {
		// etcd's message ("authentication failed, invalid user ID or
		// password") names neither; ours names the user only.
		return fmt.Errorf("authenticating to etcd as %q: %w", c.user, err)
	}
	c.token.Store(&out.Token)
	return nil
}

// Range reads the keys r asks for.
func (c *Client) Range(ctx context.Context, r RangeRequest) (*RangeResponse, error) {
	var out RangeResponse
	if err := c.call(ctx, "/v3/kv/range", r, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}

// LeaseGrant asks for a lease of ttl seconds and returns its id.
func (c *Client) LeaseGrant(ctx context.Context, ttl int64) (int64, error) {
	var out leaseGrantResponse
	if err := c.call(ctx, "/v3/lease/grant", leaseGrantRequest{TTL: ttl}, &out, true); err != nil {
		return 0, err
	}
	if out.ID == 0 {
		return 0, errors.New("etcd granted a lease without an id")
	}
	return int64(out.ID), nil
}

// Txn sends a transaction. Its errors: ErrUnknownOutcome (wrapped) when it
// was sent and no answer came, ErrUnreachable (wrapped) when it cannot have
// been applied, a *GatewayError when etcd refused it.
func (c *Client) Txn(ctx context.Context, t *TxnRequest) (*TxnResponse, error) {
	var out TxnResponse
	if err := c.call(ctx, "/v3/kv/txn", t, &out, true); err != nil {
		return nil, err
	}
	return &out, nil
}

// ReadTxn sends a transaction of ranges only, which reads every range at
// one revision and changes nothing: a read, so it is tried on the other
// endpoints as Range is. A txn with a put is refused before it is sent.
func (c *Client) ReadTxn(ctx context.Context, t *TxnRequest) (*TxnResponse, error) {
	for _, op := range slices.Concat(t.Success, t.Failure) {
		if op.RequestPut != nil {
			return nil, errors.New("etcd: ReadTxn given a put")
		}
	}
	var out TxnResponse
	if err := c.call(ctx, "/v3/kv/txn", t, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}
