package main

import (
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// sink is a remote-write 1.0 endpoint on loopback that decodes and counts what
// the agent ships and keeps nothing, so the agent runs with its shipper on, as in
// production, without a store's cost on the measured machine.
type sink struct {
	url string
	srv *http.Server

	mu sync.Mutex
	st sinkStats
}

type sinkStats struct {
	requests, samples, bytes, errors int
}

func startSink() (*sink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &sink{url: "http://" + ln.Addr().String() + "/api/v1/write"}
	s.srv = &http.Server{Handler: http.HandlerFunc(s.write)}
	go s.srv.Serve(ln)
	return s, nil
}

func (s *sink) write(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	n := 0
	if err == nil {
		var raw []byte
		if raw, err = snappy.Decode(nil, body); err == nil {
			var req prompb.WriteRequest
			if err = req.Unmarshal(raw); err == nil {
				for _, ts := range req.Timeseries {
					n += len(ts.Samples)
				}
			}
		}
	}
	s.mu.Lock()
	s.st.requests++
	s.st.bytes += len(body)
	s.st.samples += n
	if err != nil {
		s.st.errors++
	}
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *sink) stats() sinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.st
}

func (s *sink) close() { s.srv.Close() }
