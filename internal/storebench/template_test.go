package main

import (
	"testing"
)

// TestTemplateReplicas checks what every store benchmark is built on: one real
// agent's shipped series, replicated per node with distinct identities, and
// counters that never go backwards however long the replay runs.
func TestTemplateReplicas(t *testing.T) {
	tm, err := simulateTemplate(4, 1)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tm.series); n < 1500 || n > 2500 {
		t.Fatalf("template has %d series; an HGX H100 agent ships 1,500–2,500", n)
	}
	if tm.metricsLines <= len(tm.series) || tm.scrapeOnly == 0 {
		t.Errorf("/metrics had %d lines, %d scrape-only; want more lines than the %d shipped series", tm.metricsLines, tm.scrapeOnly, len(tm.series))
	}
	seen := map[string]int{}
	for n := range 3 {
		for i := range tm.series {
			key := labelKey(tm.replicaLabels(i, n))
			if prev, dup := seen[key]; dup {
				t.Fatalf("series %d of node %d has the same labels as series %d: %s", i, n, prev, key)
			}
			seen[key] = i
		}
	}
	node := nodeName(2)
	hasNode := false
	for _, l := range tm.replicaLabels(0, 2) {
		hasNode = hasNode || l.Value == node
		if l.Value == tm.node {
			t.Errorf("replica 2 still carries the template node's name %q", tm.node)
		}
	}
	if !hasNode {
		t.Errorf("replica 2's labels %v do not name %s", tm.replicaLabels(0, 2), node)
	}
	counters := 0
	for i, s := range tm.series {
		if !s.counter {
			continue
		}
		counters++
		for n := range 2 {
			prev := tm.value(i, n, 0)
			for c := 1; c < 50; c++ {
				v := tm.value(i, n, c)
				if v < prev {
					t.Fatalf("counter %s on node %d went from %g to %g at cycle %d", labelKey(s.labels), n, prev, v, c)
				}
				prev = v
			}
		}
	}
	if counters == 0 {
		t.Error("no counters in the template")
	}
	wr := tm.writeRequest(1, 5, 1_700_000_000_000)
	if len(wr.Timeseries) != len(tm.series) {
		t.Fatalf("write request has %d series, want %d", len(wr.Timeseries), len(tm.series))
	}
	raw, err := wr.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) < 100*len(tm.series)/2 {
		t.Errorf("a node's request is %d bytes for %d series: too small to be real", len(raw), len(tm.series))
	}
}
