package datasource

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// PluginID is the plugin's id in plugin.json, the type of its data sources.
const PluginID = "gpuwatch-datasource"

// The keys of the data source's secureJsonData.
const (
	SecureToken     = "token"     // the bearer token's secret (a read-role token)
	SecureTLSCACert = "tlsCACert" // PEM CA certificate(s) the server's certificate is checked against
)

// DefaultTimeout bounds one call to the server: a report over a long window
// takes minutes (the server's own write timeout is 5 minutes).
const DefaultTimeout = 5 * time.Minute

// Settings are a data source's configuration.
type Settings struct {
	// URL is the gpuwatch server's base URL (the data source's URL field, or
	// jsonData.url).
	URL *url.URL
	// Token is the bearer secret; empty when the server has no token file.
	// Never logged: Settings has a String method that leaves it out.
	Token string
	// CAPEM, when set, is the only trust for the server's TLS certificate.
	CAPEM string
	// InsecureSkipVerify turns certificate checks off (jsonData.tlsSkipVerify).
	InsecureSkipVerify bool
	Timeout            time.Duration
}

// jsonData is what the data source keeps in jsonData.
type jsonData struct {
	URL            string  `json:"url"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
	TLSSkipVerify  bool    `json:"tlsSkipVerify"`
}

// ParseSettings reads a data source's instance settings.
func ParseSettings(s backend.DataSourceInstanceSettings) (Settings, error) {
	var jd jsonData
	if len(s.JSONData) > 0 && string(s.JSONData) != "null" {
		if err := json.Unmarshal(s.JSONData, &jd); err != nil {
			return Settings{}, fmt.Errorf("cannot read the data source's jsonData: %w", err)
		}
	}
	raw := strings.TrimSpace(s.URL)
	if raw == "" {
		raw = strings.TrimSpace(jd.URL)
	}
	if raw == "" {
		return Settings{}, fmt.Errorf("no server URL: set the gpuwatch server's address (such as http://gpuwatch:9402) in the data source's settings")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Settings{}, fmt.Errorf("server URL %q: want http://host:port or https://host:port", raw)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	out := Settings{URL: u, Token: strings.TrimSpace(s.DecryptedSecureJSONData[SecureToken]),
		CAPEM: s.DecryptedSecureJSONData[SecureTLSCACert], InsecureSkipVerify: jd.TLSSkipVerify, Timeout: DefaultTimeout}
	if jd.TimeoutSeconds < 0 {
		return Settings{}, fmt.Errorf("timeoutSeconds %g: want a positive number of seconds", jd.TimeoutSeconds)
	}
	if jd.TimeoutSeconds > 0 {
		out.Timeout = time.Duration(jd.TimeoutSeconds * float64(time.Second))
	}
	return out, nil
}

// String describes the settings without the token's secret.
func (s Settings) String() string {
	tok := "no token"
	if s.Token != "" {
		tok = "a token"
	}
	return fmt.Sprintf("%s with %s", s.URL, tok)
}

// httpClient is the client the settings describe.
func (s Settings) httpClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.CAPEM != "" || s.InsecureSkipVerify {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.InsecureSkipVerify} //nolint:gosec // the user's explicit choice
		if s.CAPEM != "" {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM([]byte(s.CAPEM)) {
				return nil, fmt.Errorf("the TLS CA certificate in the data source's settings holds no PEM certificate")
			}
			cfg.RootCAs = pool
		}
		tr.TLSClientConfig = cfg
	}
	return &http.Client{Transport: tr, Timeout: s.Timeout}, nil
}
