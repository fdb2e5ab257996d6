// chaosproxy: a fault-injecting reverse proxy in front of a kube-apiserver,
// for Muster's chaos tests (docs/chaos.md). It terminates TLS with a
// certificate of its own, forwards every request with the client's
// Authorization header, streams answers unbuffered, and applies the fault
// rules set through a plain-HTTP control API:
//
//	PUT/GET /rules          {"rules": [RULE, ...]}
//	POST /reset-connections close every client connection
//	POST /http1             {"on": true}: offer only http/1.1 to new connections
//	GET /log?since=SEQ      one JSON line per request
//	GET /stats              firings by rule and by action
//
// Standard library only, so it builds offline in seconds.
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync/atomic"
	"time"
)

func main() {
	upstream := flag.String("upstream", "", "the API server, https://127.0.0.1:PORT")
	upstreamCA := flag.String("upstream-ca", "", "CA of the API server's serving certificate")
	inKubeconfig := flag.String("in-kubeconfig", "", "kubeconfig whose user the written one keeps")
	dir := flag.String("dir", "", "where ca.crt, kubeconfig and proxy.env go")
	listen := flag.String("listen", "127.0.0.1:0", "proxy address")
	control := flag.String("control", "127.0.0.1:0", "control API address (plain HTTP)")
	http1 := flag.Bool("http1", false, "offer only http/1.1 (no h2 in ALPN)")
	seed := flag.Uint64("seed", 0, "seed of the fraction draws")
	flag.Parse()
	if *upstream == "" || *upstreamCA == "" || *inKubeconfig == "" || *dir == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*upstream, *upstreamCA, *inKubeconfig, *dir, *listen, *control, *http1, *seed); err != nil {
		log.Fatal(err)
	}
}

func run(upstream, upstreamCA, inKubeconfig, dir, listen, control string, http1 bool, seed uint64) error {
	up, err := url.Parse(upstream)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(upstreamCA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s: no certificate", upstreamCA)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	cert, err := selfSigned(dir)
	if err != nil {
		return err
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 100,
		IdleConnTimeout:     90 * time.Second,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	}
	rules := newRules(seed)
	p := newProxy(up, tr, rules)
	var only1 atomic.Bool
	only1.Store(http1)
	base := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2", "http/1.1"}}
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		c := base.Clone()
		c.GetConfigForClient = nil
		if only1.Load() {
			c.NextProtos = []string{"http/1.1"}
		}
		return c, nil
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	cln, err := net.Listen("tcp", control)
	if err != nil {
		return err
	}
	proxyURL := "https://" + ln.Addr().String()
	controlURL := "http://" + cln.Addr().String()
	if err := writeKubeconfig(inKubeconfig, filepath.Join(dir, "kubeconfig"), proxyURL, filepath.Join(dir, "ca.crt")); err != nil {
		return err
	}
	env := fmt.Sprintf("PROXY_URL=%s\nCONTROL_URL=%s\nKUBECONFIG=%s\nPID=%d\n", proxyURL, controlURL,
		filepath.Join(dir, "kubeconfig"), os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "proxy.env.tmp"), []byte(env), 0o644); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(dir, "proxy.env.tmp"), filepath.Join(dir, "proxy.env")); err != nil {
		return err
	}
	log.Printf("chaosproxy %s -> %s, control %s", proxyURL, upstream, controlURL)
	srv := &http.Server{Handler: p, TLSConfig: base, ConnState: p.connState,
		ErrorLog: log.New(os.Stderr, "proxy: ", log.LstdFlags)}
	go func() {
		ctl := &http.Server{Handler: controlMux(p, &only1)}
		log.Fatal(ctl.Serve(cln))
	}()
	return srv.ServeTLS(ln, "", "")
}

var (
	serverLine = regexp.MustCompile(`(?m)^(\s*)server:.*$`)
	caLine     = regexp.MustCompile(`(?m)^(\s*)certificate-authority(-data)?:.*$`)
	skipLine   = regexp.MustCompile(`(?m)^\s*insecure-skip-tls-verify:.*\n`)
)

// writeKubeconfig copies in with its server and CA replaced (a kubeconfig
// with one cluster, as test/cluster/ctl writes them).
func writeKubeconfig(in, out, server, ca string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	s := serverLine.ReplaceAllString(string(b), "${1}server: "+server)
	s = caLine.ReplaceAllString(s, "${1}certificate-authority: "+ca)
	s = skipLine.ReplaceAllString(s, "")
	return os.WriteFile(out, []byte(s), 0o600)
}

func controlMux(p *Proxy, only1 *atomic.Bool) *http.ServeMux {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /rules", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"rules": p.rules.List()})
	})
	mux.HandleFunc("PUT /rules", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			Rules []Rule `json:"rules"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		if err := p.rules.Replace(in.Rules); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		reply(w, map[string]any{"rules": p.rules.List()})
	})
	mux.HandleFunc("POST /reset-connections", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"closed": p.resetConnections()})
	})
	mux.HandleFunc("POST /http1", func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			On    *bool `json:"on"`
			HTTP1 *bool `json:"http1"`
		}
		if err := json.NewDecoder(r.Body).Decode(&in); err == nil && in.On == nil {
			in.On = in.HTTP1
		}
		if in.On == nil {
			http.Error(w, `want {"on": true|false}`, 400)
			return
		}
		only1.Store(*in.On)
		reply(w, map[string]any{"http1": *in.On})
	})
	mux.HandleFunc("GET /log", func(w http.ResponseWriter, r *http.Request) {
		since, _ := strconv.ParseUint(r.URL.Query().Get("since"), 10, 64)
		w.Header().Set("Content-Type", "application/x-ndjson")
		enc := json.NewEncoder(w)
		for _, e := range p.log.since(since) {
			enc.Encode(e)
		}
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		st := p.rules.Stats()
		st["http1"] = only1.Load()
		reply(w, st)
	})
	return mux
}
