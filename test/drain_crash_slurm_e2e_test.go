package test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gpuwatch/gpuwatch/collector/simhw"
	"github.com/gpuwatch/gpuwatch/internal/server"
	"github.com/gpuwatch/gpuwatch/scheduler/adapters/slurm"
	"github.com/gpuwatch/gpuwatch/scheduler/drain"
	"github.com/gpuwatch/gpuwatch/telemetry"
)

// serverChildEnv makes TestDrainServerChild run a gpuwatch server (the same
// internal/server that `gpuwatch server` runs, with the Slurm actuator) in
// this process, described by the JSON in the variable.
const serverChildEnv = "GPUWATCH_TEST_SERVER_CHILD"

type serverChildSpec struct {
	DataDir  string
	Scontrol string
	Env      []string
}

// TestDrainServerKilledMidDrainOnRealSlurm: the gpuwatch server, a process of
// its own, is SIGKILLed while its reboot of gpu02 (Xid 79) is in flight —
// once before scontrol reached slurmctld, once after slurmctld took it but
// before the call returned — and started again on the same data directory.
// scontrol is a wrapper that logs every state-changing call slurmctld took and
// can block before or after it. After the restart: slurmctld took exactly one
// reboot of gpu02 (the second server reads the node's state and, when the
// reboot is there, records it accepted without calling again), gpu02 carries
// gpuwatch's reason, the audit log decodes line by line with one decision and
// one accepted reboot, and the budget counts one drain.
func TestDrainServerKilledMidDrainOnRealSlurm(t *testing.T) {
	c := slurmCluster.Get(t)
	scontrol, err := exec.LookPath("scontrol")
	if err != nil {
		t.Fatal(err)
	}
	for _, when := range []string{"before", "after"} {
		t.Run("killed "+when+" slurmctld took the reboot", func(t *testing.T) {
			c.Reset(t)
			dir := t.TempDir()
			wrapper := writeScontrolWrapper(t, dir, scontrol)
			spec := serverChildSpec{DataDir: filepath.Join(dir, "data"), Scontrol: wrapper, Env: c.Env()}

			var target atomic.Pointer[url.URL]
			proxy := httptest.NewServer(&httputil.ReverseProxy{
				Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(target.Load()) },
				ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
					http.Error(w, "server down", http.StatusBadGateway)
				},
			})
			defer proxy.Close()
			first := startServerChild(t, spec)
			target.Store(first.url)
			lf := newLiveFleet(t, 4, proxy.URL)
			api := func(path string, v any) error {
				resp, err := http.Get(proxy.URL + "/api/gpuwatch/v1" + path)
				if err != nil {
					return err
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					return fmt.Errorf("GET %s: %s", path, resp.Status)
				}
				return json.NewDecoder(resp.Body).Decode(v)
			}
			c.WaitFor(t, 20*time.Second, "every agent reporting", func() bool {
				var nodes struct{ Nodes []drain.NodeStatus }
				return api("/nodes", &nodes) == nil && len(nodes.Nodes) == 4
			})

			os.WriteFile(filepath.Join(dir, "block-"+when), nil, 0o600)
			lf.inject(1, simhw.Fault{GPU: 3, Kind: simhw.FaultXid, Xid: 79})
			c.WaitFor(t, 20*time.Second, "the reboot blocked in scontrol", func() bool {
				_, err := os.Stat(filepath.Join(dir, "reached"))
				return err == nil
			})
			first.kill(t)
			t.Logf("killed the server %s slurmctld took the reboot: gpu02 %s %q", when, c.NodeState(t, "gpu02"), reason(t, c, "gpu02"))

			second := startServerChild(t, spec)
			defer second.kill(t)
			target.Store(second.url)
			c.WaitFor(t, 20*time.Second, "gpu02 drained by the restarted server", func() bool {
				var n drain.NodeStatus
				return api("/nodes/gpu02", &n) == nil && n.State == telemetry.StateDrained && n.Pending == nil
			})
			if r := reason(t, c, "gpu02"); !strings.HasPrefix(r, "gpuwatch: ") {
				t.Errorf("gpu02's reason is %q, want gpuwatch's", r)
			}
			calls, _ := os.ReadFile(filepath.Join(dir, "calls.log"))
			var reboots, drains int
			for line := range strings.Lines(string(calls)) {
				if strings.HasSuffix(strings.TrimSpace(line), " gpu02") && strings.HasPrefix(line, "reboot ") {
					reboots++
				}
				if strings.Contains(line, "NodeName=gpu02") {
					drains++
				}
			}
			if reboots != 1 || drains != 0 {
				t.Errorf("slurmctld took %d reboots and %d updates of gpu02, want 1 and 0:\n%s", reboots, drains, calls)
			}
			recs, bad := readAuditFile(t, filepath.Join(spec.DataDir, "drain", drain.AuditFileName))
			if bad != 0 {
				t.Errorf("%d audit lines do not decode", bad)
			}
			decided := countAudit(recs, "gpu02", "decision", "reboot", drain.OutcomePending)
			accepted := countAudit(recs, "gpu02", "actuation", "reboot", drain.OutcomeAccepted)
			if decided != 1 || accepted != 1 {
				t.Errorf("audit: %d reboot decisions, %d accepted reboots of gpu02, want 1 and 1:\n%s", decided, accepted, dump(recs, "gpu02"))
			}
			for _, r := range recs {
				if r.Node == "gpu02" && r.Event == "actuation" && r.Outcome == drain.OutcomeAccepted {
					t.Logf("accepted after the restart: %q", r.Note)
					if when == "after" && !strings.Contains(r.Note, "not repeated") {
						t.Errorf("the restarted server did not find the reboot in place: %q", r.Note)
					}
				}
			}
			var b drain.BudgetStatus
			if err := api("/budget", &b); err != nil || b.Used != 1 {
				t.Errorf("budget %+v (%v), want 1 used", b, err)
			}
		})
	}
}

