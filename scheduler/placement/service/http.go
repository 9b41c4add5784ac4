package service

import (
	"github.com/gpuwatch/gpuwatch/internal/httpjson"

	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpuwatch/gpuwatch/scheduler/framework"
	"github.com/gpuwatch/gpuwatch/scheduler/placement"
	"github.com/gpuwatch/gpuwatch/scheduler/snapshot"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// maxBody bounds a request body (a request may list thousands of candidate nodes).
const maxBody = 4 << 20

// PlaceRequest is the body of POST /place: a framework.Request (gpus, nodes,
// gpus_per_node, milli, model, min_memory_mib, required_tier, preferred_tier,
// exclusive, near, candidates, require_fresh, explain, lease, job_id) and
// whether to hold nothing.
type PlaceRequest struct {
	framework.Request
	// DryRun decides without reserving.
	DryRun bool `json:"dry_run,omitempty"`
}

// PlaceResponse is the answer of POST /place.
type PlaceResponse struct {
	ID      string            `json:"id"`
	Outcome framework.Outcome `json:"outcome"`
	DryRun  bool              `json:"dry_run"`
	Reason  string            `json:"reason,omitempty"`
	// Assignments are the chosen GPUs, one entry per node in gang rank order: NVML
	// indexes, UUIDs and rails.
	Assignments []framework.Assignment `json:"assignments,omitempty"`
	Quality     *framework.Quality     `json:"quality,omitempty"`
	// Tier and Domain are the smallest topology domain holding the gang.
	Tier        telemetry.Tier   `json:"tier,omitzero"`
	Domain      string           `json:"domain,omitempty"`
	Reservation *framework.Lease `json:"reservation,omitempty"`
	Notes       []string         `json:"notes,omitempty"`
	Evaluated   int              `json:"evaluated"`
	Feasible    int              `json:"feasible"`
	SnapshotAt  time.Time        `json:"snapshot_at"`
}

// ReleaseRequest is the body of POST /release.
type ReleaseRequest struct {
	ID string `json:"id"`
}

// SnapshotSummary is the answer of GET /placement/snapshot.
type SnapshotSummary struct {
	// BuiltAt is the time the snapshot was built for; AgeSeconds how long ago.
	BuiltAt    time.Time `json:"built_at"`
	AgeSeconds float64   `json:"age_seconds"`
	// Fresh is false when the snapshot is older than the service's MaxAge (the
	// extender then fails open) or none was built; FreshError says which.
	Fresh      bool               `json:"fresh"`
	FreshError string             `json:"fresh_error,omitempty"`
	Staleness  framework.Duration `json:"staleness_bound"`
	Nodes      int                `json:"nodes"`
	GPUs       int                `json:"gpus"`
	// SchedulableGPUs have a schedulable last known health and no exclusion;
	// FreeGPUs is their free milli-GPU over 1000, before reservations.
	SchedulableGPUs int     `json:"schedulable_gpus"`
	FreeGPUs        float64 `json:"free_gpus"`
	ExcludedNodes   int     `json:"excluded_nodes"`
	ExcludedGPUs    int     `json:"excluded_gpus"`
	Allocations     int     `json:"allocations"`
	Reservations    int     `json:"reservations"`
	// Stale counts GPUs whose value is stale (older than the bound, or never
	// observed), by value.
	Stale StaleCounts `json:"stale"`
	// StragglerGPUs counts the GPUs named stragglers within the straggler
	// window (StragglerWindow), which the straggler scorer avoids.
	StragglerGPUs   int                `json:"straggler_gpus"`
	StragglerWindow framework.Duration `json:"straggler_window"`
	// Domains counts the topology domains by tier (nvlink_domain, leaf, spine,
	// block); Models the GPUs by model.
	Domains map[string]int `json:"domains"`
	Models  map[string]int `json:"models"`
	// Warnings are the snapshot builder's; Skipped what the feeder left out.
	Warnings     []string           `json:"warnings,omitempty"`
	Skipped      []string           `json:"skipped,omitempty"`
	LastError    string             `json:"last_error,omitempty"`
	FeedDuration framework.Duration `json:"feed_duration"`
	Queries      int                `json:"queries"`
	// NodeList is every node, with ?nodes=true.
	NodeList []NodeSummary `json:"node_list,omitempty"`
}

// StaleCounts counts stale values.
type StaleCounts struct {
	Health      int `json:"health"`
	Utilization int `json:"utilization"`
	Headroom    int `json:"headroom"`
}

// NodeSummary is one node of the snapshot summary.
type NodeSummary struct {
	Name            string                 `json:"name"`
	Location        telemetry.NodeLocation `json:"location"`
	GPUs            int                    `json:"gpus"`
	Model           string                 `json:"model,omitempty"`
	SchedulableGPUs int                    `json:"schedulable_gpus"`
	FreeGPUs        float64                `json:"free_gpus"`
	StaleHealth     int                    `json:"stale_health"`
	StragglerGPUs   int                    `json:"straggler_gpus,omitempty"`
	Excluded        bool                   `json:"excluded,omitempty"`
	ExclusionReason string                 `json:"exclusion_reason,omitempty"`
}

// Register mounts the API under prefix ("/api/gpuwatch/v1"):
//
//	POST {prefix}/place                   PlaceRequest → PlaceResponse
//	POST {prefix}/release                 ReleaseRequest
//	GET  {prefix}/explain/{id}            the decision: text with Accept: text/plain, JSON otherwise
//	GET  {prefix}/placement/snapshot      SnapshotSummary (?nodes=true lists the nodes)
//	GET  {prefix}/placement/reservations  the live reservations
//	POST {prefix}/extender/filter         kube-scheduler extender (ExtenderArgs → ExtenderFilterResult)
//	POST {prefix}/extender/prioritize     kube-scheduler extender (ExtenderArgs → HostPriorityList)
func (s *Service) Register(mux *http.ServeMux, prefix string) {
	prefix = strings.TrimRight(prefix, "/")
	handle := func(pattern, endpoint string, h http.HandlerFunc) {
		mux.Handle(pattern, s.counted(endpoint, h))
	}
	handle("POST "+prefix+"/place", "place", s.handlePlace)
	handle("POST "+prefix+"/release", "release", s.handleRelease)
	handle("GET "+prefix+"/explain/{id}", "explain", s.handleExplain)
	handle("GET "+prefix+"/placement/snapshot", "snapshot", s.handleSnapshot)
	handle("GET "+prefix+"/placement/reservations", "reservations", s.handleReservations)
	mux.Handle("POST "+prefix+"/extender/filter", s.extender.FilterHandler())
	mux.Handle("POST "+prefix+"/extender/prioritize", s.extender.PrioritizeHandler())
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	w.code = code
	w.ResponseWriter.WriteHeader(code)
}

func (s *Service) counted(endpoint string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statusWriter{ResponseWriter: w, code: http.StatusOK}
		h(sw, r)
		s.metrics.requests.WithLabelValues(endpoint, strconv.Itoa(sw.code)).Inc()
	})
}

func readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fmt.Errorf("body larger than %d bytes", maxBody)
		}
		return nil, fmt.Errorf("cannot read the body: %w", err)
	}
	return data, nil
}

func (s *Service) handlePlace(w http.ResponseWriter, r *http.Request) {
	data, err := readBody(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "place: "+err.Error())
		return
	}
	var req PlaceRequest
	if err := httpjson.DecodeStrict(data, &req); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "place: "+err.Error())
		return
	}
	s.mu.Lock()
	fed := s.fed
	s.mu.Unlock()
	if !fed {
		msg := "place: no placement snapshot yet: the service has not read the fleet from the store"
		if err := s.Fresh(); err != nil {
			msg += " (" + err.Error() + ")"
		}
		httpjson.Error(w, http.StatusServiceUnavailable, msg)
		return
	}
	var d *framework.Decision
	if req.DryRun {
		d, err = s.engine.DryRun(r.Context(), req.Request)
	} else {
		d, err = s.engine.Reserve(r.Context(), req.Request)
	}
	if err != nil {
		if d != nil && d.Outcome == framework.OutcomeInvalid {
			httpjson.Write(w, http.StatusBadRequest, map[string]string{"error": "place: " + d.Reason, "id": d.ID})
			return
		}
		httpjson.Error(w, http.StatusInternalServerError, "place: "+err.Error())
		return
	}
	resp := PlaceResponse{ID: d.ID, Outcome: d.Outcome, DryRun: d.DryRun, Reason: d.Reason, Assignments: d.Assignments,
		Quality: d.Quality, Tier: d.Tier, Domain: d.Domain, Reservation: d.Reservation, Notes: d.Notes,
		Evaluated: d.Evaluated, Feasible: d.Feasible, SnapshotAt: d.SnapshotAt}
	if err := s.Fresh(); err != nil {
		resp.Notes = append(resp.Notes, err.Error())
	}
	httpjson.Write(w, http.StatusOK, resp)
}

func (s *Service) handleRelease(w http.ResponseWriter, r *http.Request) {
	data, err := readBody(w, r)
	if err != nil {
		httpjson.Error(w, http.StatusBadRequest, "release: "+err.Error())
		return
	}
	var req ReleaseRequest
	if err := httpjson.DecodeStrict(data, &req); err != nil {
		httpjson.Error(w, http.StatusBadRequest, "release: "+err.Error())
		return
	}
	if strings.TrimSpace(req.ID) == "" {
		httpjson.Error(w, http.StatusBadRequest, `release: field "id" is empty: give the id POST /place answered`)
		return
	}
	if err := s.engine.Release(req.ID); err != nil {
		if errors.Is(err, placement.ErrUnknownReservation) {
			httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("release: no reservation %q: never made, a dry run, already released, or expired", req.ID))
			return
		}
		httpjson.Error(w, http.StatusInternalServerError, "release: "+err.Error())
		return
	}
	httpjson.Write(w, http.StatusOK, map[string]any{"id": req.ID, "released": true})
}

