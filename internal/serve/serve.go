// Package serve runs gpuwatch's HTTP listeners (the server's and the agent's)
// hardened against hostile and broken clients: header, read, write and idle
// timeouts, a bound on header size, on open connections and on requests in
// flight (load beyond it is shed with 503 and Retry-After), a request-body
// limit (413 when announced too large), and TLS when configured. A slow-loris
// client or a flood of connections then costs a bounded amount and never
// stops other clients.
package serve

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/net/netutil"
)

// Options bound a listener. Zero values take the defaults below.
type Options struct {
	// ReadHeaderTimeout: the request line and headers (slow loris). Default 10 s.
	ReadHeaderTimeout time.Duration
	// ReadTimeout: the whole request, body included. Default 2 min.
	ReadTimeout time.Duration
	// WriteTimeout: from the end of the headers to the end of the answer.
	// Default 5 min (a range query over a long window, a 30 s CPU profile).
	WriteTimeout time.Duration
	// IdleTimeout: a kept-alive connection waiting for its next request. Default 2 min.
	IdleTimeout time.Duration
	// MaxHeaderBytes: default 64 KiB.
	MaxHeaderBytes int
	// MaxConns bounds open connections; past it new ones wait in the kernel's
	// backlog until one closes. Default 4096.
	MaxConns int
	// MaxInFlight bounds requests being served at once; past it a request
	// waits up to QueueWait, then gets 503. Default 256.
	MaxInFlight int
	// QueueWait, default 1 s.
	QueueWait time.Duration
	// MaxBodyBytes returns the largest request body accepted for r (0: no
	// limit here: the handler has its own). Nil: 8 MiB for every request.
	MaxBodyBytes func(r *http.Request) int64
	// TLS, when set, serves HTTPS.
	TLS *tls.Config
	// Name labels the listener's metrics ("server", "agent").
	Name string
	// Registerer gets gpuwatch_http_* metrics; nil registers nothing.
	Registerer prometheus.Registerer
}

// DefaultMaxBody is the request-body limit where Options.MaxBodyBytes is nil.
const DefaultMaxBody = 8 << 20

func (o *Options) defaults() {
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.ReadHeaderTimeout, 10*time.Second)
	set(&o.ReadTimeout, 2*time.Minute)
	set(&o.WriteTimeout, 5*time.Minute)
	set(&o.IdleTimeout, 2*time.Minute)
	set(&o.QueueWait, time.Second)
	if o.MaxHeaderBytes <= 0 {
		o.MaxHeaderBytes = 64 << 10
	}
	if o.MaxConns <= 0 {
		o.MaxConns = 4096
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 256
	}
	if o.MaxBodyBytes == nil {
		o.MaxBodyBytes = func(*http.Request) int64 { return DefaultMaxBody }
	}
	if o.Name == "" {
		o.Name = "http"
	}
}

// Server is one hardened listener.
type Server struct {
	opts Options
	hs   *http.Server
	sem  chan struct{}
	shed *prometheus.CounterVec
}

// New wraps h in the limits.
func New(h http.Handler, opts Options) *Server {
	opts.defaults()
	s := &Server{opts: opts, sem: make(chan struct{}, opts.MaxInFlight)}
	s.shed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name:        "gpuwatch_http_refused_total",
		Help:        "Requests refused by the listener's limits, by reason (overload: 503, body_too_large: 413).",
		ConstLabels: prometheus.Labels{"listener": opts.Name},
	}, []string{"reason"})
	inflight := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name:        "gpuwatch_http_requests_in_flight",
		Help:        "Requests being served now.",
		ConstLabels: prometheus.Labels{"listener": opts.Name},
	}, func() float64 { return float64(len(s.sem)) })
	if opts.Registerer != nil {
		opts.Registerer.MustRegister(s.shed, inflight)
	}
	s.hs = &http.Server{
		Handler:           s.limit(h),
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    opts.MaxHeaderBytes,
		TLSConfig:         opts.TLS,
	}
	return s
}

// HTTP is the underlying http.Server (for Shutdown).
func (s *Server) HTTP() *http.Server { return s.hs }

// Scheme is "https" with TLS, else "http".
func (s *Server) Scheme() string {
	if s.opts.TLS != nil {
		return "https"
	}
	return "http"
}

// Serve accepts connections on ln until Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	ln = netutil.LimitListener(ln, s.opts.MaxConns)
	if s.opts.TLS != nil {
		return s.hs.ServeTLS(ln, "", "")
	}
	return s.hs.Serve(ln)
}

// Shutdown stops accepting and waits for the requests in flight.
func (s *Server) Shutdown(ctx context.Context) error { return s.hs.Shutdown(ctx) }

func (s *Server) limit(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if max := s.opts.MaxBodyBytes(r); max > 0 {
			if r.ContentLength > max {
				s.shed.WithLabelValues("body_too_large").Inc()
				http.Error(w, fmt.Sprintf("%s %s: request body of %d bytes is over this endpoint's limit of %d bytes", r.Method, r.URL.Path, r.ContentLength, max), http.StatusRequestEntityTooLarge)
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, max)
		}
		select {
		case s.sem <- struct{}{}:
		default:
			t := time.NewTimer(s.opts.QueueWait)
			select {
			case s.sem <- struct{}{}:
				t.Stop()
			case <-t.C:
				s.shed.WithLabelValues("overload").Inc()
				w.Header().Set("Retry-After", strconv.Itoa(1))
				http.Error(w, "overloaded: too many requests in flight; retry shortly", http.StatusServiceUnavailable)
				return
			case <-r.Context().Done():
				return
			}
		}
		defer func() { <-s.sem }()
		h.ServeHTTP(w, r)
	})
}

// IsBodyTooLarge says whether err came from reading a body past its limit.
func IsBodyTooLarge(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}
