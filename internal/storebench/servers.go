package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/test/realstore"
)

// benchTB lets test/realstore's helpers, written for tests, start the real
// servers from this program: Fatal and Skip panic with a benchFailure that main
// reports, Cleanup and TempDir are honoured by close.
type benchTB struct {
	testing.TB // nil: only the methods below are called
	cleanups   []func()
	dirs       []string
}

type benchFailure string

func (b *benchTB) Helper()                      {}
func (b *benchTB) Fatal(args ...any)            { panic(benchFailure(fmt.Sprint(args...))) }
func (b *benchTB) Fatalf(f string, args ...any) { panic(benchFailure(fmt.Sprintf(f, args...))) }
func (b *benchTB) Skip(args ...any)             { panic(benchFailure(fmt.Sprint(args...))) }
func (b *benchTB) Cleanup(f func())             { b.cleanups = append(b.cleanups, f) }
func (b *benchTB) Logf(f string, args ...any)   { fmt.Fprintf(os.Stderr, f+"\n", args...) }

func (b *benchTB) TempDir() string {
	d, err := os.MkdirTemp("", "gpuwatch-storebench-")
	if err != nil {
		panic(benchFailure(err.Error()))
	}
	b.dirs = append(b.dirs, d)
	return d
}

func (b *benchTB) close() {
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	for _, d := range b.dirs {
		os.RemoveAll(d)
	}
	b.cleanups, b.dirs = nil, nil
}

// target is one store receiving remote write: a real process on loopback.
type target struct {
	name     string
	url      string // base URL, where /api/v1/query is
	writeURL string
	pid      int
	dataDir  string
	flush    func() // make received samples queryable (VictoriaMetrics)
	stop     func()
}

// startTarget starts the store kind: "gpuwatch" (the built binary's `server`,
// embedded TSDB), "prometheus" or "victoriametrics" (Debian's, through
// test/realstore, on loopback).
func startTarget(kind, bin string) (*target, error) {
	switch kind {
	case "gpuwatch":
		return startGpuwatch(bin)
	case "prometheus", "victoriametrics":
		tb := &benchTB{}
		var s *realstore.Server
		err := func() (err error) {
			defer func() {
				if r := recover(); r != nil {
					f, ok := r.(benchFailure)
					if !ok {
						panic(r)
					}
					err = errors.New(string(f))
				}
			}()
			if kind == "prometheus" {
				s = realstore.StartPrometheus(tb)
			} else {
				s = realstore.StartVictoriaMetrics(tb)
			}
			return nil
		}()
		if err != nil {
			tb.close()
			return nil, err
		}
		bin := realstore.Prometheus
		if kind == "victoriametrics" {
			bin = realstore.VictoriaMetrics
		}
		pid, err := childPid(bin)
		if err != nil {
			tb.close()
			return nil, err
		}
		return &target{name: kind, url: s.URL(), writeURL: s.RemoteWriteURL(), pid: pid, dataDir: s.DataDir(),
			flush: func() {
				defer func() { _ = recover() }()
				s.Flush()
			},
			stop: tb.close}, nil
	}
	return nil, fmt.Errorf("store %q: want gpuwatch, prometheus or victoriametrics", kind)
}

// childPid finds this process's child whose command name is comm.
func childPid(comm string) (int, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	me := os.Getpid()
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:]) // f[1] is the parent pid
		if len(f) > 1 && f[1] == strconv.Itoa(me) && strings.HasPrefix(comm, s[open+1:close]) {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no child process named %s", comm)
}

// startGpuwatch runs `BIN server` on a free loopback port with a fresh data
// directory and waits for /healthz.
func startGpuwatch(bin string) (*target, error) {
	dir, err := os.MkdirTemp("", "gpuwatch-storebench-server-")
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, "server", "--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--log.level", "warn")
	cmd.Stdout = io.Discard
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive storebench
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("start %s server: %w (run make build first)", bin, err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(dir)
	}
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-done:
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%s server exited during start-up", bin)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("%s server on %s not ready after 30 s: %v", bin, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return &target{name: "gpuwatch", url: url, writeURL: url + "/api/v1/write", pid: cmd.Process.Pid,
		dataDir: filepath.Join(dir, "data"), flush: func() {}, stop: stop}, nil
}

// loadavg is the first field of /proc/loadavg, the machine's 1-minute load.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// machineBusy is the CPU time all processes other than ours used per second of
// wall time over the interval, from /proc/stat minus this process tree's part: a
// measure of what else (a CI run) shared the machine.
type cpuSnap struct{ busy, total uint64 }

func machineCPU() cpuSnap {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuSnap{}
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var s cpuSnap
	for i, x := range f[1:] {
		n, _ := strconv.ParseUint(x, 10, 64)
		s.total += n
		if i != 3 && i != 4 { // idle, iowait
			s.busy += n
		}
	}
	return s
}
