package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// outcome is what a scenario ended with: counts, verdicts, or the error
// that kept it from running.
type outcome struct {
	Name    string                 `json:"name"`
	About   string                 `json:"about"`
	Dir     string                 `json:"dir"`
	Seconds float64                `json:"seconds"`
	Ops     map[string]int         `json:"ops"`
	Creates map[string]int         `json:"creates"`
	PerInst map[int]map[string]int `json:"creates_per_instance"`
	Answers map[string]int         `json:"non_201_answers"`
	Props   []propResult           `json:"properties"`
	Notes   []string               `json:"notes,omitempty"`
	Faults  []faultEvent           `json:"faults,omitempty"`
	Err     string                 `json:"error,omitempty"`
	Skipped string                 `json:"skipped,omitempty"`
}

// passed reports whether the scenario ran and every property held.
func (o *outcome) passed() bool {
	if o.Err != "" {
		return false
	}
	for _, p := range o.Props {
		if p.Status == statusFail {
			return false
		}
	}
	return true
}

// tally counts operations, create attempts by outcome (in all and per
// instance) and the answers other than 201.
func (o *outcome) tally(ops []Op) {
	o.Ops, o.Creates, o.PerInst, o.Answers = map[string]int{}, map[string]int{}, map[int]map[string]int{}, map[string]int{}
	for _, op := range ops {
		o.Ops[op.Kind]++
		if op.Kind != opCreate {
			continue
		}
		o.Creates[op.Outcome]++
		if o.PerInst[op.Instance] == nil {
			o.PerInst[op.Instance] = map[string]int{}
		}
		o.PerInst[op.Instance][op.Outcome]++
		switch {
		case op.Err != "":
			o.Answers["no answer"]++
		case op.Status != 201:
			o.Answers[fmt.Sprintf("%d %s", op.Status, op.Code)]++
		}
	}
}

func countLine(m map[string]int) string {
	return fmt.Sprintf("201 %d, definite %d, unknown %d", m[outcomeCreated], m[outcomeDefinite], m[outcomeUnknown])
}

// print writes the scenario's report.
func (o *outcome) print(w io.Writer) {
	verdict := "PASS"
	if !o.passed() {
		verdict = "FAIL"
	}
	if o.Err != "" {
		verdict = "ERROR"
	}
	if o.Skipped != "" {
		fmt.Fprintf(w, "\n=== %s: SKIPPED: %s\n", o.Name, o.Skipped)
		return
	}
	fmt.Fprintf(w, "\n=== %s: %s (%.1fs)\n    %s\n    dir: %s\n", o.Name, verdict, o.Seconds, o.About, o.Dir)
	for _, ev := range o.Faults {
		if ev.What != "start" {
			fmt.Fprintf(w, "    fault %8s  %s\n", secs(ev.At), ev.What)
		}
	}
	for _, n := range o.Notes {
		fmt.Fprintf(w, "    note: %s\n", n)
	}
	total := o.Ops[opCreate] + o.Ops[opList] + o.Ops[opGet]
	fmt.Fprintf(w, "    operations: %d (create attempts %d, lists %d, gets %d)\n", total, o.Ops[opCreate], o.Ops[opList], o.Ops[opGet])
	fmt.Fprintf(w, "    creates: %s\n", countLine(o.Creates))
	var insts []int
	for i := range o.PerInst {
		insts = append(insts, i)
	}
	sort.Ints(insts)
	for _, i := range insts {
		fmt.Fprintf(w, "      on #%d: %s\n", i, countLine(o.PerInst[i]))
	}
	if len(o.Answers) > 0 {
		var parts []string
		for k, v := range o.Answers {
			parts = append(parts, fmt.Sprintf("%s ×%d", k, v))
		}
		sort.Strings(parts)
		fmt.Fprintf(w, "    answers other than 201: %s\n", strings.Join(parts, ", "))
	}
	if o.Err != "" {
		fmt.Fprintf(w, "    ERROR: %s\n", o.Err)
	}
	for _, p := range o.Props {
		printProp(w, p)
	}
}

func printProp(w io.Writer, p propResult) {
	switch p.Status {
	case statusFail:
		fmt.Fprintf(w, "    FAIL %s (%d of %d checked)\n", p.Name, p.Failures, p.Checked)
	default:
		fmt.Fprintf(w, "    %s %s (%d checked)\n", p.Status, p.Name, p.Checked)
	}
	for _, n := range p.Notes {
		fmt.Fprintf(w, "         %s\n", n)
	}
	for _, ex := range p.Examples {
		fmt.Fprintf(w, "         - %s\n", ex)
	}
}

// writeSummary saves every outcome as JSON in the run directory.
func writeSummary(dir string, outs []*outcome) error {
	b, err := json.MarshalIndent(outs, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "summary.json"), b, 0o600)
}
