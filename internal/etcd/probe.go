package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Probe reads r from every endpoint at once and returns the first answer.
// A linearizable read that any member answers proves a quorum reachable,
// whatever the others do (killed, frozen, cut off), so a probe is not held
// by the slowest member. When the preferred endpoint fails or gives no
// answer by ctx's deadline while another answered, that one becomes the
// preferred endpoint, so that the calls and the watch that follow go to a
// member that answers. The reads still under way when Probe returns go on
// until ctx's deadline, not past it. Probe returns ErrUnreachable, wrapped
// with the last failure, when no endpoint answered.
func (c *Client) Probe(ctx context.Context, r RangeRequest) (*RangeResponse, error) {
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(c.timeout)
	}
	// The reads outlive the call until the deadline: a preferred endpoint
	// that is only slower than the first must not be taken for a failed one.
	rctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
	preferred, _ := c.endpoint()
	round := &probeRound{c: c, preferred: preferred, winner: -1}
	answers := make(chan probeAnswer, len(c.endpoints)) // no sender ever blocks
	var wg sync.WaitGroup
	for i, ep := range c.endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out RangeResponse
			err := c.callOne(rctx, ep, "/v3/kv/range", body, &out)
			round.done(i, err)
			answers <- probeAnswer{&out, err}
		}()
	}
	go func() { wg.Wait(); cancel() }()
	var last error
	for range c.endpoints {
		a := <-answers
		if a.err == nil {
			return a.resp, nil
		}
		last = a.err
	}
	return nil, fmt.Errorf("%w: %w", ErrUnreachable, last)
}

type probeAnswer struct {
	resp *RangeResponse
	err  error
}

// probeRound moves the preferred endpoint to the first that answered once
// the preferred one has failed, whichever of the two is known first.
type probeRound struct {
	c         *Client
	preferred int

	mu     sync.Mutex
	winner int  // the first endpoint that answered; -1 while none has
	failed bool // the preferred endpoint failed
}

func (r *probeRound) done(i int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil && r.winner < 0:
		r.winner = i
	case err != nil && i == r.preferred:
		r.failed = true
	}
	if r.failed && r.winner >= 0 {
		r.c.preferred.CompareAndSwap(int32(r.preferred), int32(r.winner))
	}
}

// callOne sends one request to one endpoint and decodes a 200 answer into
// out; after a 401 it authenticates again and tries once more.
func (c *Client) callOne(ctx context.Context, ep, path string, body []byte, out any) error {
	for try := 0; ; try++ {
		status, respBody, err := c.post(ctx, ep, path, body)
		if err != nil {
			return fmt.Errorf("%s: %w", ep, err)
		}
		if status == http.StatusOK {
			return decodeAnswer(ep, path, respBody, out)
		}
		ge := decodeGatewayError(status, respBody)
		if try > 0 || !ge.unauthenticated() || c.user == "" {
			return fmt.Errorf("%s: %w", ep, ge)
		}
		if err := c.Authenticate(ctx); err != nil {
			return err
		}
	}
}
