package store

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"petstore/internal/catalog"

	"petstore/internal/etcd"
	"petstore/internal/textcut"
)

// The etcd store's write path: a batch of creates becomes one txn, and a
// txn whose outcome is unknown is settled by reading back, never guessed.

// pendingCreate is a create of the batch under way, with its claim token.
type pendingCreate struct {
	req   *createRequest
	token string
	id    int64
}

// commit runs on the group writer's goroutine: one txn for the batch,
// again for the creates left after a lost race, and again, unchanged, for
// a txn whose outcome is unknown.
//
// An unknown outcome is settled, never guessed, in one of two ways. The
// txn compares the counter's mod_revision, so once anything moves the
// counter, a txn not yet applied never will be. Sent again unchanged, the
// txn tells: if the first was applied, the second fails its compare, and
// the name keys read back after it (linearizably) hold our tokens: the
// creates are committed. Or the watch tells, when no answer comes back at
// all: it delivers every committed txn whole, so once it has delivered a
// move of the counter, our tokens among the name claims of that revision
// mean committed, and their absence means never. Until one of the
// two has spoken, no answer is definite: past the deadline the creates
// fail with catalog.ErrOutcomeUnknown. Never a duplicate, never a 201 for
// a category that was not committed, never a definite failure for one that
// was.
func (s *Etcd) commit(batch []*createRequest) {
	pending, later := s.checkNames(batch)
	if len(later) > 0 {
		// Keyed creates of a name another create of this batch claims:
		// each may be the retry of the create that made that name (its
		// key tells), so they go in a txn of their own, after this one.
		defer s.commit(later)
	}
	if len(pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.createTimeout)
	defer cancel()
	s.watchClaims(pending, true)
	defer s.watchClaims(pending, false)

	var unsure *doubt // the txn last sent, while it may still be applied
	pause := etcd.Backoff{First: txnRetryFirst, Max: txnRetryMax}
	for attempt := 0; len(pending) > 0; attempt++ {
		if unsure == nil {
			if pending = s.prepare(ctx, pending); len(pending) == 0 {
				return
			}
		}
		var done bool
		if pending, unsure, done = s.send(ctx, pending, unsure, attempt); done || unsure == nil {
			continue // done leaves pending empty
		}
		if ctx.Err() != nil || attempt > 1000 {
			s.fail(ctx, pending, unsure, unsure.err)
			return
		}
		switch s.awaitVerdict(ctx, pending, unsure, pause.Next()) {
		case verdictCommitted:
			s.committed(pending, unsure.rev, time.Since(unsure.sent))
			return
		case verdictNever:
			unsure = nil // the counter moved on without it: go again
		}
	}
}

// send sends the txn of pending once and reads its answer. It reports done
// once every create of pending is answered; otherwise it returns the
// creates to send again, and the doubt that hangs over them (nil: none).
func (s *Etcd) send(ctx context.Context, pending []*pendingCreate, unsure *doubt, attempt int) ([]*pendingCreate, *doubt, bool) {
	epoch := s.watchEpoch()
	start := time.Now()
	resp, err := s.c.Txn(ctx, s.buildTxn(pending))
	switch {
	case err == nil && resp.Succeeded:
		s.committed(pending, int64(resp.Header.Revision), time.Since(start))
		return nil, nil, true
	case err == nil:
		// A compare failed, so this attempt was not applied. What it
		// compared is read back in a txn of its own: a failure branch
		// would cost etcd's gateway the decoding of its ranges on every
		// txn, and a txn fails only after a race or a lost answer.
		ranges, err := s.readBack(ctx, pending)
		switch {
		case err == nil:
			retry, err := s.settle(pending, ranges)
			if err != nil {
				s.fail(ctx, pending, unsure, err)
				return nil, nil, true
			}
			return retry, nil, len(retry) == 0
		case unsure != nil && errors.Is(err, etcd.ErrUnreachable):
			// An earlier attempt may still be applied: the watch or
			// the next send tells, as after a send left unanswered.
			return pending, unsure, false
		case unsure == nil:
			err = s.downErr(err) // this attempt was not applied
		}
		s.fail(ctx, pending, unsure, err)
		return nil, nil, true
	case errors.Is(err, etcd.ErrUnknownOutcome):
		if unsure == nil {
			unsure = &doubt{compareRev: s.counterRev, epoch: epoch, sent: start}
		}
		unsure.err = err
	case errors.Is(err, etcd.ErrUnreachable) && unsure != nil:
		// An earlier attempt may still be applied: keep trying until
		// the deadline tells us to give up.
	case errors.Is(err, etcd.ErrUnreachable):
		s.markDown(err)
		failPending(pending, catalog.ErrUnavailable)
		return nil, nil, true
	case etcd.IsLeaseNotFound(err) && attempt < 3:
		// The lease of the keys is gone (revoked, or lost with a
		// restore): this attempt was not applied; grant a new one and go
		// again.
		if err := s.renewLease(ctx, pending, unsure); err != nil {
			return nil, nil, true
		}
	default:
		// A final refusal (4xx): this attempt was not applied, and
		// sending it again would not change the answer. The detail is
		// logged.
		s.fail(ctx, pending, unsure, err)
		return nil, nil, true
	}
	return pending, unsure, false
}

