package main

import (
	"strings"
	"testing"
	"time"
)

// Hand-made histories: each breaks one property, which must be reported;
// the clean one breaks none.

const sec = int64(time.Second)

func created201(create, name, key string, attempt int, start, end, id int64) Op {
	return Op{Kind: opCreate, Create: create, Name: name, Key: key, Attempt: attempt, Start: start, End: end,
		Status: 201, ID: id, GotName: name, Outcome: outcomeCreated}
}

func failed(create, name, key string, attempt int, start, end int64, status int, code string) Op {
	return Op{Kind: opCreate, Create: create, Name: name, Key: key, Attempt: attempt, Start: start, End: end,
		Status: status, Code: code, Outcome: classify(status, code)}
}

func lost(create, name, key string, attempt int, start, end int64) Op {
	return Op{Kind: opCreate, Create: create, Name: name, Key: key, Attempt: attempt, Start: start, End: end,
		Err: "EOF", Outcome: outcomeUnknown}
}

func listOp(inst int, start int64, cats ...category) Op {
	op := Op{Kind: opList, Instance: inst, Start: start, End: start + 1, Status: 200,
		Ranges: idRanges(cats), Count: len(cats), New: cats}
	for _, c := range cats {
		op.MaxID = max(op.MaxID, c.ID)
	}
	return op
}

func cats(names ...string) []category {
	var out []category
	for i, n := range names {
		out = append(out, category{ID: int64(i + 1), Name: n})
	}
	return out
}

// verdicts runs the checker and returns the status of each numbered
// property by its number.
func verdicts(t *testing.T, in checkInput) map[string]propResult {
	t.Helper()
	out := map[string]propResult{}
	for _, p := range check(in) {
		out[shortName(p.Name)] = p
	}
	return out
}

func wantFail(t *testing.T, in checkInput, prop, example string) {
	t.Helper()
	v := verdicts(t, in)
	for num, p := range v {
		if num == prop {
			if p.Status != statusFail {
				t.Errorf("property %s: got %s, want FAIL", prop, p.Status)
			} else if !strings.Contains(strings.Join(p.Examples, "\n"), example) {
				t.Errorf("property %s: examples %q do not mention %q", prop, p.Examples, example)
			}
			continue
		}
		if p.Status == statusFail {
			t.Errorf("property %s failed too: %v", num, p.Examples)
		}
	}
}

func TestCleanHistoryPasses(t *testing.T) {
	in := checkInput{
		Ops: []Op{
			created201("a", "a", "", 1, 0, sec, 1),
			lost("b", "b", "k-b", 1, sec, 2*sec),
			created201("b", "b", "k-b", 2, 3*sec, 4*sec, 2),
			failed("c", "c", "", 1, 5*sec, 6*sec, 503, "unavailable"),
			lost("d", "d", "", 1, 5*sec, 6*sec),
			listOp(0, 7*sec, cats("a", "b", "d")...),
		},
		Final: cats("a", "b", "d"),
		Bound: 2 * sec, Grace: sec,
	}
	for num, p := range verdicts(t, in) {
		if p.Status == statusFail {
			t.Errorf("property %s failed: %v", num, p.Examples)
		}
	}
}

func TestCreatedButAbsent(t *testing.T) {
	in := checkInput{Ops: []Op{created201("a", "a", "", 1, 0, sec, 1), created201("b", "b", "", 1, 0, sec, 2)}, Final: cats("a")}
	wantFail(t, in, "1", "id 2 is not in the final state")
}

func TestPresentThoughDefinite(t *testing.T) {
	in := checkInput{Ops: []Op{failed("a", "a", "", 1, 0, sec, 500, "internal")}, Final: cats("a")}
	wantFail(t, in, "2", "every attempt was a definite failure")
	// 503 unavailable is definite too; outcome_unknown is not.
	in.Ops[0] = failed("a", "a", "", 1, 0, sec, 503, "unavailable")
	wantFail(t, in, "2", "503 unavailable")
	in.Ops[0] = failed("a", "a", "", 1, 0, sec, 503, "outcome_unknown")
	if p := verdicts(t, in)["2"]; p.Status != statusPass {
		t.Errorf("an unknown outcome present: got %s, want PASS", p.Status)
	}
}

func TestNameCreatedTwice(t *testing.T) {
	in := checkInput{Ops: []Op{
		created201("x", "pool-a", "", 1, 0, sec, 1),
		created201("y", "pool-a", "", 1, 0, sec, 2),
	}, Final: []category{{1, "pool-a"}, {2, "pool-a"}}}
	v := verdicts(t, in)
	if v["3"].Status != statusFail || v["4"].Status != statusFail {
		t.Errorf("a name stored twice: properties 3 and 4 got %s and %s, want FAIL", v["3"].Status, v["4"].Status)
	}
}

func TestNamesUniqueIgnoringCase(t *testing.T) {
	in := checkInput{Ops: []Op{
		created201("x", "Pool-a", "", 1, 0, sec, 1),
		created201("y", "pool-A", "", 1, 0, sec, 2),
	}, Final: []category{{1, "Pool-a"}, {2, "pool-A"}}}
	wantFail(t, in, "4", "same name ignoring case")
}

func TestIDGap(t *testing.T) {
	in := checkInput{Ops: []Op{created201("a", "a", "", 1, 0, sec, 1), created201("b", "b", "", 1, 0, sec, 3)},
		Final: []category{{1, "a"}, {3, "b"}}}
	wantFail(t, in, "5", "after id 1 comes id 3")
}

