package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/gpuwatch/gpuwatch/telemetry"
)

// selfScrapeEvery is how often, in simulated time, the demo records its server's
// own /metrics into the server's store, as a Prometheus scraping the server at
// its default interval would. The drain controller's, the placement engine's and
// fair share's series (gpuwatch_drain_*, gpuwatch_placement_*,
// gpuwatch_fairshare_*) then lie in the store beside the agents' for the
// dashboards and the rules (GpuwatchDrainBudgetExhausted reads
// gpuwatch_drain_budget_exhausted), stamped with the simulated clock.
const selfScrapeEvery = 15 * time.Second

// selfScrapeJob is the job label of the server's own series, as a scrape
// configuration for the server would name it; instance is the server's address.
const selfScrapeJob = "gpuwatch-server"

// selfScrape records the server's /metrics at simulated time at, when
// selfScrapeEvery has passed since the last time.
func (ds *demoServer) selfScrape(ctx context.Context, at time.Time) error {
	if !ds.scraped.IsZero() && at.Sub(ds.scraped) < selfScrapeEvery {
		return nil
	}
	app := ds.srv.Appender()
	if app == nil {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ds.url+"/metrics", nil)
	if err != nil {
		return err
	}
	format := expfmt.NewFormat(expfmt.TypeTextPlain)
	req.Header.Set("Accept", string(format))
	resp, err := ds.client.Do(req)
	if err != nil {
		return fmt.Errorf("the demo's gpuwatch server: GET /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return fmt.Errorf("the demo's gpuwatch server: GET %s/metrics: %s", ds.url, resp.Status)
	}
	instance := ds.url
	if u, err := url.Parse(ds.url); err == nil {
		instance = u.Host
	}
	dec := &expfmt.SampleDecoder{
		Dec:  expfmt.NewDecoder(resp.Body, expfmt.ResponseFormat(resp.Header)),
		Opts: &expfmt.DecodeOptions{Timestamp: model.TimeFromUnixNano(at.UnixNano())},
	}
	var batch []telemetry.Sample
	for {
		var v model.Vector
		if err := dec.Decode(&v); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("the demo's gpuwatch server: reading /metrics: %w", err)
		}
		for _, s := range v {
			kv := make([]string, 0, 2*len(s.Metric)+4)
			for k, val := range s.Metric {
				if k != model.MetricNameLabel {
					kv = append(kv, string(k), string(val))
				}
			}
			kv = append(kv, "job", selfScrapeJob, "instance", instance)
			batch = append(batch, telemetry.Sample{Name: string(s.Metric[model.MetricNameLabel]),
				Labels: telemetry.NewLabels(kv...), Value: float64(s.Value), Time: at})
		}
	}
	if err := app.Append(ctx, batch); err != nil {
		return fmt.Errorf("the demo's gpuwatch server: storing its own series: %w", err)
	}
	ds.scraped = at
	return nil
}
