package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gpuwatch/gpuwatch/internal/auth"
)

// tokens are the soak server's bearer tokens, made as a site makes them with
// `gpuwatch token`: one agent token per node, bound to that node, and one
// read token for the soak's own queries and /metrics scrapes. The server's
// file holds only their hashes.
type tokens struct {
	file    string
	agents  map[string]string // node → secret
	reader  string
	entries int
}

func makeTokens(dir string, nodes []string) (*tokens, error) {
	t := &tokens{file: filepath.Join(dir, "tokens.yaml"), agents: map[string]string{}}
	var b strings.Builder
	b.WriteString("# gpuwatch soak: one agent token per node, bound to it; one read token.\n")
	for _, n := range nodes {
		s, err := auth.NewSecret()
		if err != nil {
			return nil, err
		}
		t.agents[n] = s
		b.WriteString(auth.Entry("agent-"+n, auth.RoleAgent, s, n))
		t.entries++
	}
	s, err := auth.NewSecret()
	if err != nil {
		return nil, err
	}
	t.reader = s
	b.WriteString(auth.Entry("soak-reader", auth.RoleRead, s))
	t.entries++
	data := []byte(b.String())
	// The file the server will read must parse as the server parses it.
	if _, err := auth.ParseTokens(t.file, data); err != nil {
		return nil, err
	}
	if err := os.WriteFile(t.file, data, 0o600); err != nil {
		return nil, fmt.Errorf("cannot write the token file: %w", err)
	}
	return t, nil
}

// server is the `gpuwatch server` process under soak.
type server struct {
	url     string
	pid     int
	dataDir string
	logPath string
	logFrom int64        // the log's size once the server was ready: what follows is the soak's
	client  *http.Client // with the read token
	done    chan struct{}
	cmd     *exec.Cmd
}

// startServer runs `bin server` on a free loopback port: embedded store in
// dataDir, the log actuator, the token file; its log goes to a file beside
// the data. It waits for /healthz.
func startServer(bin, dir string, tok *tokens) (*server, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := l.Addr().String()
	l.Close()
	s := &server{url: "http://" + addr, dataDir: filepath.Join(dir, "data"), logPath: filepath.Join(dir, "server.log"),
		done: make(chan struct{})}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(bin, "server", "--listen", addr, "--data-dir", s.dataDir,
		"--actuator", "log", "--auth.tokens", tok.file, "--log.level", "warn")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the soak
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start %s server: %w (run make build first)", bin, err)
	}
	s.pid = s.cmd.Process.Pid
	go func() { s.cmd.Wait(); logf.Close(); close(s.done) }()
	s.client = &http.Client{Timeout: 2 * time.Minute,
		Transport: &auth.Transport{Base: http.DefaultTransport, Secret: auth.StaticSecret(tok.reader)}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				if st, err := os.Stat(s.logPath); err == nil {
					s.logFrom = st.Size()
				}
				return s, nil
			}
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s server exited during start-up: %s", bin, s.logTail(20))
		default:
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("%s server on %s not ready after 60 s: %v", bin, addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// exited reports whether the server process has ended.
func (s *server) exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

func (s *server) stop() {
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(60 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// logLines returns what the server logged after its start-up banner.
func (s *server) logLines() []string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || int64(len(b)) <= s.logFrom {
		return nil
	}
	b = b[s.logFrom:]
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n")
}

func (s *server) logTail(n int) string {
	l := s.logLines()
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// get GETs a path with the read token and returns the body.
func (s *server) get(ctx context.Context, path string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("GET %s: %s: %.300s", path, resp.Status, body)
	}
	return body, nil
}

// getJSON GETs a path with the read token and decodes its JSON answer into v.
func (s *server) getJSON(ctx context.Context, path string, v any) error {
	body, err := s.get(ctx, path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// apiResult is the part of a Prometheus query API answer the soak reads.
type apiResult struct {
	Status string `json:"status"`
	Error  string `json:"error"`
	Data   struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  []any             `json:"value"`
			Values [][]any           `json:"values"`
		} `json:"result"`
	} `json:"data"`
}

// query runs a PromQL query: instant at end when step is 0, otherwise a range
// from start to end.
func (s *server) query(ctx context.Context, q string, start, end time.Time, step time.Duration) (*apiResult, error) {
	v := url.Values{"query": {q}}
	path := "/api/v1/query?"
	if step > 0 {
		path = "/api/v1/query_range?"
		v.Set("start", unixSeconds(start))
		v.Set("end", unixSeconds(end))
		v.Set("step", strconv.FormatFloat(step.Seconds(), 'f', -1, 64))
	} else {
		v.Set("time", unixSeconds(end))
	}
	body, err := s.get(ctx, path+v.Encode())
	if err != nil {
		return nil, err
	}
	var r apiResult
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("query %q: not JSON: %.200s", q, body)
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", q, r.Error)
	}
	return &r, nil
}

func unixSeconds(t time.Time) string {
	return strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', 3, 64)
}

// sampleValue reads an instant vector sample's value.
func sampleValue(v []any) (float64, error) {
	if len(v) != 2 {
		return 0, fmt.Errorf("sample %v is not [time, value]", v)
	}
	s, _ := v[1].(string)
	return strconv.ParseFloat(s, 64)
}

// scrapeResult is one scrape of the server's /metrics: each series' value by its
// text form name{labels}.
type scrapeResult map[string]float64

func (s *server) scrape(ctx context.Context) (scrapeResult, error) {
	body, err := s.get(ctx, "/metrics")
	if err != nil {
		return nil, err
	}
	m := scrapeResult{}
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// sum adds every series of the named metric whose labels contain each of the
// given name="value" pairs.
func (m scrapeResult) sum(name string, match ...string) float64 {
	total := 0.0
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		ok := true
		for _, p := range match {
			if !strings.Contains(labels, p) {
				ok = false
				break
			}
		}
		if ok {
			total += v
		}
	}
	return total
}

// byLabel adds the named metric's series by the value of one label.
func (m scrapeResult) byLabel(name, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		n, labels, _ := strings.Cut(k, "{")
		if n != name {
			continue
		}
		val := ""
		if _, rest, ok := strings.Cut(labels, label+`="`); ok {
			val, _, _ = strings.Cut(rest, `"`)
		}
		out[val] += v
	}
	return out
}

// nodeStatus is what the drain controller's node API says of a node.
type nodeStatus struct {
	Node       string    `json:"node"`
	LastReport time.Time `json:"last_report"`
}

func (s *server) nodes(ctx context.Context) ([]nodeStatus, error) {
	body, err := s.get(ctx, "/api/gpuwatch/v1/nodes")
	if err != nil {
		return nil, err
	}
	var r struct {
		Nodes []nodeStatus `json:"nodes"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("nodes: %w", err)
	}
	return r.Nodes, nil
}