func TestIDsOutOfRealTimeOrder(t *testing.T) {
	in := checkInput{Ops: []Op{created201("a", "a", "", 1, 0, sec, 2), created201("b", "b", "", 1, 2*sec, 3*sec, 1)},
		Final: []category{{1, "b"}, {2, "a"}}}
	wantFail(t, in, "5", "out of real-time order")
}

func TestKeyAnsweredTwoIDs(t *testing.T) {
	in := checkInput{Ops: []Op{
		created201("a", "a", "k-a", 1, 0, sec, 1),
		created201("a", "a", "k-a", 2, 2*sec, 3*sec, 2),
	}, Final: cats("a")}
	v := verdicts(t, in)
	if p := v["6"]; p.Status != statusFail || !strings.Contains(p.Examples[0], "two ids") {
		t.Errorf("property 6: got %s %v, want FAIL naming two ids", p.Status, p.Examples)
	}
}

func TestRetryOfStoredKeyConflicts(t *testing.T) {
	in := checkInput{Ops: []Op{
		lost("a", "a", "k-a", 1, 0, sec),
		failed("a", "a", "k-a", 2, 2*sec, 3*sec, 409, "conflict"),
	}, Final: cats("a")}
	wantFail(t, in, "6", "a replay was due")
}

func TestFirstAttemptReplayed(t *testing.T) {
	op := created201("a", "a", "k-a", 1, 0, sec, 1)
	op.Replayed = true
	wantFail(t, checkInput{Ops: []Op{op}, Final: cats("a")}, "6", "first attempt answered as a replay")
}

func TestListMissesCreateBeyondBound(t *testing.T) {
	ops := []Op{
		created201("a", "a", "", 1, 0, sec, 1),
		created201("b", "b", "", 1, 0, sec, 2),
		listOp(1, 4*sec, category{1, "a"}),
	}
	in := checkInput{Ops: ops, Final: cats("a", "b"), Bound: 2 * sec, Grace: sec}
	wantFail(t, in, "7", "lacks 1 create(s)")

	// Within the bound: fine.
	in.Ops[2].Start = 2*sec + sec/2
	if p := verdicts(t, in)["7"]; p.Status != statusPass {
		t.Errorf("a lag within the bound: got %s %v, want PASS", p.Status, p.Examples)
	}
	// Cut off at the list's start: excused.
	in.Ops[2].Start = 4 * sec
	in.Unreachable = map[int][]interval{1: {{From: 3 * sec, To: 5 * sec}}}
	if p := verdicts(t, in)["7"]; p.Status != statusPass {
		t.Errorf("a list while cut off: got %s %v, want PASS", p.Status, p.Examples)
	}
	// Healed at 3 s: due at 3 + 1 (grace) + 2 (bound) = 6 s.
	in.Unreachable = map[int][]interval{1: {{From: 2 * sec, To: 3 * sec}}}
	in.Ops[2].Start = 5 * sec
	if p := verdicts(t, in)["7"]; p.Status != statusPass {
		t.Errorf("a list within grace after a heal: got %s %v, want PASS", p.Status, p.Examples)
	}
	in.Ops[2].Start = 7 * sec
	wantFail(t, in, "7", "lacks 1 create(s)")
}

func TestCreateAfterFailedSync(t *testing.T) {
	in := checkInput{Ops: []Op{
		created201("a", "a", "", 1, 0, sec, 1),
		failed("b", "b", "", 1, 2*sec, 3*sec, 500, "internal"),
		created201("c", "c", "", 1, 4*sec, 5*sec, 2),
	}, Final: []category{{1, "a"}, {2, "c"}}, SyncFaultFrom: sec, Restarts: []int64{10 * sec}}
	wantFail(t, in, "8", `"c" attempt 1`)
}

func TestReadOfLostCategory(t *testing.T) {
	in := checkInput{Ops: []Op{
		lost("a", "a", "", 1, 0, sec),
		listOp(0, 2*sec, category{1, "a"}),
	}, Final: nil}
	wantFail(t, in, "9", `showed id 1 "a"`)
}

func TestGetOfCreatedAnswers404(t *testing.T) {
	in := checkInput{Ops: []Op{
		created201("a", "a", "", 1, 0, sec, 1),
		{Kind: opGet, ID: 1, Name: "a", Start: 2 * sec, End: 3 * sec, Status: 404, Code: "not_found"},
	}, Final: cats("a")}
	wantFail(t, in, "9", "answered 404")
}

func TestMergeIntervals(t *testing.T) {
	got := mergeIntervals([]interval{{5, 6}, {1, 3}, {2, 4}, {6, 7}})
	want := []interval{{1, 4}, {5, 7}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestWorldStateReachability(t *testing.T) {
	var s worldState
	for i := range 3 {
		s.MemberUp[i], s.InstUp[i] = true, true
	}
	if !s.instReachesQuorum(0) {
		t.Fatal("a healthy world: petstore 0 cannot reach a quorum")
	}
	s.Mode[0] = [3]proxyMode{modeRefuse, modeLoseAnswers, modePass}
	s.MemberUp[2] = false
	if s.instReachesQuorum(0) {
		t.Error("its only passing proxy leads to a member that is down, yet it reaches a quorum")
	}
	s.MemberUp[2], s.MemberUp[1] = true, false
	if !s.instReachesQuorum(0) {
		t.Error("two members up and a passing proxy to one: it should reach a quorum")
	}
}
