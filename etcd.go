package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// etcdClient speaks etcd v3's JSON gateway (POST /v3/…) with net/http and
// encoding/json only. It is safe for concurrent use.
//
// It is honest about failure (STYLE.md, habit 15). Every call has a
// deadline. A request that cannot have reached etcd (a refused connection)
// goes to the next endpoint, and so does a read that failed in any
// transient way (timeout, connection lost, 503, 504). A write that failed
// after it was sent has an unknown outcome: the client says so
// (errUnknownOutcome) and leaves the settling to its caller, which knows how
// to read the outcome back. A 4xx is final, except 401, after which the
// client authenticates again once.
type etcdClient struct {
	endpoints []string // base URLs: "http://127.0.0.1:2379"
	preferred atomic.Int32
	unary     *http.Client // every call but the watch; each call sets its own deadline
	stream    *http.Client // the watch: no overall timeout

	// timeout bounds one unary request to one endpoint. etcd's own is 7 s:
	// waiting that long on a dead leader would hold every create.
	timeout time.Duration

	user, password string // password: never logged
	authMu         sync.Mutex
	token          atomic.Pointer[string]
}

// etcdConfig is what PETSTORE_DATA=etcd://… and the PETSTORE_ETCD_*
// variables configure.
type etcdConfig struct {
	endpoints    []string // base URLs
	prefix       string   // without slashes: "petstore"
	caFile       string
	user         string
	password     string // read from PETSTORE_ETCD_PASSWORD_FILE; never logged
	startTimeout time.Duration
}

// etcdDefaultTimeout bounds one unary request to one endpoint.
const etcdDefaultTimeout = 2 * time.Second

func newEtcdClient(cfg etcdConfig) (*etcdClient, error) {
	var tlsConfig *tls.Config
	if cfg.caFile != "" {
		pem, err := os.ReadFile(cfg.caFile)
		if err != nil {
			return nil, fmt.Errorf("PETSTORE_ETCD_CA_FILE: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("PETSTORE_ETCD_CA_FILE: %s holds no PEM certificate", cfg.caFile)
		}
		tlsConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	transport := func() *http.Transport {
		return &http.Transport{
			Proxy:               nil, // etcd is reached directly, whatever HTTP_PROXY says
			DialContext:         (&net.Dialer{Timeout: time.Second, KeepAlive: 15 * time.Second}).DialContext,
			TLSClientConfig:     tlsConfig,
			TLSHandshakeTimeout: 2 * time.Second,
			// Every concurrent create batch, read-through and probe may
			// hold a connection; Go's default of 2 idle ones per host
			// would make most of them dial anew.
			MaxIdleConnsPerHost: 64,
			IdleConnTimeout:     90 * time.Second,
			DisableCompression:  true,
		}
	}
	return &etcdClient{
		endpoints: cfg.endpoints,
		unary:     &http.Client{Transport: transport()},
		stream:    &http.Client{Transport: transport()},
		timeout:   etcdDefaultTimeout,
		user:      cfg.user,
		password:  cfg.password,
	}, nil
}

func (c *etcdClient) close() {
	c.unary.CloseIdleConnections()
	c.stream.CloseIdleConnections()
}

// i64 is an int64 of etcd's JSON: the gateway writes int64 and uint64 as
// strings ("revision":"2") but accepts numbers, and other versions or
// proxies may write numbers; both decode.
type i64 int64

func (n *i64) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		s = s[1 : len(s)-1]
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// uint64 fields (member ids) may exceed int64; keep their bits.
		u, uerr := strconv.ParseUint(s, 10, 64)
		if uerr != nil {
			return fmt.Errorf("etcd: %s is not an integer", b)
		}
		v = int64(u)
	}
	*n = i64(v)
	return nil
}

