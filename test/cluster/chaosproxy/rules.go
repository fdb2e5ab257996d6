package main

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sync"
)

// Action is what a firing rule does to a request.
type Action struct {
	Status     int  `json:"status,omitempty"`
	DelayMs    int  `json:"delay_ms,omitempty"`
	Stall      bool `json:"stall,omitempty"`
	Reset      bool `json:"reset,omitempty"`
	LoseAnswer bool `json:"lose_answer,omitempty"`
}

// Kind names the action for /stats.
func (a Action) Kind() string {
	switch {
	case a.Status != 0:
		return fmt.Sprintf("status_%d", a.Status)
	case a.Stall:
		return "stall"
	case a.Reset:
		return "reset"
	case a.LoseAnswer:
		return "lose_answer"
	case a.DelayMs != 0:
		return "delay"
	}
	return "none"
}

// Rule is one fault rule as the control API takes it.
type Rule struct {
	ID        string   `json:"id"`
	Method    string   `json:"method,omitempty"`
	Path      string   `json:"path,omitempty"`
	Query     string   `json:"query,omitempty"`
	Watch     *bool    `json:"watch"`
	UserAgent string   `json:"user_agent,omitempty"`
	Fraction  *float64 `json:"fraction,omitempty"`
	Count     int      `json:"count,omitempty"`
	Action    Action   `json:"action"`
	Fired     int      `json:"fired"`
}

type rule struct {
	Rule
	path, query, ua *regexp.Regexp
}

func compile(expr string) (*regexp.Regexp, error) {
	if expr == "" {
		return nil, nil
	}
	return regexp.Compile(expr)
}

func newRule(r Rule) (*rule, error) {
	var err error
	out := &rule{Rule: r}
	if out.path, err = compile(r.Path); err != nil {
		return nil, fmt.Errorf("rule %q: path: %w", r.ID, err)
	}
	if out.query, err = compile(r.Query); err != nil {
		return nil, fmt.Errorf("rule %q: query: %w", r.ID, err)
	}
	if out.ua, err = compile(r.UserAgent); err != nil {
		return nil, fmt.Errorf("rule %q: user_agent: %w", r.ID, err)
	}
	a := r.Action
	n := 0
	for _, on := range []bool{a.Status != 0, a.Stall, a.Reset, a.LoseAnswer} {
		if on {
			n++
		}
	}
	if n > 1 || (a.DelayMs != 0 && n > 0) {
		return nil, fmt.Errorf("rule %q: one action per rule", r.ID)
	}
	if n == 0 && a.DelayMs == 0 {
		return nil, fmt.Errorf("rule %q: no action", r.ID)
	}
	if a.Status != 0 && reasons[a.Status] == "" {
		return nil, fmt.Errorf("rule %q: status %d not one of 401 403 404 409 429 500 503", r.ID, a.Status)
	}
	if r.Fraction != nil && (*r.Fraction < 0 || *r.Fraction > 1) {
		return nil, fmt.Errorf("rule %q: fraction outside 0..1", r.ID)
	}
	return out, nil
}

// request is what rules match on.
type request struct {
	method, path, query, ua string
	watch                   bool
}

func (r *rule) matches(q *request) bool {
	return (r.Method == "" || r.Method == q.method) &&
		(r.path == nil || r.path.MatchString(q.path)) &&
		(r.query == nil || r.query.MatchString(q.query)) &&
		(r.Watch == nil || *r.Watch == q.watch) &&
		(r.ua == nil || r.ua.MatchString(q.ua))
}

// Rules is the rule table, the seeded draw and the firing counts.
type Rules struct {
	mu      sync.Mutex
	rules   []*rule
	rng     *rand.Rand
	byRule  map[string]int
	byKind  map[string]int
	total   int
	faulted int
	// changed is closed and replaced at every Replace: held streams
	// look at the table again.
	changed chan struct{}
}

func newRules(seed uint64) *Rules {
	return &Rules{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		byRule: map[string]int{}, byKind: map[string]int{}, changed: make(chan struct{})}
}

// Replace installs a new table; held watch streams look at it again.
func (t *Rules) Replace(in []Rule) error {
	next := make([]*rule, 0, len(in))
	for _, r := range in {
		nr, err := newRule(r)
		if err != nil {
			return err
		}
		next = append(next, nr)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = next
	close(t.changed)
	t.changed = make(chan struct{})
	return nil
}

// Holds returns the id of the first stall rule that matches q (fraction
// and count do not apply: a stall holds every matching stream, open or
// new, while it exists) and a channel closed at the next change.
func (t *Rules) Holds(q *request) (string, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rules {
		if r.Action.Stall && r.matches(q) {
			return r.ID, t.changed
		}
	}
	return "", t.changed
}

// CountHold counts a stream newly held by stall rule id.
func (t *Rules) CountHold(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, r := range t.rules {
		if r.ID == id {
			r.Fired++
		}
	}
	t.byRule[id]++
	t.byKind["stall"]++
	t.faulted++
}

// List is the table with each rule's firings so far.
func (t *Rules) List() []Rule {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Rule, 0, len(t.rules))
	for _, r := range t.rules {
		out = append(out, r.Rule)
	}
	return out
}

// Pick returns the first matching rule whose draw fires (nil: none) and
// counts it.
func (t *Rules) Pick(q *request) *rule {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	for _, r := range t.rules {
		if r.Action.Stall || !r.matches(q) || (r.Count > 0 && r.Fired >= r.Count) {
			continue
		}
		if r.Fraction != nil && *r.Fraction < 1 && t.rng.Float64() >= *r.Fraction {
			continue
		}
		r.Fired++
		t.byRule[r.ID]++
		t.byKind[r.Action.Kind()]++
		t.faulted++
		return r
	}
	return nil
}

// Stats is what GET /stats answers.
func (t *Rules) Stats() map[string]any {
	t.mu.Lock()
	defer t.mu.Unlock()
	byRule, byKind := map[string]int{}, map[string]int{}
	for k, v := range t.byRule {
		byRule[k] = v
	}
	for k, v := range t.byKind {
		byKind[k] = v
	}
	return map[string]any{"requests": t.total, "faulted": t.faulted, "rules": byRule, "actions": byKind}
}