// doubt is a txn sent without an answer: it may have been applied, may
// be later, or never.
type doubt struct {
	err        error     // the last unknown outcome
	compareRev int64     // the counter's mod_revision it compares
	epoch      uint64    // the watch's epoch when it was first sent
	sent       time.Time // when it was first sent
	rev        int64     // the revision it was applied at, once the watch shows it
}

// fail answers pending, whose last attempt failed with err. While an
// earlier attempt may still be applied (unsure), no failure is definite:
// the watch may yet show what became of it before the deadline, else the
// outcome is unknown.
func (s *Etcd) fail(ctx context.Context, pending []*pendingCreate, unsure *doubt, err error) {
	if unsure == nil {
		failPending(pending, err)
		return
	}
	switch s.awaitVerdict(ctx, pending, unsure, s.createTimeout) {
	case verdictCommitted:
		s.committed(pending, unsure.rev, 0)
	case verdictNever:
		failPending(pending, err)
	default:
		s.markDown(unsure.err)
		s.log.Error("etcd: gave up settling a create txn", "creates", len(pending), "err", unsure.err, "last", err)
		failPending(pending, catalog.ErrOutcomeUnknown)
	}
}

// renewLease grants a new lease for the Idempotency-Keys of pending after
// etcd lost the one they were to be put under; on failure it answers them.
func (s *Etcd) renewLease(ctx context.Context, pending []*pendingCreate, unsure *doubt) error {
	s.lease = etcdLease{}
	err := s.ensureLease(ctx, pending)
	if err != nil {
		if unsure == nil {
			err = s.downErr(err)
		}
		s.fail(ctx, pending, unsure, err)
	}
	return err
}

// prepare readies pending for a txn: it refuses the creates that the
// counter or the cap do not allow, and grants a lease for Idempotency-Keys.
// It returns the creates to send: none when every one has failed.
func (s *Etcd) prepare(ctx context.Context, pending []*pendingCreate) []*pendingCreate {
	if err := s.checkCounter(ctx, len(pending)); err != nil {
		failPending(pending, err)
		return nil
	}
	if pending = s.cutToQuota(pending); len(pending) == 0 {
		return nil
	}
	if err := s.ensureLease(ctx, pending); err != nil {
		failPending(pending, s.downErr(err))
		return nil
	}
	return pending
}

// downErr returns catalog.ErrUnavailable, having marked etcd down, for an
// err that says etcd did not answer a request that changes nothing or was
// not applied; any other err as it is.
func (s *Etcd) downErr(err error) error {
	if errors.Is(err, etcd.ErrUnreachable) || errors.Is(err, etcd.ErrUnknownOutcome) {
		s.markDown(err)
		return catalog.ErrUnavailable
	}
	return err
}

