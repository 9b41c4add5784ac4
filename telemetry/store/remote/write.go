package remote

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"

	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
)

// WritePath is where VictoriaMetrics and Prometheus (with
// --web.enable-remote-write-receiver) take remote write 1.0.
const WritePath = "/api/v1/write"

// Writer appends samples to a Prometheus-compatible store by remote write
// 1.0: what the server itself writes (the report's summaries) when its store
// is external. It is safe for concurrent use.
type Writer struct {
	url    string
	client *http.Client
	header http.Header
}

var _ store.Appender = (*Writer)(nil)

// NewWriter returns a Writer to the remote-write endpoint writeURL
// ("http://vm:8428/api/v1/write"); opts' Client, Timeout and Header apply.
func NewWriter(writeURL string, opts Options) (*Writer, error) {
	u, err := url.Parse(writeURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote write URL %q: want http(s)://host:port/path", writeURL)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: opts.Timeout}
	}
	return &Writer{url: u.String(), client: client, header: opts.Header}, nil
}

// Append sends batch in one request. The store takes all of it or, when it
// answers an error, none (VictoriaMetrics and Prometheus validate a request
// before they store it); a 4xx answer wraps store.ErrLimit for 413 and 429.
func (w *Writer) Append(ctx context.Context, batch []telemetry.Sample) error {
	if len(batch) == 0 {
		return nil
	}
	body, err := EncodeWriteRequest(batch)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("remote write to %s: %w", w.url, err)
	}
	for k, vs := range w.header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "snappy")
	req.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	resp, err := w.client.Do(req)
	if err != nil {
		return fmt.Errorf("remote write to %s: %w", w.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	switch {
	case resp.StatusCode/100 == 2:
		return nil
	case resp.StatusCode == http.StatusRequestEntityTooLarge || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("remote write to %s: %w: HTTP %d: %s", w.url, store.ErrLimit, resp.StatusCode, strings.TrimSpace(string(msg)))
	default:
		return fmt.Errorf("remote write to %s: HTTP %d: %s", w.url, resp.StatusCode, strings.TrimSpace(string(msg)))
	}
}

// EncodeWriteRequest builds a snappy-compressed remote-write 1.0 request
// body: one TimeSeries per series, its samples in the order given; labels
// with empty values are left out, as Prometheus does.
func EncodeWriteRequest(samples []telemetry.Sample) ([]byte, error) {
	index := map[string]int{}
	var wr prompb.WriteRequest
	for i, sm := range samples {
		if sm.Time.IsZero() {
			return nil, fmt.Errorf("sample %d (%s%s) has no time", i, sm.Name, sm.Labels)
		}
		key := sm.Name + sm.Labels.String()
		k, ok := index[key]
		if !ok {
			ls := []prompb.Label{{Name: "__name__", Value: sm.Name}}
			for _, l := range sm.Labels {
				if l.Value != "" {
					ls = append(ls, prompb.Label{Name: l.Name, Value: l.Value})
				}
			}
			sort.Slice(ls, func(a, b int) bool { return ls[a].Name < ls[b].Name })
			k = len(wr.Timeseries)
			index[key] = k
			wr.Timeseries = append(wr.Timeseries, prompb.TimeSeries{Labels: ls})
		}
		wr.Timeseries[k].Samples = append(wr.Timeseries[k].Samples, prompb.Sample{Value: sm.Value, Timestamp: sm.Time.UnixMilli()})
	}
	raw, err := wr.Marshal()
	if err != nil {
		return nil, fmt.Errorf("encoding a remote write request: %w", err)
	}
	return snappy.Encode(nil, raw), nil
}
