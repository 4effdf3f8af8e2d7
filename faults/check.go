package main

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// checkInput is a scenario's history with what the checker must know of
// its faults.
type checkInput struct {
	Ops   []Op
	Final []category

	// Lists: a create answered 201 Bound before a list began must be in
	// it, unless the list's instance could not reach a quorum at some time
	// since; after such a time, Grace more is allowed for the instance to
	// resume its watch. Unreachable is indexed by instance (nil: never).
	Bound, Grace int64
	Unreachable  map[int][]interval

	// Journal: when the sync fault was armed (0: no such fault) and when
	// petstore was restarted.
	SyncFaultFrom int64
	Restarts      []int64
}

// Property results.
const (
	statusPass = "PASS"
	statusFail = "FAIL"
	statusSkip = "SKIP"
)

// propResult is one property's verdict with its first counterexamples.
type propResult struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Checked  int      `json:"checked"`
	Failures int      `json:"failures"`
	Examples []string `json:"examples,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// maxExamples is how many counterexamples a property keeps.
const maxExamples = 5

func (p *propResult) fail(format string, args ...any) {
	p.Failures++
	if len(p.Examples) < maxExamples {
		p.Examples = append(p.Examples, fmt.Sprintf(format, args...))
	}
}

func (p *propResult) done() propResult {
	switch {
	case p.Failures > 0:
		p.Status = statusFail
	case p.Status == "":
		p.Status = statusPass
	}
	return *p
}

// logical is one logical create: every attempt of one Idempotency-Key, or
// one unkeyed attempt.
type logical struct {
	id, name, key string
	attempts      []*Op
	first201      *Op // the earliest-ending 201, if any
}

func (l *logical) outcome() string {
	out := outcomeDefinite
	for _, a := range l.attempts {
		switch a.Outcome {
		case outcomeCreated:
			return outcomeCreated
		case outcomeUnknown:
			out = outcomeUnknown
		}
	}
	return out
}

// derived indexes a history and a final state for the properties.
type derived struct {
	in       checkInput
	logicals []*logical
	byName   map[string][]*logical
	byID     map[int64]category // the final state
	nameIDs  map[string][]int64 // final ids by exact name
}

func derive(in checkInput) *derived {
	d := &derived{in: in, byName: map[string][]*logical{}, byID: map[int64]category{}, nameIDs: map[string][]int64{}}
	byCreate := map[string]*logical{}
	for i := range in.Ops {
		op := &in.Ops[i]
		if op.Kind != opCreate {
			continue
		}
		l := byCreate[op.Create]
		if l == nil {
			l = &logical{id: op.Create, name: op.Name, key: op.Key}
			byCreate[op.Create] = l
			d.logicals = append(d.logicals, l)
			d.byName[op.Name] = append(d.byName[op.Name], l)
		}
		l.attempts = append(l.attempts, op)
		if op.Outcome == outcomeCreated && (l.first201 == nil || op.End < l.first201.End) {
			l.first201 = op
		}
	}
	for _, l := range d.logicals {
		sort.Slice(l.attempts, func(a, b int) bool { return l.attempts[a].Start < l.attempts[b].Start })
	}
	for _, c := range in.Final {
		d.byID[c.ID] = c
		d.nameIDs[c.Name] = append(d.nameIDs[c.Name], c.ID)
	}
	return d
}

// check runs every property that applies to in.
func check(in checkInput) []propResult {
	d := derive(in)
	return []propResult{
		d.createdPresent(),
		d.noDefinitePresent(),
		d.atMostOnce(),
		d.namesUnique(),
		d.idsConsecutive(),
		d.idempotency(),
		d.listsWithinBound(),
		d.noCreateAfterSyncFailure(),
		d.readsAgree(),
	}
}

// secs formats a run instant or a duration in nanoseconds.
func secs(ns int64) string { return fmt.Sprintf("%.3fs", time.Duration(ns).Seconds()) }

// describe gives one attempt in a line.
func describe(op *Op) string {
	var ans string
	switch {
	case op.Err != "":
		ans = "no answer (" + op.Err + ")"
	case op.Status == 201 && op.Replayed:
		ans = fmt.Sprintf("201 id %d (replayed)", op.ID)
	case op.Status == 201:
		ans = fmt.Sprintf("201 id %d", op.ID)
	default:
		ans = fmt.Sprintf("%d %s", op.Status, op.Code)
		if op.Message != "" {
			ans += fmt.Sprintf(" %q", truncate(op.Message, 110))
		}
	}
	key := ""
	if op.Key != "" {
		key = " key " + op.Key
	}
	return fmt.Sprintf("%q%s attempt %d on #%d [%s–%s]: %s", op.Name, key, op.Attempt, op.Instance, secs(op.Start), secs(op.End), ans)
}

// 1. Every create answered 201 is present with its id and name.
func (d *derived) createdPresent() propResult {
	p := propResult{Name: "1 every 201 is present with its id and name"}
	for _, l := range d.logicals {
		for _, a := range l.attempts {
			if a.Outcome != outcomeCreated {
				continue
			}
			p.Checked++
			c, ok := d.byID[a.ID]
			switch {
			case a.GotName != l.name:
				p.fail("%s: the answer names %q", describe(a), a.GotName)
			case !ok:
				p.fail("%s: id %d is not in the final state", describe(a), a.ID)
			case c.Name != l.name:
				p.fail("%s: id %d holds %q in the final state", describe(a), a.ID, c.Name)
			}
		}
	}
	return p.done()
}

// 2. Nothing is present whose every attempt got a definite failure.
func (d *derived) noDefinitePresent() propResult {
	p := propResult{Name: "2 nothing present whose every attempt failed definitely"}
	for _, c := range d.in.Final {
		p.Checked++
		ls := d.byName[c.Name]
		if len(ls) == 0 {
			p.fail("id %d %q is present, but no client created that name", c.ID, c.Name)
			continue
		}
		var tried []string
		settled := true
		for _, l := range ls {
			if l.outcome() != outcomeDefinite {
				settled = false
				break
			}
			for _, a := range l.attempts {
				tried = append(tried, describe(a))
			}
		}
		if settled {
			p.fail("id %d %q is present though every attempt was a definite failure: %s", c.ID, c.Name, strings.Join(tried, "; "))
		}
	}
	return p.done()
}

// 3. A create (or key) appears at most once, and no name is answered 201
// by two different creates.
func (d *derived) atMostOnce() propResult {
	p := propResult{Name: "3 each create present at most once"}
	for name, ls := range d.byName {
		p.Checked++
		if ids := d.nameIDs[name]; len(ids) > 1 {
			p.fail("%q is present %d times (ids %v)", name, len(ids), ids)
		}
		var fresh []*Op
		for _, l := range ls {
			for _, a := range l.attempts {
				if a.Outcome == outcomeCreated && !a.Replayed {
					fresh = append(fresh, a)
					break
				}
			}
		}
		if len(fresh) > 1 {
			p.fail("%q was created by %d different creates: %s; %s", name, len(fresh), describe(fresh[0]), describe(fresh[1]))
		}
	}
	return p.done()
}

// 4. Names are unique ignoring case (the harness sends ASCII names).
func (d *derived) namesUnique() propResult {
	p := propResult{Name: "4 names unique ignoring case"}
	seen := map[string]category{}
	for _, c := range d.in.Final {
		p.Checked++
		k := strings.ToLower(c.Name)
		if o, ok := seen[k]; ok {
			p.fail("ids %d %q and %d %q have the same name ignoring case", o.ID, o.Name, c.ID, c.Name)
			continue
		}
		seen[k] = c
	}
	return p.done()
}

// 5. ids are consecutive from 1 and follow real time: a create answered
// 201 before another began has the smaller id.
func (d *derived) idsConsecutive() propResult {
	p := propResult{Name: "5 ids consecutive from 1, in real-time order"}
	ids := make([]int64, 0, len(d.in.Final))
	for _, c := range d.in.Final {
		ids = append(ids, c.ID)
	}
	sort.Slice(ids, func(a, b int) bool { return ids[a] < ids[b] })
	for i, id := range ids {
		p.Checked++
		want := int64(i + 1)
		if i > 0 {
			want = ids[i-1] + 1
		}
		if id != want {
			p.fail("after id %d comes id %d (a gap or a repeat; ids must run 1..%d)", want-1, id, len(ids))
		}
	}
	if len(ids) > 0 && ids[0] != 1 {
		p.fail("the lowest id is %d, not 1", ids[0])
	}
	d.realTimeOrder(&p)
	return p.done()
}

// realTimeOrder checks, for each create B whose id is known, that no
// create A answered 201 before B began holds a greater id. A commit lies
// between a create's first start and its first 201's end, and ids grow
// with commits.
func (d *derived) realTimeOrder(p *propResult) {
	type ended struct {
		end, id int64
		l       *logical
	}
	var as []ended
	for _, l := range d.logicals {
		if l.first201 != nil {
			as = append(as, ended{l.first201.End, l.first201.ID, l})
		}
	}
	sort.Slice(as, func(a, b int) bool { return as[a].end < as[b].end })
	best := make([]int, len(as)) // index in as of the greatest id up to i
	for i := range as {
		best[i] = i
		if i > 0 && as[best[i-1]].id > as[i].id {
			best[i] = best[i-1]
		}
	}
	for _, b := range d.logicals {
		id, ok := d.knownID(b)
		if !ok {
			continue
		}
		start := b.attempts[0].Start
		n := sort.Search(len(as), func(i int) bool { return as[i].end >= start })
		if n == 0 {
			continue
		}
		p.Checked++
		if a := as[best[n-1]]; a.id > id {
			p.fail("%q got id %d at %s, before %q began at %s, which got id %d (ids out of real-time order)",
				a.l.name, a.id, secs(a.end), b.name, secs(start), id)
		}
	}
}

// knownID returns the id l's category has: its 201's, or the final
// state's when l alone sent that name.
func (d *derived) knownID(l *logical) (int64, bool) {
	if l.first201 != nil {
		return l.first201.ID, true
	}
	if ids := d.nameIDs[l.name]; len(ids) == 1 && len(d.byName[l.name]) == 1 {
		return ids[0], true
	}
	return 0, false
}

// 6. Idempotency-Key retries replay: one id per key, a replay only after a
// stored attempt, never a conflict for the key's own stored create.
func (d *derived) idempotency() propResult {
	p := propResult{Name: "6 Idempotency-Key retries replay"}
	for _, l := range d.logicals {
		if l.key == "" {
			continue
		}
		p.Checked++
		fresh := 0
		stored := len(d.nameIDs[l.name]) > 0 && len(d.byName[l.name]) == 1
		for i, a := range l.attempts {
			switch {
			case a.Outcome == outcomeCreated && l.first201 != nil && a.ID != l.first201.ID:
				p.fail("key %s answered two ids: %s; %s", l.key, describe(l.first201), describe(a))
			case a.Outcome == outcomeCreated && a.Replayed && i == 0:
				p.fail("first attempt answered as a replay: %s", describe(a))
			case a.Outcome == outcomeCreated && !a.Replayed:
				if fresh++; fresh > 1 {
					p.fail("key %s created twice (the second was not a replay): %s", l.key, describe(a))
				}
			case a.Code == "idempotency_key_reused":
				p.fail("the same request with its own key was refused: %s", describe(a))
			case i > 0 && a.Code == "conflict" && stored:
				p.fail("a retry answered 409 conflict although the key's create was stored (a replay was due): %s", describe(a))
			}
		}
	}
	return p.done()
}

// 8. Journal: after a failed sync, no create is answered 201 (a fresh
// one; a replay writes nothing) until petstore is restarted.
func (d *derived) noCreateAfterSyncFailure() propResult {
	p := propResult{Name: "8 no 201 after a failed fdatasync until restart"}
	if d.in.SyncFaultFrom == 0 {
		p.Status = statusSkip
		p.Notes = append(p.Notes, "no sync fault in this scenario")
		return p.done()
	}
	failed := int64(math.MaxInt64)
	for _, op := range d.in.Ops {
		if op.Kind == opCreate && op.End >= d.in.SyncFaultFrom && op.Status >= 500 {
			failed = min(failed, op.End)
		}
	}
	if failed == math.MaxInt64 {
		p.Status = statusSkip
		p.Notes = append(p.Notes, "no create failed after the fault was armed")
		return p.done()
	}
	restart := int64(math.MaxInt64)
	for _, r := range d.in.Restarts {
		if r > failed {
			restart = min(restart, r)
		}
	}
	p.Notes = append(p.Notes, fmt.Sprintf("first failed create answered at %s; restart at %s", secs(failed), secs(restart)))
	for i := range d.in.Ops {
		op := &d.in.Ops[i]
		if op.Kind != opCreate || op.Start <= failed || op.End >= restart {
			continue
		}
		p.Checked++
		if op.Outcome == outcomeCreated && !op.Replayed {
			p.fail("%s, after the failed sync answered at %s", describe(op), secs(failed))
		}
	}
	return p.done()
}

// 9. What reads showed agrees with the final state: every id-name pair a
// list showed is in it, a get answers the category created, and an id
// answered 201 is never 404.
func (d *derived) readsAgree() propResult {
	p := propResult{Name: "9 reads agree with the final state"}
	for i := range d.in.Ops {
		op := &d.in.Ops[i]
		switch {
		case op.Kind == opList && op.Status == 200 && op.Err == "":
			for _, c := range op.New {
				p.Checked++
				if f, ok := d.byID[c.ID]; !ok || f.Name != c.Name {
					p.fail("a list on #%d at %s showed id %d %q; the final state has %s", op.Instance, secs(op.Start), c.ID, c.Name, finalAt(f, ok))
				}
			}
		case op.Kind == opGet && op.Err == "":
			p.Checked++
			f, ok := d.byID[op.ID]
			switch {
			case op.Status == 404:
				p.fail("GET id %d (%q, created before) on #%d at %s answered 404", op.ID, op.Name, op.Instance, secs(op.Start))
			case op.Status == 200 && op.GotName != op.Name:
				p.fail("GET id %d on #%d at %s answered %q, created as %q", op.ID, op.Instance, secs(op.Start), op.GotName, op.Name)
			case op.Status == 200 && (!ok || f.Name != op.GotName):
				p.fail("GET id %d on #%d at %s answered %q; the final state has %s", op.ID, op.Instance, secs(op.Start), op.GotName, finalAt(f, ok))
			}
		}
	}
	return p.done()
}

func finalAt(c category, ok bool) string {
	if !ok {
		return "no such id"
	}
	return fmt.Sprintf("%q there", c.Name)
}