// cutToQuota refuses, with catalog.ErrQuotaExceeded, the creates of pending that
// would take the counter past maxCategories, and returns the others. The
// txn commits only on top of the counter known here (it compares its
// mod_revision), so cutting every batch to the room left keeps all
// instances together within the cap. An unknown outcome is settled by
// the same txn again: the counter has not moved, nor has the cut.
func (s *Etcd) cutToQuota(pending []*pendingCreate) []*pendingCreate {
	room := max(s.maxCategories-s.counter, 0)
	if int64(len(pending)) <= room {
		return pending
	}
	for _, p := range pending[room:] {
		p.req.err = catalog.ErrQuotaExceeded
	}
	return pending[:room]
}

// errCounterBehind answers creates while a category record holds an id the
// counter would give: another writer set the counter back.
var errCounterBehind = errors.New("etcd: the id counter is below the id of a category record; a create would overwrite it")

// counterRefusal returns why the writer's view of the counter cannot give
// n ids after last, the cache's last id, or nil.
func (s *Etcd) counterRefusal(n int, last int64) error {
	switch {
	case s.counterBad:
		return errBadCounter
	case s.counter > math.MaxInt64-int64(n):
		return catalog.ErrIDsExhausted
	case s.blocked || s.counter < last:
		return errCounterBehind
	}
	return nil
}

// checkCounter returns nil when the counter leaves room for n ids above
// every record. A view that does not is read again before it refuses (two
// quorum reads, no write): another writer may have put the counter right,
// and a refusal must last no longer than its cause. Each new cause is
// logged once, with the values.
func (s *Etcd) checkCounter(ctx context.Context, n int) error {
	// Taken before the read: every id the cache holds then is at most the
	// counter a quorum read gives after. One taken later may be a create
	// of another instance made since.
	last := s.idx.Snapshot().LastID()
	if s.counterRefusal(n, last) == nil {
		s.refusing = ""
		return nil
	}
	next, err := s.readCounter(ctx)
	if errors.Is(err, etcd.ErrUnreachable) {
		s.markDown(err)
		return catalog.ErrUnavailable
	}
	if err != nil {
		return err
	}
	why := s.counterRefusal(n, last)
	if why == nil {
		s.refusing = ""
		return nil
	}
	if why.Error() != s.refusing {
		s.refusing = why.Error()
		s.log.Error("etcd: creates are refused until the counter is put right", "err", why,
			"counter", s.counter, "last_cached_id", last, "record_above_counter", next)
	}
	return why
}

// readCounter reads the counter, then whether a category key lies above
// it at the same revision, and returns that key's id (0: none).
func (s *Etcd) readCounter(ctx context.Context) (int64, error) {
	r, err := s.c.Range(ctx, etcd.RangeRequest{Key: s.keys.counter})
	if err != nil {
		return 0, err
	}
	counter, err := parseCounter(r.Kvs)
	if s.counterBad = errors.Is(err, errBadCounter); err != nil {
		return 0, nil // refused by counterRefusal
	}
	s.counter, s.counterRev, s.blocked = counter.value, counter.rev, false
	s.noteCounter(counter.value)
	if counter.value == math.MaxInt64 {
		return 0, nil
	}
	above := s.aboveCounter()
	above.Revision = int64(r.Header.Revision) // the counter's moment, not a later create's
	if r, err = s.c.Range(ctx, *above); err != nil {
		return 0, err
	}
	id := s.firstID(r.Kvs)
	s.blocked = id != 0
	return id, nil
}

// aboveCounter is the range of the keys of the next etcdMaxBatch ids
// after the counter (s.counter < math.MaxInt64), which a batch may take
// and which must not exist.
func (s *Etcd) aboveCounter() *etcd.RangeRequest {
	end := s.keys.categoriesEnd
	if s.counter < math.MaxInt64-etcdMaxBatch {
		end = s.keys.category(s.counter + etcdMaxBatch + 1)
	}
	return &etcd.RangeRequest{Key: s.keys.category(s.counter + 1), RangeEnd: end, KeysOnly: true}
}

// firstID returns the id of the first key of kvs that is a category's
// (keys another writer made up in between are not), or 0.
func (s *Etcd) firstID(kvs []etcd.KV) int64 {
	for _, kv := range kvs {
		if id, ok := s.keys.idOf(kv.Key); ok {
			return id
		}
	}
	return 0
}

