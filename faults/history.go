package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"os"
	"sort"
	"sync"
	"time"
)

// clock gives the instants of a run: nanoseconds since the run began, on
// the monotonic clock, so that a wall-clock step cannot reorder a history.
type clock struct{ start time.Time }

func (c clock) now() int64 { return int64(time.Since(c.start)) }

// Operation kinds and create outcomes as the history writes them.
const (
	opCreate = "create"
	opList   = "list"
	opGet    = "get"

	outcomeCreated  = "created"
	outcomeDefinite = "definite"
	outcomeUnknown  = "unknown"
)

// category is one category as petstore lists it (only what the checker
// needs: the harness never sends a description).
type category struct {
	ID   int64  `json:"id"`
	Name string `json:"name"`
}

// Op is one client operation: a create attempt, a list, or a get by id.
// A logical create (Create) is one name sent by one client: all the
// attempts of one Idempotency-Key, or a single unkeyed attempt.
type Op struct {
	Client   int    `json:"client"`
	Instance int    `json:"instance"`
	Kind     string `json:"op"`
	Create   string `json:"create,omitempty"`
	Name     string `json:"name,omitempty"`
	Key      string `json:"key,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	Start    int64  `json:"start"`
	End      int64  `json:"end"`
	Status   int    `json:"status"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message,omitempty"`
	Err      string `json:"err,omitempty"`
	Outcome  string `json:"outcome,omitempty"`
	ID       int64  `json:"id,omitempty"`
	GotName  string `json:"got_name,omitempty"`
	Replayed bool   `json:"replayed,omitempty"`

	// A list is kept as the ranges of the ids it held, its size, its
	// greatest id and a hash of its contents, plus the categories no
	// earlier list showed (or showed under another name): together the
	// lists of a history give every id-name pair any list showed.
	Ranges [][2]int64 `json:"ranges,omitempty"`
	Count  int        `json:"count,omitempty"`
	MaxID  int64      `json:"max_id,omitempty"`
	Hash   string     `json:"hash,omitempty"`
	New    []category `json:"new,omitempty"`
}

// holds reports whether a list op held id.
func (o *Op) holds(id int64) bool {
	i := sort.Search(len(o.Ranges), func(i int) bool { return o.Ranges[i][1] >= id })
	return i < len(o.Ranges) && o.Ranges[i][0] <= id
}

// idRanges returns the sorted ids of cats as closed ranges.
func idRanges(cats []category) [][2]int64 {
	ids := make([]int64, len(cats))
	for i, c := range cats {
		ids[i] = c.ID
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var out [][2]int64
	for _, id := range ids {
		if n := len(out); n > 0 && id <= out[n-1][1]+1 {
			out[n-1][1] = max(out[n-1][1], id)
			continue
		}
		out = append(out, [2]int64{id, id})
	}
	return out
}

// listHash identifies a list's contents, to tell lists apart in a history.
func listHash(cats []category) string {
	h := fnv.New64a()
	for _, c := range cats {
		fmt.Fprintf(h, "%d\t%s\n", c.ID, c.Name)
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// recorder keeps a scenario's history in memory for the checker and
// writes it, one JSON line per operation, to the scenario's directory.
// It is safe for concurrent use by the client goroutines.
type recorder struct {
	mu   sync.Mutex
	ops  []Op
	seen map[int64]string
	f    *os.File
	w    *bufio.Writer
	err  error
}

func newRecorder(path string) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &recorder{seen: map[int64]string{}, f: f, w: bufio.NewWriterSize(f, 256<<10)}, nil
}

// add records op; a list op's categories are folded into its summary.
func (r *recorder) add(op Op, list []category) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if op.Kind == opList && list != nil {
		op.Ranges, op.Count, op.Hash = idRanges(list), len(list), listHash(list)
		for _, c := range list {
			op.MaxID = max(op.MaxID, c.ID)
			if name, ok := r.seen[c.ID]; !ok || name != c.Name {
				r.seen[c.ID] = c.Name
				op.New = append(op.New, c)
			}
		}
	}
	r.ops = append(r.ops, op)
	if r.err == nil {
		b, _ := json.Marshal(op)
		b = append(b, '\n')
		_, r.err = r.w.Write(b)
	}
}

// history returns a copy of the operations recorded so far.
func (r *recorder) history() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// close flushes the history file and reports the first write error.
func (r *recorder) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.w.Flush(); r.err == nil {
		r.err = err
	}
	if err := r.f.Close(); r.err == nil {
		r.err = err
	}
	return r.err
}
