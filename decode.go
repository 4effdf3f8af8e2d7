package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"os"
	"petstore/internal/rawjson"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// maxBodyBytes bounds every request body (docs/api.md, "Limits": 1 MiB).
const maxBodyBytes = 1 << 20

// decodeJSONObject reads the request body, which must be a single JSON object
// sent as application/json within maxBodyBytes, and returns its members in
// order, each name once. Every failure is an *apiError: 415, 413, 408
// request_timeout, 503 unavailable or 400 invalid_json. The body's bytes
// count against bodies (nil: no bound), and against the share of the
// request's API key, until the caller gives back what it returns, held,
// with bodies.release, once it no longer needs the members, which hold
// slices of them (also after an error).
func decodeJSONObject(w http.ResponseWriter, r *http.Request, bodies *bodyBudget) (members []rawjson.Member, held bodyHold, err error) {
	if err := checkContentType(r.Header.Get("Content-Type")); err != nil {
		return nil, held, err
	}
	if r.ContentLength > maxBodyBytes {
		return nil, held, errPayloadTooLarge
	}
	body, err := readBody(r.Context(), bodies, &held, factsOf(r).key, http.MaxBytesReader(w, r.Body, maxBodyBytes), r.ContentLength)
	if err != nil {
		return nil, held, bodyReadError(w, r, err)
	}
	if err := checkJSONValue(body); err != nil {
		return nil, held, err
	}
	members, err = rawjson.Members(body, make([]rawjson.Member, 0, 4))
	if err == rawjson.ErrNotObject {
		return nil, held, apiErrorf(codeInvalidJSON, "request body must be a JSON object, got %s", rawjson.Kind(bytes.TrimLeft(body, " \t\r\n")))
	}
	if err != nil {
		return nil, held, err
	}
	// Which of two values would count is anyone's guess (RFC 8259 section
	// 4), so the body is malformed, whatever else is wrong with it.
	if name, ok := rawjson.DuplicateMember(members); ok {
		return nil, held, apiErrorf(codeInvalidJSON, "request body has member %s more than once", quoteMemberName(name))
	}
	return members, held, nil
}

var errPayloadTooLarge = apiErrorf(codePayloadTooLarge, "request body must be at most %d bytes", maxBodyBytes)

// bodyReadError maps a failure to read the body to the client's answer
// (docs/api.md, "Errors": body errors are the client's). Nothing on the
// server's side can fail while reading a body from its connection: it is
// malformed chunked encoding, a body cut short, a connection reset, or a body
// not received within the server's read timeout.
func bodyReadError(w http.ResponseWriter, r *http.Request, err error) error {
	if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
		return errPayloadTooLarge
	}
	if errors.Is(err, errBodyWait) {
		// Not the client's doing: the server had no memory free for the
		// body in time (many large bodies at once).
		return &apiError{code: codeUnavailable, message: "the server is reading too many request bodies at once; retry in a moment", cause: err}
	}
	if errors.Is(err, errKeyBodyWait) {
		// Nothing was read: the key's other bodies held its share.
		return &apiError{code: codeUnavailable, message: "this API key is sending too many request bodies at once; retry in a moment", cause: err}
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The write deadline runs out with the read deadline (both count
		// from the request's start); give the answer a moment of its own.
		http.NewResponseController(w).SetWriteDeadline(time.Now().Add(answerWriteTime))
		return &apiError{code: codeRequestTimeout, message: "request body was not received within the server's read timeout; send it again, faster", cause: err}
	}
	chunked := len(r.TransferEncoding) > 0
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) && chunked:
		return &apiError{code: codeInvalidJSON, message: "request body ended before its last chunk", cause: err}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return &apiError{code: codeInvalidJSON, message: "request body ended before its declared Content-Length", cause: err}
	case chunked:
		return &apiError{code: codeInvalidJSON, message: "request body could not be read: its chunked encoding is malformed", cause: err}
	}
	return &apiError{code: codeInvalidJSON, message: "request body could not be read", cause: err}
}

