package shipper

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
)

// sendError is a failed request: retry says whether trying again can help.
type sendError struct {
	status     int // 0: no answer
	retry      bool
	retryAfter time.Duration
	msg        string
}

func (e *sendError) Error() string { return e.msg }

// send posts the queue in order until ctx is done.
func (s *Shipper) send(ctx context.Context) {
	backoff := s.opts.BackoffMin
	failing := 0
	for ctx.Err() == nil {
		recs := s.q.peek(s.opts.BatchSamples)
		if len(recs) == 0 {
			select {
			case <-ctx.Done():
				return
			case <-s.q.notify:
			}
			continue
		}
		body, err := requestBody(recs)
		if err != nil { // a record that checked out but does not decode
			s.log.Error("remote-write queue: undecodable records; dropping them", "first_seq", recs[0].seq, "err", err)
			s.q.commit(recs[len(recs)-1].seq+1, func(n int) { s.drop(reasonCorrupt, n) })
			continue
		}
		samples := 0
		for _, r := range recs {
			samples += r.samples
		}
		err = s.post(ctx, body)
		s.log.Debug("remote-write request", "first_seq", recs[0].seq, "records", len(recs), "samples", samples, "err", err)
		if ctx.Err() != nil {
			return // unsent: the next Run sends it
		}
		if err == nil {
			s.q.commit(recs[len(recs)-1].seq+1, func(n int) {
				s.sent.Add(uint64(n))
				s.requests.Add(1)
				s.lastSend.Store(s.opts.Now().UnixNano())
			})
			if failing > 0 {
				b, q := s.q.stats()
				s.log.Info("remote-write store reachable again", "failed_requests", failing, "backlog_samples", q, "backlog_bytes", b)
			}
			failing, backoff = 0, s.opts.BackoffMin
			continue
		}
		s.sendErrors.Add(1)
		se, _ := err.(*sendError)
		if se != nil && !se.retry {
			n := s.q.commit(recs[len(recs)-1].seq+1, func(n int) { s.drop(reasonRejected, n) })
			s.log.Error("remote-write store rejected a request; its samples are dropped", "samples", n, "status", se.status, "err", err)
			continue
		}
		if failing == 0 {
			s.log.Warn("remote-write failed; queueing and retrying", "samples", samples, "err", err)
		}
		failing++
		wait := backoff/2 + rand.N(backoff/2+1)
		if se != nil && se.retryAfter > 0 {
			wait = min(se.retryAfter, s.opts.BackoffMax)
		}
		backoff = min(2*backoff, s.opts.BackoffMax)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// requestBody makes one snappy-compressed WriteRequest of the records: a
// concatenation of encoded WriteRequests is their merge (repeated field 1), so
// several records are joined without decoding the protobuf.
func requestBody(recs []record) ([]byte, error) {
	if len(recs) == 1 {
		return recs[0].data, nil
	}
	var raw []byte
	for _, r := range recs {
		n, err := snappy.DecodedLen(r.data)
		if err != nil {
			return nil, fmt.Errorf("record %d: %w", r.seq, err)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := snappy.Decode(raw[start:], r.data); err != nil {
			return nil, fmt.Errorf("record %d: %w", r.seq, err)
		}
	}
	return snappy.Encode(nil, raw), nil
}

// post sends one request.
func (s *Shipper) post(ctx context.Context, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.opts.URL, bytes.NewReader(body))
	if err != nil {
		return &sendError{msg: err.Error()}
	}
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	req.Header.Set("User-Agent", s.ua)
	resp, err := s.opts.Client.Do(req)
	if err != nil {
		return &sendError{retry: true, msg: err.Error()}
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 == 2 {
		return nil
	}
	se := &sendError{status: resp.StatusCode,
		msg: fmt.Sprintf("%s answered %s: %s", s.target, resp.Status, strings.TrimSpace(string(msg)))}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode >= 500:
		se.retry = true
		if secs, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && secs > 0 {
			se.retryAfter = time.Duration(secs) * time.Second
		}
	case resp.StatusCode >= 400:
	default: // 1xx, 3xx: not an answer a remote-write receiver gives; retry
		se.retry = true
	}
	return se
}