// committed records the txn of pending that etcd applied at revision rev.
func (s *Etcd) committed(pending []*pendingCreate, rev int64, took time.Duration) {
	if s.onCommit != nil {
		s.onCommit(len(pending), took)
	}
	now := s.now()
	for _, p := range pending {
		p.req.cat.ID = p.id
		p.req.at = now
	}
	s.counter += int64(len(pending))
	s.counterRev = rev
	s.noteCounter(s.counter)
	s.down.Store(nil)
}

// checkNames refuses (catalog.NameTaken) names the cache knows and a name given
// twice in the batch, and returns the other creates with their tokens.
func (s *Etcd) checkNames(batch []*createRequest) (pending []*pendingCreate, later []*createRequest) {
	clear(s.seen)
	pending = make([]*pendingCreate, 0, len(batch))
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, req := range batch {
		_, dup := s.seen[req.key]
		switch {
		case dup:
			// One txn cannot claim a name twice; and the first claim is
			// not the name's until its txn commits.
			later = append(later, req)
			continue
		case req.nc.Key == nil && s.idx.Has(req.key):
			// Taken: refused here. A keyed create of a taken name goes on
			// to the txn, since it may be the retry of the create that
			// took it, on another instance: the txn tells.
			id, name, _ := s.idx.Holder(req.key)
			req.err = catalog.NameTaken(req.nc.Name, id, name)
			continue
		}
		s.seen[req.key] = struct{}{}
		req.cat = req.nc.WithID(0) // buildTxn gives it its id
		pending = append(pending, &pendingCreate{req: req, token: rand.Text()})
	}
	return pending, later
}

// buildTxn gives the pending creates the ids after s.counter and builds
// their txn. Built again from the same state, it is the same txn.
func (s *Etcd) buildTxn(pending []*pendingCreate) *etcd.TxnRequest {
	n := len(pending)
	t := &etcd.TxnRequest{
		Compare: make([]etcd.Compare, 0, 1+3*n),
		Success: make([]etcd.Op, 0, 1+3*n),
	}
	rev := s.counterRev
	t.Compare = append(t.Compare, etcd.Compare{Target: "MOD", Result: "EQUAL", Key: s.keys.counter, ModRevision: &rev})
	zero := int64(0)
	for i, p := range pending {
		p.id = s.counter + int64(i) + 1
		p.req.cat.ID = p.id
		nameKey := s.keys.name(p.req.key)
		claim, _ := json.Marshal(nameClaim{ID: p.id, Token: p.token})
		t.Compare = append(t.Compare, etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: nameKey, CreateRevision: &zero})
		if s.compareEach {
			t.Compare = append(t.Compare, etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: s.keys.category(p.id), CreateRevision: &zero})
		}
		t.Success = append(t.Success,
			etcd.Op{RequestPut: &etcd.PutRequest{Key: nameKey, Value: claim}},
			etcd.Op{RequestPut: &etcd.PutRequest{Key: s.keys.category(p.id), Value: p.req.cat.AppendJSON(nil)}})
		if k := p.req.nc.Key; k != nil {
			key := s.keys.idempotencyKey(k)
			claim, _ := json.Marshal(keyClaim{ID: p.id, Token: p.token, Request: requestHex(p.req.nc)})
			t.Compare = append(t.Compare, etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: key, CreateRevision: &zero})
			t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: key, Value: claim, Lease: s.lease.id}})
		}
	}
	if !s.compareEach {
		// Never over a record (the counter may have been set back): one
		// compare of every key in the range of the batch's record keys,
		// which costs etcd less than a compare of each key
		// (docs/performance.md, "Where an etcd create's time goes").
		end := s.keys.categoriesEnd
		if last := s.counter + int64(n); last < math.MaxInt64 {
			end = s.keys.category(last + 1)
		}
		t.Compare = append(t.Compare, etcd.Compare{Target: "CREATE", Result: "EQUAL", Key: s.keys.category(s.counter + 1), RangeEnd: end, CreateRevision: &zero})
	}
	last := strconv.AppendInt(nil, s.counter+int64(n), 10)
	t.Success = append(t.Success, etcd.Op{RequestPut: &etcd.PutRequest{Key: s.keys.counter, Value: last}})
	return t
}