// The gateway's JSON shapes (etcd's api/etcdserverpb/rpc.proto). Zero values
// are omitted both ways: a missing key has no kvs and no count, a failed txn
// has no succeeded. Unknown input members are silently ignored by etcd, so
// the tests pin these names.
type (
	etcdHeader struct {
		Revision i64 `json:"revision"`
		MemberID i64 `json:"member_id"`
	}
	etcdKV struct {
		Key            []byte `json:"key"` // []byte: standard base64, as etcd wants
		Value          []byte `json:"value"`
		CreateRevision i64    `json:"create_revision"`
		ModRevision    i64    `json:"mod_revision"`
	}
	rangeRequest struct {
		Key          []byte `json:"key"`
		RangeEnd     []byte `json:"range_end,omitempty"`
		Limit        int64  `json:"limit,omitempty"`
		Revision     int64  `json:"revision,omitempty"`
		KeysOnly     bool   `json:"keys_only,omitempty"`
		CountOnly    bool   `json:"count_only,omitempty"`
		Serializable bool   `json:"serializable,omitempty"`
	}
	rangeResponse struct {
		Header etcdHeader `json:"header"`
		Kvs    []etcdKV   `json:"kvs"`
		More   bool       `json:"more"`
		Count  i64        `json:"count"`
	}
	putRequest struct {
		Key   []byte `json:"key"`
		Value []byte `json:"value"`
		Lease int64  `json:"lease,omitempty"` // the key goes when the lease expires
	}
	leaseGrantRequest struct {
		TTL int64 `json:"TTL"` // seconds
	}
	leaseGrantResponse struct {
		ID  i64 `json:"ID"`
		TTL i64 `json:"TTL"`
	}
	// etcdCompare: the one of CreateRevision and ModRevision that Target
	// names is sent, zero included, so that the compare never depends on
	// etcd's reading of an absent member.
	etcdCompare struct {
		Target         string `json:"target"` // CREATE, MOD
		Result         string `json:"result"` // EQUAL
		Key            []byte `json:"key"`
		CreateRevision *int64 `json:"create_revision,omitempty"`
		ModRevision    *int64 `json:"mod_revision,omitempty"`
	}
	etcdOp struct {
		RequestPut   *putRequest   `json:"request_put,omitempty"`
		RequestRange *rangeRequest `json:"request_range,omitempty"`
	}
	txnRequest struct {
		Compare []etcdCompare `json:"compare"`
		Success []etcdOp      `json:"success"`
		Failure []etcdOp      `json:"failure"`
	}
	txnResponse struct {
		Header    etcdHeader `json:"header"`
		Succeeded bool       `json:"succeeded"`
		Responses []struct {
			ResponseRange *rangeResponse `json:"response_range"`
		} `json:"responses"`
	}
)

// prefixEnd returns the range_end that makes a range cover every key that
// starts with prefix: the prefix with its last byte plus one ("c/" → "c0").
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return []byte{0} // every key
}

// gatewayError is an answer of etcd other than 200, decoded whatever the
// version: 3.4 {"error","message","code"}, 3.5 the same in another order,
// 3.6 {"code","message"}, a watch {"error":{"grpc_code",…}}.
type gatewayError struct {
	status  int    // HTTP status
	code    int    // gRPC code: 3 invalid argument, 14 unavailable, 16 unauthenticated …
	message string // etcd's text, for the log
}

func (e *gatewayError) Error() string {
	return fmt.Sprintf("etcd answered %d (gRPC code %d): %s", e.status, e.code, e.message)
}

// transient reports whether another endpoint, or the same one a little
// later, may answer differently: 503 Unavailable and 504 Deadline exceeded.
func (e *gatewayError) transient() bool {
	return e.status == http.StatusServiceUnavailable || e.status == http.StatusGatewayTimeout ||
		e.code == 14 || e.code == 4
}

func (e *gatewayError) unauthenticated() bool {
	return e.status == http.StatusUnauthorized || e.code == 16
}

func decodeGatewayError(status int, body []byte) *gatewayError {
	e := &gatewayError{status: status, message: http.StatusText(status)}
	var raw struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
		Code    *int            `json:"code"`
	}
	if json.Unmarshal(body, &raw) != nil {
		if s := strings.TrimSpace(string(body)); s != "" {
			e.message = truncate(s, 200)
		}
		return e
	}
	if raw.Code != nil {
		e.code = *raw.Code
	}
	var text string
	if json.Unmarshal(raw.Error, &text) == nil && text != "" {
		e.message = text
	}
	var nested struct {
		GRPCCode *int   `json:"grpc_code"`
		Code     *int   `json:"code"`
		HTTPCode int    `json:"http_code"`
		Message  string `json:"message"`
	}
	if json.Unmarshal(raw.Error, &nested) == nil {
		switch {
		case nested.GRPCCode != nil:
			e.code = *nested.GRPCCode
		case nested.Code != nil:
			e.code = *nested.Code
		}
		if nested.HTTPCode != 0 && e.status == http.StatusOK {
			e.status = nested.HTTPCode
		}
		if nested.Message != "" {
			e.message = nested.Message
		}
	}
	if raw.Message != nil && *raw.Message != "" {
		e.message = *raw.Message
	}
	return e
}

// errUnknownOutcome: a write was sent and no answer came back (timeout,
// connection lost, 503, 504). etcd may have applied it, may apply it
// later, or never: the caller must settle it by reading back.
var errUnknownOutcome = errors.New("etcd: the outcome of a write is unknown")

