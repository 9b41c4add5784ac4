package healthpush

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/gpuwatch/gpuwatch/telemetry/healthreport"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Path is where the server takes health reports.
const Path = "/api/gpuwatch/v1/health"

// Defaults.
const (
	DefaultHeartbeat  = 30 * time.Second
	DefaultTimeout    = 5 * time.Second
	DefaultBackoffMin = 100 * time.Millisecond
	DefaultBackoffMax = 5 * time.Second
)

// Options configure a Pusher. Zero values take the defaults.
type Options struct {
	// Server is the gpuwatch server's base URL (http://host:9402).
	Server string
	// Heartbeat is how often an unchanged report is sent again.
	Heartbeat time.Duration
	// Timeout bounds one request.
	Timeout time.Duration
	// BackoffMin and BackoffMax bound the wait between retries.
	BackoffMin, BackoffMax time.Duration
	Client                 *http.Client
	Logger                 *slog.Logger
	Version                string
}

// Stats are the pusher's counters.
type Stats struct {
	Sent, Errors uint64
	LastSent     time.Time // wall time of the last accepted report
	LastError    string
}

// Pusher sends the latest health report to the server.
type Pusher struct {
	opts Options
	url  string
	ua   string
	log  *slog.Logger

	mu     sync.Mutex
	latest *healthreport.Report
	seq    uint64 // bumped by Offer when the verdict changed
	wake   chan struct{}

	sent, errors atomic.Uint64
	lastSent     atomic.Int64
	lastErr      atomic.Value // string
}

// New checks the options.
func New(opts Options) (*Pusher, error) {
	u, err := url.Parse(opts.Server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("server URL %q: want http(s)://host:port", opts.Server)
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = DefaultHeartbeat
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.BackoffMin == 0 {
		opts.BackoffMin = DefaultBackoffMin
	}
	if opts.BackoffMax == 0 {
		opts.BackoffMax = DefaultBackoffMax
	}
	if opts.Heartbeat < 0 || opts.Timeout < 0 || opts.BackoffMin < 0 || opts.BackoffMax < opts.BackoffMin {
		return nil, fmt.Errorf("health push: heartbeat %s, timeout %s, back-off %s..%s: want positive durations, min ≤ max",
			opts.Heartbeat, opts.Timeout, opts.BackoffMin, opts.BackoffMax)
	}
	if opts.Client == nil {
		opts.Client = &http.Client{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Version == "" {
		opts.Version = "devel"
	}
	base := strings.TrimRight(u.String(), "/")
	return &Pusher{opts: opts, url: base + Path, ua: "gpuwatch/" + opts.Version,
		log: opts.Logger.With("health_push", u.Redacted()), wake: make(chan struct{}, 1)}, nil
}

// Offer hands the pusher the agent's latest report. It never blocks: a changed
// verdict wakes the sender, an unchanged one waits for the heartbeat.
func (p *Pusher) Offer(r healthreport.Report) {
	p.mu.Lock()
	changed := p.latest == nil || Verdict(*p.latest) != Verdict(r)
	p.latest = &r
	if changed {
		p.seq++
	}
	p.mu.Unlock()
	if changed {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// Stats returns the counters.
func (p *Pusher) Stats() Stats {
	s := Stats{Sent: p.sent.Load(), Errors: p.errors.Load()}
	if ns := p.lastSent.Load(); ns != 0 {
		s.LastSent = time.Unix(0, ns)
	}
	if e, ok := p.lastErr.Load().(string); ok {
		s.LastError = e
	}
	return s
}

// Run sends reports until ctx is done.
func (p *Pusher) Run(ctx context.Context) error {
	var sentSeq uint64
	var lastSend time.Time
	backoff := p.opts.BackoffMin
	heartbeat := time.NewTimer(p.opts.Heartbeat)
	defer heartbeat.Stop()
	for {
		p.mu.Lock()
		r, seq := p.latest, p.seq
		p.mu.Unlock()
		due := r != nil && (seq != sentSeq || time.Since(lastSend) >= p.opts.Heartbeat)
		if due {
			if err := p.post(ctx, r); err != nil {
				if ctx.Err() != nil {
					return nil
				}
				p.errors.Add(1)
				p.lastErr.Store(err.Error())
				p.log.Warn("sending the health report failed; retrying", "err", err, "retry_in", backoff)
				select {
				case <-ctx.Done():
					return nil
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, p.opts.BackoffMax)
				continue
			}
			backoff = p.opts.BackoffMin
			sentSeq, lastSend = seq, time.Now()
			p.sent.Add(1)
			p.lastSent.Store(lastSend.UnixNano())
			heartbeat.Reset(p.opts.Heartbeat)
			continue // a newer report may have come while sending
		}
		select {
		case <-ctx.Done():
			return nil
		case <-p.wake:
		case <-heartbeat.C:
			heartbeat.Reset(p.opts.Heartbeat)
		}
	}
}

func (p *Pusher) post(ctx context.Context, r *healthreport.Report) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", p.ua)
	resp, err := p.opts.Client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("server answered %s: %s", resp.Status, strings.TrimSpace(string(msg)))
	}
	return nil
}

// Verdict is what makes two reports different for the server: the node's and
// each GPU's state, severity and action, and every active condition with its
// severity and action. Times and evidence values are left out, so a report
// that only aged is a heartbeat, not a change.
func Verdict(r healthreport.Report) string {
	var b strings.Builder
	b.WriteString(r.Node + "|" + r.State.String() + "|" + r.Severity.String() + "|" + string(r.Action))
	for _, g := range r.GPUs {
		b.WriteString("|" + strconv.Itoa(g.Index) + ":" + g.State.String() + ":" + g.Severity.String() + ":" + string(g.Action))
	}
	var keys []string
	for _, c := range r.AllConditions() {
		keys = append(keys, c.Key()+"="+c.Severity.String()+":"+string(c.Action))
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteString("|" + k)
	}
	return b.String()
}
