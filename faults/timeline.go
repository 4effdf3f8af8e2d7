package main

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"sort"
	"sync"
	"time"
)

// interval is a span of run time in nanoseconds; To is math.MaxInt64
// while it has not ended.
type interval struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

// worldState is what the fault schedule has done to the cluster at one
// moment: which members and petstores run (not killed, not frozen), and
// the mode of each proxy (petstore i → member m).
type worldState struct {
	MemberUp [3]bool         `json:"member_up"`
	InstUp   [3]bool         `json:"inst_up"`
	Mode     [3][3]proxyMode `json:"mode"`
}

// instReachesQuorum reports whether, as far as the schedule goes,
// petstore i can reach a quorum: it runs, two members run, and a proxy of
// its passes to a member that runs.
func (s worldState) instReachesQuorum(i int) bool {
	up := 0
	reach := false
	for m := range 3 {
		if s.MemberUp[m] {
			up++
			reach = reach || s.Mode[i][m] == modePass
		}
	}
	return s.InstUp[i] && up >= 2 && reach
}

// faultEvent is one line of a scenario's fault log.
type faultEvent struct {
	At    int64      `json:"at"`
	What  string     `json:"what"`
	State worldState `json:"state"`
}

// timeline records the fault schedule of a cluster scenario and the
// intervals in which the cluster had no leader, as the harness saw them.
// Faults are recorded before they are made and heals after, so that each
// window covers the fault wholly. It is safe for concurrent use.
type timeline struct {
	clock clock
	mu    sync.Mutex
	cur   worldState
	log   []faultEvent

	noLeader []interval
	lastOK   int64
	lost     bool
}

func newTimeline(c clock) *timeline {
	t := &timeline{clock: c}
	for i := range 3 {
		t.cur.MemberUp[i], t.cur.InstUp[i] = true, true
	}
	t.log = append(t.log, faultEvent{At: c.now(), What: "start", State: t.cur})
	return t
}

// fault records a change of the world made now (call it before making it).
func (t *timeline) fault(what string, change func(*worldState)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	change(&t.cur)
	t.log = append(t.log, faultEvent{At: t.clock.now(), What: what, State: t.cur})
}

// heal records a change already made (call it after making it).
func (t *timeline) heal(what string, change func(*worldState)) { t.fault(what, change) }

// note records an event that changes nothing the checker uses.
func (t *timeline) note(what string) { t.fault(what, func(*worldState) {}) }

func (t *timeline) state() worldState {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// leaderSeen records one poll of the members, made in [start, end]. A
// loss of the leader is taken to begin at the end of the last poll that
// saw one, and to end at the end of the first poll that sees one again.
func (t *timeline) leaderSeen(ok bool, end int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case ok && t.lost:
		t.noLeader[len(t.noLeader)-1].To = end
		t.lost = false
		t.lastOK = end
	case ok:
		t.lastOK = end
	case !t.lost:
		t.noLeader = append(t.noLeader, interval{From: t.lastOK, To: math.MaxInt64})
		t.lost = true
	}
}

// monitor polls the members directly (not through the proxies) every
// 250 ms until ctx ends: the cluster has a leader when a member the
// schedule has up says it leads.
func (t *timeline) monitor(ctx context.Context, c *etcdCluster) {
	for ctx.Err() == nil {
		s := t.state()
		ok := c.leaderNow(ctx, func(m int) bool { return s.MemberUp[m] }) >= 0
		if ctx.Err() != nil {
			return
		}
		t.leaderSeen(ok, t.clock.now())
		sleepCtx(ctx, 250*time.Millisecond)
	}
}

// leaderless returns the intervals in which the cluster had no leader.
func (t *timeline) leaderless() []interval {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]interval(nil), t.noLeader...)
}

// unreachable returns, for each petstore, the merged intervals in which it
// could not reach a quorum: by the schedule (killed, frozen, cut off, its
// answers lost, members down) or because the cluster had no leader.
func (t *timeline) unreachable(end int64) map[int][]interval {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := map[int][]interval{}
	for i := range 3 {
		var spans []interval
		for k, ev := range t.log {
			if ev.State.instReachesQuorum(i) {
				continue
			}
			to := end
			if k+1 < len(t.log) {
				to = t.log[k+1].At
			}
			spans = append(spans, interval{From: ev.At, To: to})
		}
		out[i] = mergeIntervals(append(spans, t.noLeader...))
	}
	return out
}

// mergeIntervals sorts spans and joins those that overlap or touch.
func mergeIntervals(spans []interval) []interval {
	sort.Slice(spans, func(a, b int) bool { return spans[a].From < spans[b].From })
	var out []interval
	for _, s := range spans {
		if n := len(out); n > 0 && s.From <= out[n-1].To {
			out[n-1].To = max(out[n-1].To, s.To)
			continue
		}
		out = append(out, s)
	}
	return out
}

// write saves the fault log and the leaderless intervals as JSON lines.
func (t *timeline) write(path string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, ev := range t.log {
		enc.Encode(ev)
	}
	for _, iv := range t.noLeader {
		enc.Encode(map[string]any{"no_leader": iv})
	}
	return f.Close()
}