// readBack reads, at one revision and linearizably, what the txn of
// pending compared: for each create its name key and, with an
// Idempotency-Key, that key; then the range above the counter and the
// counter. It returns the answers in that order.
func (s *Etcd) readBack(ctx context.Context, pending []*pendingCreate) ([]*etcd.RangeResponse, error) {
	t := &etcd.TxnRequest{Success: make([]etcd.Op, 0, 2*len(pending)+2)}
	for _, p := range pending {
		t.Success = append(t.Success, etcd.Op{RequestRange: &etcd.RangeRequest{Key: s.keys.name(p.req.key)}})
		if k := p.req.nc.Key; k != nil {
			t.Success = append(t.Success, etcd.Op{RequestRange: &etcd.RangeRequest{Key: s.keys.idempotencyKey(k)}})
		}
	}
	t.Success = append(t.Success, etcd.Op{RequestRange: s.aboveCounter()}, etcd.Op{RequestRange: &etcd.RangeRequest{Key: s.keys.counter}})
	resp, err := s.c.ReadTxn(ctx, t)
	if err != nil {
		return nil, err
	}
	return readBackRanges(pending, resp)
}

// settle reads what was read back after a failed txn (see readBack). A
// key or name that holds our token is a create an earlier attempt
// committed. An Idempotency-Key made by another create answers that create
// again (same request) or refuses (another request). A name that holds
// another token is a conflict. The others are retried with the
// fresh counter; settle returns those. When the counter did not move and a
// record holds an id it would give, the counter is behind: settle records
// it for checkCounter.
func (s *Etcd) settle(pending []*pendingCreate, ranges []*etcd.RangeResponse) ([]*pendingCreate, error) {
	counter, err := parseCounter(ranges[len(ranges)-1].Kvs)
	if err != nil {
		s.counterBad = errors.Is(err, errBadCounter)
		return pending, err
	}
	above := ranges[len(ranges)-2].Kvs
	blocked := counter.rev == s.counterRev && s.firstID(above) != 0
	if i := slices.IndexFunc(above, func(kv etcd.KV) bool { _, ok := s.keys.idOf(kv.Key); return !ok }); i >= 0 && !s.compareEach {
		// A key another writer made up lies among the record keys above
		// the counter, where it fails the range compare of every batch
		// that covers it, though it is no record: compare each record key
		// from now on (until a restart).
		s.compareEach = true
		s.log.Warn("etcd: a key that is not a category's lies among the category keys above the counter; creates now compare each category key", "key", textcut.Truncate(string(above[i].Key), 80))
	}
	retry := pending[:0] // filled behind the loop's reads
	var committed int
	next := 0
	for _, p := range pending {
		name, key := ranges[next], (*etcd.RangeResponse)(nil)
		next++
		if p.req.nc.Key != nil {
			key = ranges[next]
			next++
		}
		again, done := s.settleOne(p, name, key)
		if again {
			retry = append(retry, p)
		}
		if done {
			committed++
		}
	}
	if committed > 0 {
		s.down.Store(nil)
	}
	s.counter, s.counterRev, s.blocked = counter.value, counter.rev, blocked
	s.noteCounter(counter.value)
	return retry, nil // when blocked, the next checkCounter refuses them
}

// readBackRanges returns the answers of readBack's ranges, checked to be
// as many as it asked for.
func readBackRanges(pending []*pendingCreate, resp *etcd.TxnResponse) ([]*etcd.RangeResponse, error) {
	ranges := make([]*etcd.RangeResponse, len(resp.Responses))
	for i, r := range resp.Responses {
		if r.ResponseRange == nil {
			return nil, errors.New("etcd: a read-back txn answered something other than a range")
		}
		ranges[i] = r.ResponseRange
	}
	want := 2 // the range above the counter, the counter
	for _, p := range pending {
		want++
		if p.req.nc.Key != nil {
			want++
		}
	}
	if len(ranges) != want {
		return nil, fmt.Errorf("etcd: a read-back txn answered %d ranges, want %d", len(ranges), want)
	}
	return ranges, nil
}

