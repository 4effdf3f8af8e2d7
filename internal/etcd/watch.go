package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Event is one change a watch reports.
type Event struct {
	Type string `json:"type"` // "" for a put (zero values are omitted), "DELETE"
	KV   KV     `json:"kv"`
}

// watchResult is one line of a watch stream.
type watchResult struct {
	Result *struct {
		Header          Header  `json:"header"`
		Created         bool    `json:"created"`
		Canceled        bool    `json:"canceled"`
		CompactRevision Int64   `json:"compact_revision"`
		CancelReason    string  `json:"cancel_reason"`
		Events          []Event `json:"events"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// ErrWatchStalled is the cause a caller cancels a watch's context with
// (context.WithCancelCause) when the watch stopped delivering while etcd
// moved on: a member frozen or cut off, a connection silent but open. Watch
// then moves the next watch to the next endpoint.
var ErrWatchStalled = errors.New("etcd: the watch fell behind the cluster")

// Watch streams the changes of the keys [key, end) from revision from on,
// calling onEvents with each batch of events and onProgress with each
// revision the stream is known to be complete up to. The events of one
// revision (one txn) come in one batch. It returns when the stream ends,
// ctx is done, onEvents fails, or etcd cancels the watch (*CompactedError
// when from is compacted away). One endpoint per call: the caller resumes
// from the last revision seen, and the next call goes to the next endpoint.
// etcd tells nothing of a stream that went silent: the caller compares what
// it delivered with the cluster's revision and, when it lags, cancels ctx
// with ErrWatchStalled.
func (c *Client) Watch(ctx context.Context, key, end []byte, from int64, onEvents func([]Event) error, onProgress func(int64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	i, ep := c.endpoint()
	resp, err := c.openWatch(ctx, i, ep, key, end, from)
	next := false // openWatch has moved on when it failed
	if err == nil {
		defer resp.Body.Close()
		next, err = readWatch(ctx, resp.Body, ep, onEvents, onProgress)
	}
	if stalled := context.Cause(ctx); errors.Is(stalled, ErrWatchStalled) {
		next, err = true, fmt.Errorf("%s: %w", ep, stalled)
	}
	if next {
		c.rotate(i)
	}
	return err
}

// openWatch sends the watch's create request to endpoint i and returns the
// stream, or why there is none.
func (c *Client) openWatch(ctx context.Context, i int, ep string, key, end []byte, from int64) (*http.Response, error) {
	create := map[string]any{"create_request": map[string]any{
		"key": key, "range_end": end, "start_revision": from, "progress_notify": true,
	}}
	body, _ := json.Marshal(create)
	req, err := c.newRequest(ctx, ep+"/v3/watch", body)
	if err != nil {
		return nil, err
	}
	// Without it, a watch on a member that lost its quorum hangs silently;
	// with it the stream ends with an error and we move on.
	req.Header.Set("Grpc-Metadata-hasleader", "true")
	resp, err := c.stream.Do(req)
	if err != nil {
		c.rotate(i)
		return nil, fmt.Errorf("%s: %w", ep, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	ge := decodeGatewayError(resp.StatusCode, b)
	if ge.unauthenticated() && c.user != "" {
		if err := c.Authenticate(ctx); err != nil {
			return nil, err
		}
	} else {
		c.rotate(i)
	}
	return nil, fmt.Errorf("%s: %w", ep, ge)
}

// readWatch reads the lines of a watch stream from ep until it ends, and
// says whether the next watch should go to the next endpoint: not after a
// compaction, an error of onEvents, or the end of ctx.
func readWatch(ctx context.Context, body io.Reader, ep string, onEvents func([]Event) error, onProgress func(int64)) (next bool, err error) {
	dec := json.NewDecoder(body)
	for {
		var line watchResult
		if err := dec.Decode(&line); err != nil {
			return ctx.Err() == nil, fmt.Errorf("%s: watch stream: %w", ep, err)
		}
		if len(line.Error) > 0 && string(line.Error) != "null" {
			ge := decodeGatewayError(http.StatusOK, []byte(`{"error":`+string(line.Error)+`}`))
			return true, fmt.Errorf("%s: watch: %w", ep, ge)
		}
		r := line.Result
		if r == nil {
			continue
		}
		if r.Canceled {
			if r.CompactRevision > 0 {
				return false, &CompactedError{Revision: int64(r.CompactRevision)}
			}
			return true, fmt.Errorf("%s: watch canceled by etcd: %s", ep, r.CancelReason)
		}
		if len(r.Events) > 0 {
			if err := onEvents(r.Events); err != nil {
				return false, err
			}
		} else if !r.Created && r.Header.Revision > 0 {
			// A progress notification: every event up to this revision
			// has been sent.
			onProgress(int64(r.Header.Revision))
		}
	}
}
