package server

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/gpuwatch/gpuwatch/internal/auth"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
	"github.com/gpuwatch/gpuwatch/telemetry/store"
	"github.com/gpuwatch/gpuwatch/telemetry/store/ingest"
)

// The Prometheus API's read endpoints that also answer POST (a long query in
// a form body); every other POST under /api/v1/ writes or administers.
var queryPOST = map[string]bool{
	"/api/v1/query": true, "/api/v1/query_range": true, "/api/v1/series": true, "/api/v1/labels": true,
	"/api/v1/query_exemplars": true, "/api/v1/format_query": true, "/api/v1/parse_query": true,
}

// agentWrites are the ingest paths, the embedded store's and (through the
// proxy) VictoriaMetrics's and Prometheus's.
var agentWrites = map[string]bool{
	ingest.WritePath: true, ingest.ImportPrometheusPath: true, "/api/v1/import": true, "/api/v1/import/csv": true,
	"/api/v1/import/native": true, "/api/v1/otlp/v1/metrics": true,
}

// RequiredRole is the server's access table: which role each request needs.
// It is the only place that decides; anything not listed needs admin unless
// it only reads (GET, HEAD).
//
//	none     GET /healthz
//	read     GET anything else (query API, UI, gpuwatch's GET endpoints such as
//	         the utilization report /api/gpuwatch/v1/report, /metrics);
//	         POST to the query API's read endpoints; the kube-scheduler extender
//	agent    remote write and import; POST /api/gpuwatch/v1/health
//	operate  POST /api/gpuwatch/v1/drain, resume, place, release
//	admin    POST /api/gpuwatch/v1/budget/reset, the store's admin API, anything else
func RequiredRole(r *http.Request) auth.Role {
	p := path.Clean("/" + r.URL.Path)
	get := r.Method == http.MethodGet || r.Method == http.MethodHead
	switch {
	case p == "/healthz" && get:
		return auth.RoleNone
	case strings.HasPrefix(p, "/api/v1/admin/"):
		return auth.RoleAdmin
	case get:
		return auth.RoleRead
	case r.Method != http.MethodPost:
		return auth.RoleAdmin
	case queryPOST[p]:
		return auth.RoleRead
	case agentWrites[p], p == APIPrefix+"/health":
		return auth.RoleAgent
	case p == APIPrefix+"/extender/filter", p == APIPrefix+"/extender/prioritize":
		return auth.RoleRead
	case p == APIPrefix+"/drain", p == APIPrefix+"/resume", p == APIPrefix+"/place", p == APIPrefix+"/release":
		return auth.RoleOperate
	default:
		return auth.RoleAdmin
	}
}

// bodyLimit is the request-body bound per endpoint: the ingest endpoints have
// their own (--limits.request-bytes), health reports 4 MiB, the extender
// (a whole node list when the scheduler does not cache nodes) 64 MiB,
// everything else 1 MiB.
func (s *Server) bodyLimit(r *http.Request) int64 {
	p := path.Clean("/" + r.URL.Path)
	switch {
	case agentWrites[p]:
		return s.opts.Limits.MaxBodyBytes
	case p == APIPrefix+"/health":
		return drain.MaxReportBytes
	case strings.HasPrefix(p, APIPrefix+"/extender/"):
		return 64 << 20
	default:
		return 1 << 20
	}
}

// nodeBoundAppender refuses, as a whole, a batch carrying a series of a node
// the caller's token is not bound to. Every series an agent ships carries
// its node; one that names none is refused for a bound token.
type nodeBoundAppender struct{ next store.Appender }

func (a nodeBoundAppender) Append(ctx context.Context, batch []telemetry.Sample) error {
	id := auth.FromContext(ctx)
	if id != nil && len(id.Nodes) > 0 {
		for i := range batch {
			if err := checkNodeLabels(id, batch[i].Name, batch[i].Labels); err != nil {
				return err
			}
		}
	}
	return a.next.Append(ctx, batch)
}

// nodeLabelKeys are the labels that name a series' node: gpuwatch's and
// dcgm-exporter's old and new spellings.
var nodeLabelKeys = []string{telemetry.LabelNode, "Hostname", "hostname"}

func checkNodeLabels(id *auth.Identity, name string, ls telemetry.Labels) error {
	named := false
	for _, k := range nodeLabelKeys {
		v := ls.Get(k)
		if v == "" {
			continue
		}
		named = true
		if !id.AllowsNode(v) {
			return fmt.Errorf("%w: token %s is bound to nodes %s and may not write series of node %q (%s)",
				store.ErrForbidden, id.Name, strings.Join(id.Nodes, ","), v, name)
		}
	}
	if !named {
		return fmt.Errorf("%w: token %s is bound to nodes %s; series %s names no node (label %q)",
			store.ErrForbidden, id.Name, strings.Join(id.Nodes, ","), name, telemetry.LabelNode)
	}
	return nil
}

// refuseBoundProxyWrites guards the proxy to an external store: a token bound
// to nodes cannot have what it writes checked there, so it is refused with a
// way out; unbound agent tokens pass.
func refuseBoundProxyWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if id := auth.FromContext(r.Context()); id != nil && len(id.Nodes) > 0 && agentWrites[path.Clean("/"+r.URL.Path)] {
			auth.Forbidden(w, fmt.Sprintf("token %s is bound to nodes; with an external store (--store.url) the server cannot check the series it writes: "+
				"give the agent a token without nodes, or remote-write to the store directly", id.Name))
			return
		}
		next.ServeHTTP(w, r)
	})
}
