package fairshare

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkComputeFactors: 100 accounts in 10 groups, 100 users each (10,000
// users), every user with usage: both algorithms over the whole tree.
func BenchmarkComputeFactors(b *testing.B) {
	var spec TreeSpec
	usage := map[Assoc]float64{}
	for g := range 10 {
		group := AccountSpec{Name: fmt.Sprintf("g%d", g), Shares: Shares(g + 1)}
		for a := range 10 {
			acct := AccountSpec{Name: fmt.Sprintf("g%d-a%d", g, a), Shares: Shares(a + 1)}
			for u := range 100 {
				acct.Users = append(acct.Users, UserSpec{Name: fmt.Sprintf("u%d", u), Shares: 1})
				usage[Assoc{Account: acct.Name, User: fmt.Sprintf("u%d", u)}] = float64((g*31 + a*17 + u*7) % 1000)
			}
			group.Accounts = append(group.Accounts, acct)
		}
		spec.Accounts = append(spec.Accounts, group)
	}
	tree, err := NewTree(spec)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		ComputeFactors(tree, usage, FactorOptions{})
	}
}

// BenchmarkLedgerRecord: one 10 s collection of a 1,000-GPU fleet, one job per
// GPU, into a ledger that already holds the previous batch.
func BenchmarkLedgerRecord(b *testing.B) {
	l, err := NewLedger(LedgerOptions{Policy: Policy{Charge: ChargeMeasured, IdleFloor: 0.1}})
	if err != nil {
		b.Fatal(err)
	}
	batch := make([]Sample, 1000)
	for i := range batch {
		batch[i] = Sample{Duration: 10 * time.Second, Job: fmt.Sprint(i), Account: fmt.Sprintf("a%d", i%50),
			User: fmt.Sprintf("u%d", i%200), GPU: fmt.Sprintf("GPU-%d", i), Fraction: 1, Activity: 0.5, ActivitySource: SourceDCGMSMActive}
	}
	at := t0
	b.ResetTimer()
	for b.Loop() {
		for i := range batch {
			batch[i].Time = at
		}
		at = at.Add(10 * time.Second)
		if _, err := l.Record(at, batch); err != nil {
			b.Fatal(err)
		}
	}
}