// errAnswerTooLarge: etcd's answer was longer than maxGatewayAnswer. It is
// final: another endpoint holds the same data. A caller that reads a range
// asks again for fewer keys.
var errAnswerTooLarge = errors.New("etcd: the answer is too large")

// errEtcdUnreachable: no endpoint answered within the call's deadline.
var errEtcdUnreachable = errors.New("etcd: no endpoint answered")

// notSent reports whether err happened before the request could reach
// etcd, so that sending it elsewhere cannot apply it twice.
func notSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var tlsErr *tls.RecordHeaderError
	return errors.As(err, &tlsErr)
}

// endpoint returns the endpoint to try first.
func (c *etcdClient) endpoint() (int, string) {
	i := int(c.preferred.Load()) % len(c.endpoints)
	return i, c.endpoints[i]
}

// rotate makes the endpoint after i the preferred one, unless another
// goroutine has moved on already.
func (c *etcdClient) rotate(i int) {
	c.preferred.CompareAndSwap(int32(i), int32((i+1)%len(c.endpoints)))
}

// call sends one unary request. A read (write false) is retried on the
// other endpoints; a write is retried only where it cannot have been
// applied, and otherwise fails with errUnknownOutcome. It returns
// errEtcdUnreachable, wrapped with the last failure, when no endpoint
// answered before ctx's deadline or after two rounds of them.
func (c *etcdClient) call(ctx context.Context, path string, in, out any, write bool) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	var last error
	reauthenticated := false
	backoff := 20 * time.Millisecond
	for attempt := 0; attempt < 2*len(c.endpoints); attempt++ {
		if attempt > 0 && attempt%len(c.endpoints) == 0 {
			// A whole round failed: do not spin on a cluster that is down.
			select {
			case <-ctx.Done():
				return fmt.Errorf("%w: %w", errEtcdUnreachable, last)
			case <-time.After(backoff):
			}
			backoff *= 4
		}
		if ctx.Err() != nil {
			break
		}
		i, ep := c.endpoint()
		status, respBody, err := c.post(ctx, ep, path, body)
		if errors.Is(err, errAnswerTooLarge) {
			return fmt.Errorf("etcd %s %s: %w", ep, path, err)
		}
		if err != nil {
			last = fmt.Errorf("%s: %w", ep, err)
			c.rotate(i)
			if write && !notSent(err) {
				return fmt.Errorf("%w: %w", errUnknownOutcome, last)
			}
			continue
		}
		if status == http.StatusOK {
			if err := json.Unmarshal(respBody, out); err != nil {
				return fmt.Errorf("etcd %s %s: decoding the answer: %w", ep, path, err)
			}
			return nil
		}
		ge := decodeGatewayError(status, respBody)
		switch {
		case ge.unauthenticated() && c.user != "" && !reauthenticated:
			// The token expired (default TTL 5 minutes) or the member
			// restarted: a request refused for its token was not applied.
			reauthenticated = true
			if err := c.authenticate(ctx); err != nil {
				return err
			}
			attempt--
		case ge.transient():
			last = fmt.Errorf("%s: %w", ep, ge)
			c.rotate(i)
			if write {
				return fmt.Errorf("%w: %w", errUnknownOutcome, last)
			}
		default:
			return fmt.Errorf("etcd %s %s: %w", ep, path, ge)
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return fmt.Errorf("%w: %w", errEtcdUnreachable, last)
}

// post sends one request to one endpoint, bounded by c.timeout, and
// returns the status and the whole body.
func (c *etcdClient) post(ctx context.Context, endpoint, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if t := c.token.Load(); t != nil {
		req.Header.Set("Authorization", *t) // the raw token: 3.4 refuses "Bearer …"
	}
	resp, err := c.unary.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	// Pages are sized to fit well below (see catchUp); an answer that is
	// longer holds values no category needs, which another writer put
	// there, and says so rather than leaving a cut answer to fail decoding.
	respBody, err := io.ReadAll(io.LimitReader(resp.Body, maxGatewayAnswer+1))
	if err != nil {
		return 0, nil, err
	}
	if len(respBody) > maxGatewayAnswer {
		return 0, nil, fmt.Errorf("%w: more than %d bytes", errAnswerTooLarge, maxGatewayAnswer)
	}
	return resp.StatusCode, respBody, nil
}

// authenticate gets a token for c.user. Concurrent callers that all saw a
// 401 share one authentication.
func (c *etcdClient) authenticate(ctx context.Context) error {
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

// rangeKeys reads keys [key, end) (or key alone when end is nil),
// linearizably unless serializable is set.
func (c *etcdClient) rangeKeys(ctx context.Context, r rangeRequest) (*rangeResponse, error) {
	var out rangeResponse
	if err := c.call(ctx, "/v3/kv/range", r, &out, false); err != nil {
		return nil, err
	}
	return &out, nil
}

// leaseGrant asks for a lease of ttl seconds and returns its id.
func (c *etcdClient) leaseGrant(ctx context.Context, ttl int64) (int64, error) {
	var out leaseGrantResponse
	if err := c.call(ctx, "/v3/lease/grant", leaseGrantRequest{TTL: ttl}, &out, true); err != nil {
		return 0, err
	}
	if out.ID == 0 {
		return 0, errors.New("etcd granted a lease without an id")
	}
	return int64(out.ID), nil
}

// txn sends a transaction; see call for what its errors mean.
func (c *etcdClient) txn(ctx context.Context, t *txnRequest) (*txnResponse, error) {
	var out txnResponse
	if err := c.call(ctx, "/v3/kv/txn", t, &out, true); err != nil {
		return nil, err
	}
	return &out, nil
}

// watchEvent is one change a watch reports.
type watchEvent struct {
	Type string `json:"type"` // "" for a put (zero values are omitted), "DELETE"
	KV   etcdKV `json:"kv"`
}

// watchResult is one line of a watch stream.
type watchResult struct {
	Result *struct {
		Header          etcdHeader   `json:"header"`
		Created         bool         `json:"created"`
		Canceled        bool         `json:"canceled"`
		CompactRevision i64          `json:"compact_revision"`
		CancelReason    string       `json:"cancel_reason"`
		Events          []watchEvent `json:"events"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// errCompacted: the revision a watch was to start from is compacted away.
type errCompacted struct{ revision int64 }

func (e *errCompacted) Error() string {
	return fmt.Sprintf("etcd: revision compacted (oldest kept: %d)", e.revision)
}

// watch streams the changes of the keys [key, end) from revision from on,
// calling onEvents with each batch of events and onProgress with each
// revision the stream is known to be complete up to. It returns when the
// stream ends, ctx is done, or etcd cancels the watch (*errCompacted when
// from is compacted away). One endpoint per call: the caller resumes from
// the last revision seen, on the next endpoint.
func (c *etcdClient) watch(ctx context.Context, key, end []byte, from int64, onEvents func([]watchEvent) error, onProgress func(int64)) error {
	i, ep := c.endpoint()
	create := map[string]any{"create_request": map[string]any{
		"key": key, "range_end": end, "start_revision": from, "progress_notify": true,
	}}
	body, _ := json.Marshal(create)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", ep+"/v3/watch", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	// Without it, a watch on a member that lost its quorum hangs silently;
	// with it the stream ends with an error and we move on.
	req.Header.Set("Grpc-Metadata-hasleader", "true")
	if t := c.token.Load(); t != nil {
		req.Header.Set("Authorization", *t)
	}
	resp, err := c.stream.Do(req)
	if err != nil {
		c.rotate(i)
		return fmt.Errorf("%s: %w", ep, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		ge := decodeGatewayError(resp.StatusCode, b)
		if ge.unauthenticated() && c.user != "" {
			if err := c.authenticate(ctx); err != nil {
				return err
			}
		} else {
			c.rotate(i)
		}
		return fmt.Errorf("%s: %w", ep, ge)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var line watchResult
		if err := dec.Decode(&line); err != nil {
			if ctx.Err() == nil {
				c.rotate(i)
			}
			return fmt.Errorf("%s: watch stream: %w", ep, err)
		}
		if len(line.Error) > 0 && string(line.Error) != "null" {
			ge := decodeGatewayError(http.StatusOK, []byte(`{"error":`+string(line.Error)+`}`))
			c.rotate(i)
			return fmt.Errorf("%s: watch: %w", ep, ge)
		}
		r := line.Result
		if r == nil {
			continue
		}
		if r.Canceled {
			if r.CompactRevision > 0 {
				return &errCompacted{revision: int64(r.CompactRevision)}
			}
			c.rotate(i)
			return fmt.Errorf("%s: watch canceled by etcd: %s", ep, r.CancelReason)
		}
		if len(r.Events) > 0 {
			if err := onEvents(r.Events); err != nil {
				return err
			}
		} else if !r.Created && r.Header.Revision > 0 {
			// A progress notification: every event up to this revision
			// has been sent.
			onProgress(int64(r.Header.Revision))
		}
	}
}