// settleOne reads the fate of p in a failed txn's answers: its name key,
// and its Idempotency-Key's key (nil when it has none). It says whether p
// is to be sent again, and whether an earlier attempt committed it; else
// it sets p's error or the create it replays.
func (s *Etcd) settleOne(p *pendingCreate, name, key *etcd.RangeResponse) (again, committed bool) {
	if key != nil && len(key.Kvs) > 0 {
		claim, err := parseKeyClaim(key.Kvs[0])
		if err != nil {
			p.req.err = err
			return false, false
		}
		if claim.Token == p.token { // committed by an earlier attempt
			p.req.cat.ID = claim.ID
			p.req.at = s.now()
			return false, true
		}
		// Made by another create with the key: the keyed create path
		// replays it, or refuses this one if it asks for another
		// category (catalog.NewCategory.SameAs).
		p.req.replayOf = claim.ID
		return false, false
	}
	if len(name.Kvs) == 0 {
		return true, false
	}
	var claim nameClaim
	if err := json.Unmarshal(name.Kvs[0].Value, &claim); err == nil && claim.Token == p.token {
		// Committed by an earlier attempt whose answer was lost.
		p.req.cat.ID = claim.ID
		p.req.at = s.now()
		return false, true
	}
	held, _ := s.idx.Snapshot().NameOf(claim.ID) // "" until the watch brings it
	p.req.err = catalog.NameTaken(p.req.nc.Name, claim.ID, held)
	return false, false
}

func failPending(pending []*pendingCreate, err error) {
	for _, p := range pending {
		p.req.err = err
	}
}

// A verdict is what the watch has shown of a txn in doubt.
type verdict int

const (
	verdictOpen      verdict = iota // nothing yet
	verdictCommitted                // its claims were delivered: it was applied
	verdictNever                    // the counter moved on without it: it never will be
)

// watchClaims makes the watch note the name claims of pending (on), or
// stop noting them. Claims are noted from before the first send of their
// txn, so that the watch cannot deliver one unseen.
func (s *Etcd) watchClaims(pending []*pendingCreate, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range pending {
		if on {
			s.watch.claims[p.token] = claimSeen{}
		} else {
			delete(s.watch.claims, p.token)
		}
	}
}

// watchEpoch returns the watch's epoch (see watchState).
func (s *Etcd) watchEpoch() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watch.epoch
}

// awaitVerdict waits, at most for wait or until ctx is done, for the watch
// to show what became of the txn of pending in doubt d. Committed, it sets
// the ids the claims hold and d.rev; never, it takes the counter as the
// watch last delivered it, for the next txn.
func (s *Etcd) awaitVerdict(ctx context.Context, pending []*pendingCreate, d *doubt, wait time.Duration) verdict {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	for {
		v, advanced := s.verdict(pending, d)
		if v != verdictOpen {
			return v
		}
		select {
		case <-advanced:
		case <-timer.C:
			return verdictOpen
		case <-ctx.Done():
			return verdictOpen
		}
	}
}

// verdict reads what the watch has shown of d, and returns with it the
// channel closed when the watch next delivers.
func (s *Etcd) verdict(pending []*pendingCreate, d *doubt) (verdict, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := 0
	for _, p := range pending {
		if s.watch.claims[p.token].id != 0 {
			seen++
		}
	}
	switch {
	case seen == len(pending):
		// A txn is applied whole, and its events come in one batch.
		for _, p := range pending {
			c := s.watch.claims[p.token]
			p.id, d.rev = c.id, c.rev
		}
		return verdictCommitted, s.advanced
	case seen == 0 && s.watch.epoch == d.epoch && s.watch.counter.rev > d.compareRev:
		s.counter, s.counterRev = s.watch.counter.value, s.watch.counter.rev
		return verdictNever, s.advanced
	}
	return verdictOpen, s.advanced
}