// answerWriteTime is how long the answer to a body that timed out may take.
const answerWriteTime = 5 * time.Second

func checkContentType(contentType string) error {
	if contentType == "application/json" {
		return nil
	}
	if contentType == "" {
		return apiErrorf(codeUnsupportedMediaType, "Content-Type must be application/json, and the request has none")
	}
	mediaType, _, err := mime.ParseMediaType(contentType)
	if err != nil || mediaType != "application/json" {
		return apiErrorf(codeUnsupportedMediaType, "Content-Type must be application/json")
	}
	return nil
}

// readBody reads all of body; size is the declared length (at most
// maxBodyBytes), or -1 when the length is not declared. With bodies, it
// first claims the largest body it may get (the declared length, or
// maxBodyBytes) from the share of the API key whose digest is key, then
// takes memory from bodies as bytes arrive: the buffer grows by doubling,
// and each growth takes its blocks before it is made. What it took is
// recorded in held, also on error.
func readBody(ctx context.Context, bodies *bodyBudget, held *bodyHold, key keyDigest, body io.Reader, size int64) ([]byte, error) {
	limit := size
	if size < 0 {
		limit = maxBodyBytes + 1 // room to see that a chunked body is too large
	}
	if bodies != nil && limit > 0 {
		if err := bodies.claim(ctx, held, key, blocksFor(limit)); err != nil {
			return nil, err
		}
	}
	var buf []byte
	for int64(len(buf)) < limit {
		if len(buf) == cap(buf) {
			grown := min(max(2*int64(cap(buf)), bodyBlock), limit)
			if bodies != nil {
				if err := bodies.take(ctx, held, blocksFor(grown)-held.blocks); err != nil {
					return nil, err
				}
			}
			buf = append(make([]byte, 0, grown), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			if size >= 0 && int64(len(buf)) < size {
				return nil, io.ErrUnexpectedEOF
			}
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
	return buf, nil
}

// bodyBlock is the unit in which bodies take memory from a bodyBudget.
const bodyBlock = 64 << 10

// maxBodyBlocks is the most blocks one body takes: a chunked one is read up
// to a byte past maxBodyBytes.
const maxBodyBlocks = (maxBodyBytes + 1 + bodyBlock - 1) / bodyBlock

func blocksFor(bytes int64) int64 { return (bytes + bodyBlock - 1) / bodyBlock }

// bodyBudget bounds the memory that request bodies hold at once, across all
// requests: a thousand clients each sending 1 MiB would otherwise hold a
// gigabyte. A body takes memory as its bytes arrive, block by block as its
// buffer grows, so a body declared large and sent slowly holds only what
// has come. It is safe for concurrent use.
//
// Two bodies that each hold part of what they need must never wait for
// each other. The budget keeps a reserve of one largest body: only the
// body that holds the reserve may take its last blocks, and only one body
// holds it at a time, until it is done. Every other body leaves the
// reserve free when it takes blocks, so the holder always finds what it
// still needs: when all bodies wait, the one first in line takes the
// reserve and finishes, and the others follow in turn. Readers wait at
// most maxWait in all; waiting holds no more than the body has.
//
// A single API key may claim at most a quarter of the budget for its
// bodies at once, counted by their largest size (declared, or maxBodyBytes
// when not declared), so one key's slow bodies cannot hold another key's
// back. A body over its key's share waits, in turn with that key's other
// bodies and nobody else's, before it takes any memory: a client sending
// many bodies at once is served as its earlier ones finish rather than
// refused, and its waiting costs others nothing. Because a body claims its
// whole largest size at once, the bodies of one key never hold part of
// their share each and wait for the rest.
//
// A small body, the usual create, costs a lookup of its key's share, two
// compare-and-swaps and, when done, two atomic adds; nothing is locked
// unless a reader has to wait.
type bodyBudget struct {
	free     atomic.Int64 // blocks not taken
	reserve  int64        // blocks only the body holding the reserve may take
	reserved atomic.Bool  // a body holds the reserve
	perKey   int64        // blocks the bodies of one key may claim at once
	queue    waitLine     // bodies waiting for blocks
	maxWait  time.Duration

	shares   atomic.Pointer[map[keyDigest]*keyShare] // copied on write
	sharesMu sync.Mutex                              // serialises the writes
}

// keyShare is what the bodies of one API key have claimed of a bodyBudget.
type keyShare struct {
	claimed atomic.Int64
	queue   waitLine // bodies of this key waiting for its share
}

// bodyHold is what one body holds of a bodyBudget; give it back with
// release.
type bodyHold struct {
	share    *keyShare // nil until claimed
	claimed  int64     // blocks counted in share
	blocks   int64     // blocks taken
	reserve  bool      // holds the budget's reserve
	deadline time.Time // of the body's waits, set by the first
}

// newBodyBudget makes a budget of size bytes, rounded down to whole blocks;
// it must hold at least one largest body, maxBodyBytes, for every body to fit.
func newBodyBudget(size int64, maxWait time.Duration) *bodyBudget {
	blocks := max(1, size/bodyBlock)
	b := &bodyBudget{reserve: min(maxBodyBlocks, blocks), perKey: max(blocks/4, maxBodyBlocks), queue: newWaitLine(), maxWait: maxWait}
	b.free.Store(blocks)
	b.shares.Store(&map[keyDigest]*keyShare{})
	return b
}

var (
	// errBodyWait says a body waited for memory longer than its budget's maxWait.
	errBodyWait = errors.New("request body waited too long for memory")
	// errKeyBodyWait says a body waited longer than maxWait for its key's share.
	errKeyBodyWait = errors.New("request body waited too long for its API key's share of memory")
)

// claim counts blocks against the share of the key whose digest is key,
// waiting while that share is spent, and records it in h.
func (b *bodyBudget) claim(ctx context.Context, h *bodyHold, key keyDigest, blocks int64) error {
	share := b.shareOf(key)
	if share.queue.waiting.Load() != 0 || !takeBelow(&share.claimed, blocks, b.perKey) {
		try := func() bool { return takeBelow(&share.claimed, blocks, b.perKey) }
		if err := share.queue.wait(ctx, b.deadline(h), try, errKeyBodyWait); err != nil {
			return err
		}
	}
	h.share, h.claimed = share, blocks
	return nil
}

// take takes n more blocks for h, waiting while the budget has none to
// spare.
func (b *bodyBudget) take(ctx context.Context, h *bodyHold, n int64) error {
	if h.reserve {
		// The reserve holds all that a body may still need: see bodyBudget.
		if !takeAbove(&b.free, n, 0) {
			return errBodyWait // only if the budget cannot hold a largest body
		}
		h.blocks += n
		return nil
	}
	if b.queue.waiting.Load() != 0 || !takeAbove(&b.free, n, b.reserve) {
		try := func() bool {
			if takeAbove(&b.free, n, b.reserve) {
				return true
			}
			if !h.reserve && b.reserved.CompareAndSwap(false, true) {
				h.reserve = true
			}
			return h.reserve && takeAbove(&b.free, n, 0)
		}
		if err := b.queue.wait(ctx, b.deadline(h), try, errBodyWait); err != nil {
			return err
		}
	}
	h.blocks += n
	return nil
}

// release gives back all that h holds.
func (b *bodyBudget) release(h bodyHold) {
	if b == nil {
		return
	}
	if h.blocks > 0 {
		b.free.Add(h.blocks)
	}
	if h.reserve {
		b.reserved.Store(false)
	}
	if h.blocks > 0 || h.reserve {
		b.queue.signal()
	}
	if h.share != nil {
		h.share.claimed.Add(-h.claimed)
		h.share.queue.signal()
	}
}

// deadline returns when the waits of h end, counted from its first.
func (b *bodyBudget) deadline(h *bodyHold) time.Time {
	if h.deadline.IsZero() {
		h.deadline = time.Now().Add(b.maxWait)
	}
	return h.deadline
}

// shareOf returns the share of the key whose digest is key. Keys are only
// those a request was accepted with, so the map stays as small as the set
// of keys.
func (b *bodyBudget) shareOf(key keyDigest) *keyShare {
	if s, ok := (*b.shares.Load())[key]; ok {
		return s
	}
	b.sharesMu.Lock()
	defer b.sharesMu.Unlock()
	old := *b.shares.Load()
	if s, ok := old[key]; ok {
		return s
	}
	s := &keyShare{queue: newWaitLine()}
	m := make(map[keyDigest]*keyShare, len(old)+1)
	for k, v := range old {
		m[k] = v
	}
	m[key] = s
	b.shares.Store(&m)
	return s
}

// takeAbove takes n from c if at least floor is left.
func takeAbove(c *atomic.Int64, n, floor int64) bool {
	for {
		v := c.Load()
		if v-n < floor {
			return false
		}
		if c.CompareAndSwap(v, v-n) {
			return true
		}
	}
}

// takeBelow adds n to c if it stays at most limit.
func takeBelow(c *atomic.Int64, n, limit int64) bool {
	for {
		v := c.Load()
		if v+n > limit {
			return false
		}
		if c.CompareAndSwap(v, v+n) {
			return true
		}
	}
}

// waitLine is where readers wait for room, in turn: a large body is not
// passed over again and again by small ones.
type waitLine struct {
	turn    chan struct{} // one token: the waiter next in line
	room    chan struct{} // a release wakes the waiter in line
	waiting atomic.Int64  // readers in the line
}

func newWaitLine() waitLine {
	return waitLine{turn: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

// wait calls try, in turn, until it succeeds, ctx ends (its error) or
// deadline passes (late).
func (q *waitLine) wait(ctx context.Context, deadline time.Time, try func() bool, late error) error {
	q.waiting.Add(1) // before trying again: a release now wakes us
	defer q.waiting.Add(-1)
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case q.turn <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return late
	}
	defer func() { <-q.turn }()
	for !try() {
		select {
		case <-q.room:
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return late
		}
	}
	return nil
}

// signal wakes the waiter in line, if there is one.
func (q *waitLine) signal() {
	if q.waiting.Load() > 0 {
		select {
		case q.room <- struct{}{}:
		default: // a wake-up is pending already
		}
	}
}

// checkJSONValue reports, as an invalid_json *apiError, why body is not
// exactly one JSON value encoded in UTF-8.
func checkJSONValue(body []byte) error {
	if json.Valid(body) {
		if !utf8.Valid(body) {
			return apiErrorf(codeInvalidJSON, "request body is not valid UTF-8")
		}
		return nil
	}
	if len(bytes.TrimLeft(body, " \t\r\n")) == 0 {
		return apiErrorf(codeInvalidJSON, "request body is empty; send a JSON object")
	}
	// json.Valid does not say where or why; a decoder does.
	dec := json.NewDecoder(bytes.NewReader(body))
	var first json.RawMessage
	if err := dec.Decode(&first); err != nil {
		var syntaxErr *json.SyntaxError
		if errors.As(err, &syntaxErr) {
			return apiErrorf(codeInvalidJSON, "request body is not valid JSON: %s (at byte %d)", syntaxErr.Error(), syntaxErr.Offset)
		}
		return apiErrorf(codeInvalidJSON, "request body is not valid JSON: it ends before the value is complete")
	}
	return apiErrorf(codeInvalidJSON, "request body has data after the JSON value (at byte %d)", dec.InputOffset())
}
