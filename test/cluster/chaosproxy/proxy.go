package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

const bodyCap = 64 << 10

var reasons = map[int]string{
	401: "Unauthorized", 403: "Forbidden", 404: "NotFound", 409: "Conflict",
	429: "TooManyRequests", 500: "InternalError", 501: "NotImplemented", 503: "ServiceUnavailable",
}

// Entry is one line of GET /log.
type Entry struct {
	Seq            uint64 `json:"seq"`
	TNs            int64  `json:"t_ns"`
	TEndNs         int64  `json:"t_end_ns"`
	Method         string `json:"method"`
	Path           string `json:"path"`
	Query          string `json:"query"`
	UserAgent      string `json:"user_agent"`
	Watch          bool   `json:"watch"`
	Proto          string `json:"proto"`
	Rule           string `json:"rule"`
	Forwarded      bool   `json:"forwarded"`
	Action         string `json:"action"`
	Status         int    `json:"status"`
	UpstreamStatus int    `json:"upstream_status"`
	Body           string `json:"body,omitempty"`
}

// Log keeps every request's entry, in the order their answer was decided.
type Log struct {
	mu      sync.Mutex
	entries []Entry
}

func (l *Log) add(e Entry) {
	l.mu.Lock()
	e.Seq = uint64(len(l.entries)) + 1
	l.entries = append(l.entries, e)
	l.mu.Unlock()
}

// since returns the entries with seq > since (seq is the 1-based index).
func (l *Log) since(seq uint64) []Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq >= uint64(len(l.entries)) {
		return nil
	}
	return append([]Entry(nil), l.entries[seq:]...)
}

// Proxy is the fault-injecting reverse proxy.
type Proxy struct {
	upstream  *url.URL
	transport *http.Transport
	rules     *Rules
	log       *Log
	rp        *httputil.ReverseProxy
	conns     sync.Map // net.Conn -> struct{}
}

type ctxKey struct{}

// call is one request's record, reachable from the proxy's hooks.
type call struct {
	entry     Entry
	logged    bool
	mu        sync.Mutex
	req       *request
	proxy     *Proxy
	upstream  int
	forwarded bool
}

func (c *call) finish(status int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.logged {
		return
	}
	c.logged = true
	c.entry.Status = status
	c.entry.UpstreamStatus = c.upstream
	c.entry.Forwarded = c.forwarded
	c.entry.TEndNs = time.Now().UnixNano()
	c.proxy.log.add(c.entry)
}

func newProxy(upstream *url.URL, tr *http.Transport, rules *Rules) *Proxy {
	p := &Proxy{upstream: upstream, transport: tr, rules: rules, log: &Log{}}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			c := r.In.Context().Value(ctxKey{}).(*call)
			c.mu.Lock()
			c.forwarded = true
			c.mu.Unlock()
			r.SetURL(upstream)
			r.Out.Host = upstream.Host
		},
		Transport:     tr,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			c := resp.Request.Context().Value(ctxKey{}).(*call)
			c.mu.Lock()
			c.upstream = resp.StatusCode
			c.mu.Unlock()
			if c.entry.Watch {
				sb := newStallBody(resp.Request.Context(), resp.Body, c.req, c.proxy.rules)
				if sb.first != "" {
					c.entry.Rule, c.entry.Action = sb.first, "stall"
				}
				resp.Body = sb
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if r.Context().Err() == nil {
				log.Printf("upstream %s %s: %v", r.Method, r.URL.Path, err)
			}
			writeStatus(w, 503, "chaosproxy: upstream: "+err.Error())
		},
	}
	return p
}

func isWatch(r *http.Request) bool {
	// As the API server reads it: strconv.ParseBool ("True" from the
	// Python client), or the old /watch/ paths.
	w, _ := strconv.ParseBool(r.URL.Query().Get("watch"))
	return w || strings.Contains(r.URL.Path, "/watch/")
}

// writeStatus answers code with a Kubernetes Status body.
func writeStatus(w http.ResponseWriter, code int, msg string) {
	reason := reasons[code]
	if reason == "" {
		reason = http.StatusText(code)
	}
	body, _ := json.Marshal(map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "code": code, "reason": reason, "message": msg,
	})
	w.Header().Set("Content-Type", "application/json")
	if code == 429 {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(code)
	w.Write(body)
}

// recorder notes the status sent to the client and logs the call then.
type recorder struct {
	http.ResponseWriter
	c *call
}

