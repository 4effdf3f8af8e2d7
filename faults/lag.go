package main

import (
	"fmt"
	"sort"
	"strings"
)

// created is a create answered 201: when its first 201 ended, and its id.
type created struct {
	end, id int64
	l       *logical
}

// listsWithinBound is property 7: a list that began at t holds every
// create answered 201 (on any instance) that ended before t − Bound,
// unless its instance could not reach a quorum at some time since; after
// such a time the bound runs again from its end plus Grace. The worst lag
// seen per instance is reported too, inside and outside fault windows.
func (d *derived) listsWithinBound() propResult {
	p := propResult{Name: "7 lists hold every earlier 201 within the bound"}
	var cs []created
	for _, l := range d.logicals {
		if l.first201 != nil {
			cs = append(cs, created{l.first201.End, l.first201.ID, l})
		}
	}
	sort.Slice(cs, func(a, b int) bool { return cs[a].end < cs[b].end })
	worst, worstDue := map[int]int64{}, map[int]int64{}
	instances := map[int]bool{}
	var worstFail string
	var worstFailLag int64
	for i := range d.in.Ops {
		op := &d.in.Ops[i]
		if op.Kind != opList || op.Status != 200 || op.Err != "" {
			continue
		}
		instances[op.Instance] = true
		p.Checked++
		missing, exempt := d.checkList(op, cs, worst, worstDue)
		if len(missing) > 0 {
			c := missing[0]
			due, _ := d.dueBy(op.Instance, c.end, op.Start)
			msg := fmt.Sprintf("list on #%d at %s (%d categories, max id %d) lacks %d create(s) due by then, the oldest id %d %q answered 201 on #%d at %s (%s before the list, due on #%d by %s)%s",
				op.Instance, secs(op.Start), op.Count, op.MaxID, len(missing), c.id, c.l.name,
				c.l.first201.Instance, secs(c.end), secs(op.Start-c.end), op.Instance, secs(due), reachNote(exempt))
			p.fail("%s", msg)
			if lag := op.Start - due; lag > worstFailLag {
				worstFail, worstFailLag = msg, lag
			}
		}
	}
	var notes []string
	for i := range 3 {
		switch {
		case !instances[i]:
		case d.in.Unreachable == nil:
			notes = append(notes, fmt.Sprintf("#%d worst %s", i, secs(worst[i])))
		default:
			notes = append(notes, fmt.Sprintf("#%d worst %s (%s counted from when the bound applied)", i, secs(worst[i]), secs(worstDue[i])))
		}
	}
	if d.in.Unreachable == nil {
		p.Notes = append(p.Notes, fmt.Sprintf("bound %s; lag of missing creates: %s", secs(d.in.Bound), strings.Join(notes, ", ")))
	} else {
		p.Notes = append(p.Notes, fmt.Sprintf("bound %s (from a 201, or from the end of a fault window plus a grace of %s); lag of missing creates: %s",
			secs(d.in.Bound), secs(d.in.Grace), strings.Join(notes, ", ")))
	}
	if worstFail != "" {
		p.Notes = append(p.Notes, "the list furthest past the bound: "+worstFail)
	}
	return p.done()
}

func reachNote(exemptSeen bool) string {
	if exemptSeen {
		return "; other missing creates fell in a fault window"
	}
	return ""
}

// checkList returns the creates op lacks that were due, oldest first, and
// whether it also lacked some that a fault window excused; it updates the
// worst lags of op's instance: from the 201, and from when the bound
// began to run (the 201, or the end of a fault window plus the grace).
func (d *derived) checkList(op *Op, cs []created, worst, worstDue map[int]int64) ([]created, bool) {
	t := op.Start
	n := sort.Search(len(cs), func(i int) bool { return cs[i].end >= t })
	var missing []created
	exempt := false
	for _, c := range cs[:n] {
		if op.holds(c.id) {
			continue
		}
		lag := t - c.end
		worst[op.Instance] = max(worst[op.Instance], lag)
		due, inWindow := d.dueBy(op.Instance, c.end, t)
		if inWindow {
			exempt = true
			continue
		}
		// The lag counted from when the bound began to run: past the
		// bound, the list breaks the property.
		worstDue[op.Instance] = max(worstDue[op.Instance], t-(due-d.in.Bound))
		if t > due {
			missing = append(missing, c)
		}
	}
	return missing, exempt
}

// dueBy returns when a create that ended at end must be in the lists of
// instance inst, and whether a fault window excuses it at t: the instance
// could not reach a quorum at t.
func (d *derived) dueBy(inst int, end, t int64) (int64, bool) {
	due := end + d.in.Bound
	spans := d.in.Unreachable[inst]
	k := sort.Search(len(spans), func(i int) bool { return spans[i].From > t }) - 1
	if k < 0 {
		return due, false
	}
	last := spans[k]
	if last.To >= t {
		return 0, true
	}
	if last.To > end {
		due = last.To + d.in.Grace + d.in.Bound
	}
	return due, false
}
