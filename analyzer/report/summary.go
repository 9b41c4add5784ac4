package report

import "time"

// Summary is what one allocation (a GPU held by one job or pod) did over a
// run of steps: the sums the report needs, and what it needs to join the
// run with the runs before and after it exactly. A step's Summary is built
// from its samples (Compute's raw path); the server's Downsampler stores the
// Summary of every 5-minute interval and every hour; the report adds them
// up in time order with Add, so a report read from stored summaries equals
// one read from the raw samples (docs/reports.md, "Downsampling").
//
// Idle stretches cross summaries: Head is the idle run that starts at the
// first held step (it joins the Tail of the summary before, when no step
// lies between them), Tail the idle run open at the last held step;
// Unbroken says one run covers every held step (Head and Tail are then the
// same run). InnerIdle is the held time of the runs between them that lasted
// at least the idle duration they were added with.
type Summary struct {
	// First and Last are the ends of the first and last held steps.
	First, Last time.Time
	// Seconds: held (a GPU shared by k jobs in a step gives each 1/k),
	// held × activity, held without an activity series, held measured by SM
	// activity and by utilization, and steps without a sample between First
	// and Last.
	Allocated, Measured, Unmeasured float64
	SMActive, GPUUtil               float64
	Gaps                            float64
	Head, Tail                      IdleRun
	Unbroken                        bool
	InnerIdle                       float64
	// FBPeakMiB is the highest framebuffer use in a held step, FBTotalMiB
	// the GPU's framebuffer size (0 without the series).
	FBPeakMiB, FBTotalMiB float64
}

// IdleRun is a run of consecutive held steps, each measured below the idle
// threshold: the held seconds in it, and its length in wall time.
type IdleRun struct {
	Held float64
	Wall time.Duration
}

// Empty says the summary holds no step.
func (s *Summary) Empty() bool { return s.First.IsZero() }

// Add appends next, which must start after s ends, as the steps that follow:
// step is the steps' length, idleFor the idle duration runs closed here are
// held against.
func (s *Summary) Add(next Summary, step, idleFor time.Duration) {
	if next.Empty() {
		return
	}
	if s.Empty() {
		*s = next
		return
	}
	between := next.First.Sub(s.Last) - step
	s.Allocated += next.Allocated
	s.Measured += next.Measured
	s.Unmeasured += next.Unmeasured
	s.SMActive += next.SMActive
	s.GPUUtil += next.GPUUtil
	s.FBPeakMiB = max(s.FBPeakMiB, next.FBPeakMiB)
	s.FBTotalMiB = max(s.FBTotalMiB, next.FBTotalMiB)
	if between > 0 {
		// A gap: the runs on either side of it end there.
		s.Gaps += between.Seconds()
		if !s.Unbroken {
			s.InnerIdle += s.Tail.idle(idleFor)
		}
		if !next.Unbroken {
			s.InnerIdle += next.Head.idle(idleFor)
		}
		s.Gaps += next.Gaps
		s.InnerIdle += next.InnerIdle
		s.Tail, s.Unbroken, s.Last = next.Tail, false, next.Last
		return
	}
	s.Gaps += next.Gaps
	joined := IdleRun{Held: s.Tail.Held + next.Head.Held, Wall: s.Tail.Wall + next.Head.Wall}
	switch {
	case s.Unbroken && next.Unbroken:
		s.Head, s.Tail = joined, joined
	case s.Unbroken:
		s.Head, s.Tail = joined, next.Tail
		s.InnerIdle += next.InnerIdle
	case next.Unbroken:
		s.Tail = joined
	default:
		s.InnerIdle += joined.idle(idleFor) + next.InnerIdle
		s.Tail = next.Tail
	}
	s.Unbroken = s.Unbroken && next.Unbroken
	s.Last = next.Last
}

// Idle is the held time of every idle run of at least idleFor, the runs at
// the edges included (a report's window ends them).
func (s *Summary) Idle(idleFor time.Duration) float64 {
	if s.Unbroken {
		return s.Head.idle(idleFor) + s.InnerIdle
	}
	return s.Head.idle(idleFor) + s.InnerIdle + s.Tail.idle(idleFor)
}

func (r IdleRun) idle(idleFor time.Duration) float64 {
	if r.Wall > 0 && r.Wall >= idleFor {
		return r.Held
	}
	return 0
}

// stepSummary is one held step ending at end: held seconds, activity (NaN:
// unmeasured) and its source, framebuffer used (NaN: none) and total.
func stepSummary(end time.Time, step time.Duration, held, act float64, src string, idleBelow, used, total float64) Summary {
	s := Summary{First: end, Last: end, Allocated: held, FBTotalMiB: total}
	if used == used && used > 0 { // not NaN
		s.FBPeakMiB = used
	}
	switch src {
	case "":
		s.Unmeasured = held
		return s
	case SourceSMActive:
		s.SMActive = held
	default:
		s.GPUUtil = held
	}
	s.Measured = held * act
	if act < idleBelow {
		s.Head = IdleRun{Held: held, Wall: step}
		s.Tail, s.Unbroken = s.Head, true
	}
	return s
}