// wantsText reports whether the Accept header prefers text/plain over JSON.
func wantsText(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "text/plain":
			return true
		case "application/json":
			return false
		}
	}
	return false
}

func (s *Service) handleExplain(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	d, ok := s.engine.Decision(id)
	if !ok {
		httpjson.Error(w, http.StatusNotFound, fmt.Sprintf("explain: no decision %q: unknown, or older than the decisions the engine keeps", id))
		return
	}
	if wantsText(r.Header.Get("Accept")) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, framework.Explain(d))
		return
	}
	b, err := framework.ExplainJSON(d)
	if err != nil {
		httpjson.Error(w, http.StatusInternalServerError, "explain: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

func (s *Service) handleReservations(w http.ResponseWriter, r *http.Request) {
	httpjson.Write(w, http.StatusOK, map[string]any{"reservations": s.engine.Reservations()})
}

func (s *Service) handleSnapshot(w http.ResponseWriter, r *http.Request) {
	withNodes := false
	if v := r.URL.Query().Get("nodes"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			httpjson.Error(w, http.StatusBadRequest, fmt.Sprintf("snapshot: query parameter nodes=%q: want true or false", v))
			return
		}
		withNodes = b
	}
	httpjson.Write(w, http.StatusOK, s.Summary(r.Context(), withNodes))
}

// Summary describes the engine's current snapshot and the feeder's last read.
func (s *Service) Summary(_ context.Context, withNodes bool) SnapshotSummary {
	snap := s.engine.Snapshot()
	s.mu.Lock()
	sum := SnapshotSummary{Staleness: framework.Duration(s.opts.Staleness), FeedDuration: framework.Duration(s.took),
		Queries: s.stats.Queries, Skipped: s.stats.Skipped}
	if s.lastErr != nil {
		sum.LastError = s.lastErr.Error()
	}
	if s.allocsErr != nil {
		sum.Warnings = append(sum.Warnings, "scheduler allocations not read: "+s.allocsErr.Error())
	}
	fed := s.fed
	s.mu.Unlock()
	if err := s.Fresh(); err != nil {
		sum.FreshError = err.Error()
	} else {
		sum.Fresh = true
	}
	if !fed {
		return sum
	}
	sum.BuiltAt = snap.Now()
	sum.StragglerWindow = framework.Duration(snap.StragglerWindow())
	sum.AgeSeconds = s.opts.Now().Sub(snap.Now()).Seconds()
	sum.Nodes, sum.GPUs = snap.Len(), snap.GPUCount()
	sum.Allocations = len(snap.Allocations())
	sum.Reservations = len(s.engine.Reservations())
	sum.Warnings = append(sum.Warnings, snap.Warnings()...)
	sum.Domains = map[string]int{}
	for _, t := range []telemetry.Tier{telemetry.TierNVLinkDomain, telemetry.TierLeaf, telemetry.TierSpine, telemetry.TierBlock} {
		sum.Domains[t.String()] = len(snap.Domains(t))
	}
	sum.Models = map[string]int{}
	var free int64
	for i := range snap.Len() {
		n := snap.Node(i)
		ns := NodeSummary{Name: n.Name, Location: n.Location, GPUs: len(n.GPUs), Excluded: n.Excluded, ExclusionReason: n.ExclusionReason}
		if n.Excluded {
			sum.ExcludedNodes++
		}
		var nodeFree int64
		for j := range n.GPUs {
			g := &n.GPUs[j]
			sum.Models[g.Model]++
			if g.Excluded {
				sum.ExcludedGPUs++
			}
			if g.Schedulable() {
				sum.SchedulableGPUs++
				ns.SchedulableGPUs++
				nodeFree += int64(g.FreeMilli)
			}
			if g.Health.Stale {
				sum.Stale.Health++
				ns.StaleHealth++
			}
			if g.Utilization.Stale {
				sum.Stale.Utilization++
			}
			if g.ThermalHeadroom.Stale {
				sum.Stale.Headroom++
			}
			if g.Straggler.Named() {
				sum.StragglerGPUs++
				ns.StragglerGPUs++
			}
		}
		free += nodeFree
		if withNodes {
			ns.FreeGPUs = float64(nodeFree) / snapshot.FullMilli
			ns.Model = n.Model()
			sum.NodeList = append(sum.NodeList, ns)
		}
	}
	sum.FreeGPUs = float64(free) / snapshot.FullMilli
	return sum
}
