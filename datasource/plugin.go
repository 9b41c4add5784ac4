package datasource

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/gpuwatch/gpuwatch/analyzer/faults"
	"github.com/gpuwatch/gpuwatch/analyzer/jobstats"
	"github.com/gpuwatch/gpuwatch/analyzer/report"
	"github.com/gpuwatch/gpuwatch/analyzer/stragglers"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/scheduler/fairshare"
	"github.com/gpuwatch/gpuwatch/scheduler/framework"
)

// Datasource is one configured gpuwatch data source: Grafana keeps one per
// data source and its settings, and calls its handlers concurrently.
type Datasource struct {
	settings Settings
	client   *client
	// now is the clock the analyzer's parsers check windows against.
	now func() time.Time
}

var (
	_ backend.QueryDataHandler      = (*Datasource)(nil)
	_ backend.CheckHealthHandler    = (*Datasource)(nil)
	_ instancemgmt.InstanceDisposer = (*Datasource)(nil)
)

// NewDatasource is the plugin's instance factory (datasource.Manage): it
// reads the data source's settings. Settings that cannot work (no URL, a CA
// that is no certificate) are refused here, and Grafana shows the error on
// every query and health check until they are fixed.
func NewDatasource(_ context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	set, err := ParseSettings(s)
	if err != nil {
		return nil, err
	}
	return New(set)
}

// New is a data source for settings.
func New(s Settings) (*Datasource, error) {
	hc, err := s.httpClient()
	if err != nil {
		return nil, err
	}
	return &Datasource{settings: s, client: &client{base: s.URL.String(), token: s.Token, http: hc}, now: time.Now}, nil
}

// Dispose closes the idle connections of a data source whose settings changed.
func (d *Datasource) Dispose() { d.client.http.CloseIdleConnections() }

// maxConcurrent bounds the queries of one request asked of the server at once.
const maxConcurrent = 4

// QueryData answers each query on its own, up to maxConcurrent at a time: a
// query that fails is that query's error response, and the others still
// answer.
func (d *Datasource) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, maxConcurrent)
	for _, q := range req.Queries {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			r := d.query(ctx, q)
			mu.Lock()
			resp.Responses[q.RefID] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return resp, nil
}

func (d *Datasource) query(ctx context.Context, dq backend.DataQuery) backend.DataResponse {
	q, err := ParseQuery(dq.JSON, dq.QueryType)
	if err != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	frames, err := d.Query(ctx, q, dq.TimeRange.From, dq.TimeRange.To)
	if err != nil {
		var ce *callError
		if errors.As(err, &ce) {
			return backend.ErrDataResponseWithSource(ce.status, ce.source, ce.msg)
		}
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	for _, f := range frames {
		f.RefID = dq.RefID
	}
	return backend.DataResponse{Frames: frames}
}

// Query answers one parsed query over [from, to] with its frames.
func (d *Datasource) Query(ctx context.Context, q Query, from, to time.Time) (data.Frames, error) {
	path, err := RequestPath(q, from, to)
	if err != nil {
		return nil, err
	}
	switch q.QueryType {
	case TypeReport:
		var r report.Report
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		return data.Frames{reportFrame(&r)}, nil
	case TypeJobStats:
		var r jobstats.Result
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		return jobFrames(&r), nil
	case TypeFaults:
		var r faults.Report
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		return data.Frames{faultsFrame(&r, q.Faults)}, nil
	case TypeStragglers:
		var r stragglers.Report
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		return data.Frames{stragglersFrame(&r)}, nil
	case TypeExplain:
		var r framework.Decision
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		return explainFrames(&r), nil
	case TypeDrains:
		var r struct {
			Audit []drain.AuditRecord `json:"audit"`
		}
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		return data.Frames{drainsFrame(r.Audit, from, to)}, nil
	case TypeFairShare:
		var r struct {
			Standing *fairshare.Standing `json:"standing"`
			Error    string              `json:"error"`
		}
		if err := d.client.get(ctx, path, &r); err != nil {
			return nil, err
		}
		if r.Standing == nil {
			return nil, &callError{backend.StatusNotFound, backend.ErrorSourceDownstream, "the gpuwatch server has no fair-share standing yet: " + r.Error}
		}
		return data.Frames{fairShareFrame(r.Standing, r.Error)}, nil
	}
	return nil, fmt.Errorf("unknown query type %q", q.QueryType)
}

// CheckHealth answers Grafana's "Save & test": does the server answer
// (GET /healthz, which needs no token), and does it accept the data source's
// token for a read (a PromQL query of the server's store, which also says
// whether the store answers).
func (d *Datasource) CheckHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	fail := func(msg string) *backend.CheckHealthResult {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: msg}
	}
	unauth := &client{base: d.client.base, http: d.client.http}
	if _, err := unauth.getRaw(ctx, "/healthz"); err != nil {
		return fail(err.Error()), nil
	}
	var q struct {
		Status string `json:"status"`
	}
	if err := d.client.get(ctx, "/api/v1/query?"+url.Values{"query": {"vector(1)"}}.Encode(), &q); err != nil {
		var ce *callError
		if errors.As(err, &ce) && (ce.status == backend.StatusUnauthorized || ce.status == backend.StatusForbidden) {
			return fail(ce.msg), nil
		}
		return fail(fmt.Sprintf("the gpuwatch server at %s answers, but reading from it failed: %v", d.client.base, err)), nil
	}
	msg := fmt.Sprintf("the gpuwatch server at %s answers and ", d.client.base)
	if d.settings.Token != "" {
		msg += "accepts the data source's token"
	} else {
		msg += "takes reads without a token"
	}
	return &backend.CheckHealthResult{Status: backend.HealthStatusOk, Message: msg}, nil
}