func (w *recorder) WriteHeader(code int) {
	if code >= 200 {
		w.c.finish(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recorder) Write(b []byte) (int, error) {
	w.c.finish(200)
	return w.ResponseWriter.Write(b)
}

func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// abort drops the client's connection without an answer.
func abort(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor == 1 {
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				if tc, ok := conn.(interface{ NetConn() net.Conn }); ok {
					if t, ok := tc.NetConn().(*net.TCPConn); ok {
						t.SetLinger(0)
					}
				}
				conn.Close()
				return
			}
		}
	}
	panic(http.ErrAbortHandler)
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c := &call{proxy: p, entry: Entry{
		TNs: time.Now().UnixNano(), Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
		UserAgent: r.UserAgent(), Watch: isWatch(r), Proto: r.Proto,
	}}
	var body []byte
	if r.Body != nil && r.Method != http.MethodGet && r.Method != http.MethodHead {
		var err error
		body, err = io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			c.finish(0)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		if len(body) > bodyCap {
			c.entry.Body = string(body[:bodyCap])
		} else {
			c.entry.Body = string(body)
		}
	}
	q := &request{method: r.Method, path: r.URL.Path, query: r.URL.RawQuery, ua: r.UserAgent(), watch: c.entry.Watch}
	c.req = q
	rl := p.rules.Pick(q)
	defer c.finish(0)
	if rl != nil {
		c.entry.Rule = rl.ID
		c.entry.Action = rl.Action.Kind()
		a := rl.Action
		switch {
		case a.Status != 0:
			writeStatus(&recorder{w, c}, a.Status, "chaosproxy")
			return
		case a.Reset:
			c.finish(0)
			abort(w, r)
			return
		case a.LoseAnswer:
			p.loseAnswer(w, r, c)
			return
		case a.DelayMs != 0:
			select {
			case <-time.After(time.Duration(a.DelayMs) * time.Millisecond):
			case <-r.Context().Done():
				return
			}
		}
	}
	r = r.WithContext(context.WithValue(r.Context(), ctxKey{}, c))
	p.rp.ServeHTTP(&recorder{w, c}, r)
}

// loseAnswer sends the request upstream, waits for the whole answer, then
// drops the client's connection: the write happened, the client does not
// know.
func (p *Proxy) loseAnswer(w http.ResponseWriter, r *http.Request, c *call) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = p.upstream.Scheme, p.upstream.Host
	out.Host = p.upstream.Host
	c.mu.Lock()
	c.forwarded = true
	c.mu.Unlock()
	resp, err := p.transport.RoundTrip(out)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		c.mu.Lock()
		c.upstream = resp.StatusCode
		c.mu.Unlock()
	}
	c.finish(0)
	abort(w, r)
}

// stallBody drains the upstream body of a watch into memory and gives the
// client nothing while a stall rule matches the request (or until the
// request ends).
type stallBody struct {
	src  io.ReadCloser
	ctx  context.Context
	mu   sync.Mutex
	cond *sync.Cond
	buf  []byte
	err  error
	held bool
	// first is the stall rule holding the stream when it started, if any.
	first string
}

func newStallBody(ctx context.Context, src io.ReadCloser, q *request, rules *Rules) *stallBody {
	s := &stallBody{src: src, ctx: ctx}
	s.cond = sync.NewCond(&s.mu)
	id, changed := rules.Holds(q)
	if id != "" {
		rules.CountHold(id)
		s.held = true
		s.first = id
	}
	go s.fill()
	go s.gate(q, rules, changed)
	return s
}

// gate follows the rule table: held while a stall rule matches.
func (s *stallBody) gate(q *request, rules *Rules, changed <-chan struct{}) {
	for {
		select {
		case <-changed:
		case <-s.ctx.Done():
			s.cond.Broadcast()
			return
		}
		var id string
		id, changed = rules.Holds(q)
		s.mu.Lock()
		if id != "" && !s.held {
			rules.CountHold(id)
		}
		s.held = id != ""
		s.mu.Unlock()
		s.cond.Broadcast()
	}
}

func (s *stallBody) fill() {
	chunk := make([]byte, 32<<10)
	for {
		n, err := s.src.Read(chunk)
		s.mu.Lock()
		s.buf = append(s.buf, chunk[:n]...)
		if err != nil {
			s.err = err
		}
		s.mu.Unlock()
		s.cond.Broadcast()
		if err != nil {
			return
		}
	}
}

func (s *stallBody) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if err := s.ctx.Err(); err != nil {
			return 0, err
		}
		if !s.held && len(s.buf) > 0 {
			n := copy(p, s.buf)
			s.buf = s.buf[n:]
			return n, nil
		}
		if !s.held && s.err != nil {
			return 0, s.err
		}
		s.cond.Wait()
	}
}

func (s *stallBody) Close() error { return s.src.Close() }

func (p *Proxy) resetConnections() int {
	n := 0
	p.conns.Range(func(k, _ any) bool {
		k.(net.Conn).Close()
		p.conns.Delete(k)
		n++
		return true
	})
	return n
}

func (p *Proxy) connState(c net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		p.conns.Store(c, struct{}{})
	case http.StateClosed, http.StateHijacked:
		p.conns.Delete(c)
	}
}