// writeScontrolWrapper writes dir/bin/scontrol: it passes every call to the
// real scontrol, appends each state-changing one slurmctld took to
// dir/calls.log, and, when dir/block-before or dir/block-after exists (once),
// touches dir/reached and blocks before or after passing the call on. sinfo,
// squeue and sprio are linked next to it (the Slurm adapter looks for them
// there).
func writeScontrolWrapper(t *testing.T, dir, scontrol string) string {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	os.MkdirAll(bin, 0o755)
	for _, name := range []string{"sinfo", "squeue", "sprio"} {
		if p, err := exec.LookPath(name); err == nil {
			os.Symlink(p, filepath.Join(bin, name))
		}
	}
	script := fmt.Sprintf(`#!/bin/sh
d=%q
case "$1" in
reboot|update)
  if [ -e "$d/block-before" ]; then rm -f "$d/block-before"; touch "$d/reached"; exec sleep 600; fi
  %q "$@" || exit $?
  echo "$*" >> "$d/calls.log"
  if [ -e "$d/block-after" ]; then rm -f "$d/block-after"; touch "$d/reached"; exec sleep 600; fi
  exit 0;;
esac
exec %q "$@"
`, dir, scontrol, scontrol)
	path := filepath.Join(bin, "scontrol")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

type serverChild struct {
	cmd *exec.Cmd
	url *url.URL
}

// startServerChild starts the server in a child process of its own process
// group (so that a kill takes its scontrol along) and waits for its address.
func startServerChild(t *testing.T, spec serverChildSpec) *serverChild {
	t.Helper()
	b, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^TestDrainServerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), serverChildEnv+"="+string(b))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "LISTEN "); ok {
				addr <- a
			}
		}
		close(addr)
	}()
	select {
	case a, ok := <-addr:
		if !ok {
			cmd.Wait()
			t.Fatal("the server child ended before listening")
		}
		return &serverChild{cmd: cmd, url: &url.URL{Scheme: "http", Host: a}}
	case <-time.After(30 * time.Second):
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatal("the server child did not listen within 30s")
	}
	return nil
}

// kill SIGKILLs the server and everything it started (scontrol).
func (s *serverChild) kill(t *testing.T) {
	if s.cmd.ProcessState != nil {
		return
	}
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	s.cmd.Wait()
}

// TestDrainServerChild is the server process of
// TestDrainServerKilledMidDrainOnRealSlurm.
func TestDrainServerChild(t *testing.T) {
	v := os.Getenv(serverChildEnv)
	if v == "" {
		t.Skip("only run by TestDrainServerKilledMidDrainOnRealSlurm")
	}
	var spec serverChildSpec
	if err := json.Unmarshal([]byte(v), &spec); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{DataDir: spec.DataDir, Version: "e2e", Drain: &server.DrainOptions{
		Policy:       testPolicy(0.5),
		Actuator:     slurm.Actuator{Scontrol: slurm.Scontrol{Path: spec.Scontrol, Env: spec.Env, Timeout: 30 * time.Second}},
		PollInterval: 100 * time.Millisecond, VerifyInterval: 2 * time.Second, CallTimeout: 60 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, srv.Handler())
	fmt.Println("LISTEN", ln.Addr())
	srv.Run(context.Background()) // until killed
}

// readAuditFile decodes the audit log line by line, strictly, and returns the
// records and how many lines did not decode.
func readAuditFile(t *testing.T, path string) ([]drain.AuditRecord, int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var recs []drain.AuditRecord
	bad := 0
	for line := range bytes.Lines(data) {
		var r drain.AuditRecord
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil || !bytes.HasSuffix(line, []byte("\n")) {
			bad++
			continue
		}
		if _, err := dec.Token(); err != io.EOF {
			bad++
			continue
		}
		recs = append(recs, r)
	}
	return recs, bad
}
